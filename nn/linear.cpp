#include "nn/linear.h"

#include <cmath>

#include "autograd/ops.h"
#include "nn/layer_checks.h"
#include "tensor/creation.h"

namespace gradflow::nn {

Linear::Linear(int64_t in, int64_t out, LinearOptions options, Init init) : in_(in), out_(out) {
  check_positive("Linear", in, "in_features");
  check_positive("Linear", out, "out_features");
  // U(-1/sqrt(in), 1/sqrt(in)), PyTorch's default: an output sums `in`
  // products, so weights of variance about 1/in keep the output's variance
  // near the input's at any width. The same variance argument gives
  // attention its 1/sqrt(d_k) (nn/scale_modes.h, docs/lessons/).
  double bound = 1.0 / std::sqrt(static_cast<double>(in));
  Generator& gen = init.generator();
  weight = register_parameter("weight", rand({out, in}, gen, init.dtype, -bound, bound));
  if (options.bias) bias = register_parameter("bias", rand({out}, gen, init.dtype, -bound, bound));
}

Variable Linear::forward(const Variable& x) const {
  const GraphScope scope = graph_scope();
  check_last_axis("Linear", x, in_);
  // A single vector (in) is treated as one row (1, in), as in PyTorch.
  if (x.ndim() == 1) return squeeze(forward(unsqueeze(x, 0)), 0);
  return gradflow::linear(x, weight, bias);
}

std::string Linear::describe() const {
  return "Linear(" + std::to_string(in_) + " -> " + std::to_string(out_) +
         (bias.defined() ? ")" : ", no bias)");
}

}  // namespace gradflow::nn
