// softmax and log_softmax along one axis. Each backward uses the output it
// saved, never exp of the input, so it stays finite wherever the forward was.
#include <cmath>

#include "autograd/ops.h"
#include "tensor/elementwise.h"
#include "tensor/map.h"
#include "tensor/reduce.h"

namespace gradflow {

Variable softmax(const Variable& x, int64_t axis) {
  Tensor y = softmax(x.data(), axis);
  return make_result(y, "softmax", {x}, [y, axis](const Tensor& g) {
    // dx = y * (g - sum(g * y)) along the axis: the Jacobian diag(y) - y y^T
    // applied to g without forming it.
    Tensor dot = sum(mul(g, y), {axis}, true);
    return std::vector<Tensor>{map_ternary(y, g, dot, "softmax_backward",
                                           [](auto p, auto q, auto d) { return p * (q - d); })};
  });
}

Variable log_softmax(const Variable& x, int64_t axis) {
  Tensor y = log_softmax(x.data(), axis);
  return make_result(y, "log_softmax", {x}, [y, axis](const Tensor& g) {
    // dx = g - softmax(x) * sum(g); softmax(x) = exp(y) is at most 1.
    Tensor total = sum(g, {axis}, true);
    return std::vector<Tensor>{
        map_ternary(g, y, total, "log_softmax_backward",
                    [](auto q, auto p, auto t) { return q - std::exp(p) * t; })};
  });
}

}  // namespace gradflow
