#include "nn/dyt.h"

#include "autograd/ops.h"
#include "nn/layer_checks.h"
#include "tensor/creation.h"

namespace gradflow::nn {

Variable dyt(const Variable& x, const Variable& alpha, const Variable& weight,
             const Variable& bias) {
  check_last_axis("dyt", x, weight.numel());
  if (alpha.numel() != 1 || bias.numel() != weight.numel())
    fail("dyt: expected alpha (1) and bias (", weight.numel(), "), got ", shape_str(alpha.shape()),
         " and ", shape_str(bias.shape()));
  return tanh(x * alpha) * weight + bias;
}

DyT::DyT(int64_t dim, DyTOptions options, Init init) : dim_(dim) {
  check_positive("DyT", dim, "dim");
  alpha = register_parameter("alpha", full({1}, options.alpha, init.dtype));
  weight = register_parameter("weight", ones({dim}, init.dtype));
  bias = register_parameter("bias", zeros({dim}, init.dtype));
}

Variable DyT::forward(const Variable& x) const {
  const GraphScope scope = graph_scope();
  return dyt(x, alpha, weight, bias);
}

}  // namespace gradflow::nn
