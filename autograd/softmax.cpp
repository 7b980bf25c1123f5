// softmax and log_softmax along one axis. Each backward uses the output it
// saved, never exp of the input, so it stays finite wherever the forward was.
#include <cmath>

#include "autograd/ops.h"
#include "tensor/elementwise.h"
#include "tensor/map.h"
#include "tensor/reduce.h"

namespace gradflow {

// The gradient at the softmax's input x from g, the gradient at its output
// y, along the axis: dx = y * (g - sum(g * y)), the Jacobian
// diag(y) - y y^T applied to g without forming it (dy_i/dx_j = y_i (1[i=j] - y_j)).
//
// This is where a saturated softmax stops the gradient. For a one-hot y
// every entry of diag(y) - y y^T is 0 (y_i (1[i=j] - y_j) = 0 whether y_i is
// 0 or 1), so dx ~ 0 whatever g is: attention whose logits grow with d_k
// goes one-hot and its scores stop learning
// (docs/lessons/07_saturated_gradient.md).
Tensor softmax_backward(const Tensor& y, const Tensor& g, int64_t axis);
#ifndef GRADFLOW_EXERCISES  // exercise 5: docs/exercises/05_softmax_backward.md
Tensor softmax_backward(const Tensor& y, const Tensor& g, int64_t axis) {
  Tensor dot = sum(mul(g, y), {axis}, true);
  return map_ternary(y, g, dot, "softmax_backward",
                     [](auto p, auto q, auto d) { return p * (q - d); });
}
#endif

Variable softmax(const Variable& x, int64_t axis) {
  Tensor y = softmax(x.data(), axis);
  return make_result(y, "softmax", {x}, [y, axis](const Tensor& g) {
    return std::vector<Tensor>{softmax_backward(y, g, axis)};
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
