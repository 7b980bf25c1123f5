#include "nn/norm.h"

#include "autograd/ops.h"
#include "nn/layer_checks.h"
#include "tensor/creation.h"

namespace gradflow::nn {

Variable rms_norm(const Variable& x, const Variable& weight, double eps) {
  check_last_axis("rms_norm", x, weight.numel());
  return x * pow(mean(x * x, {-1}, true) + eps, -0.5) * weight;
}

LayerNorm::LayerNorm(int64_t dim, LayerNormOptions options, Init init)
    : dim_(dim), eps_(options.eps) {
  check_positive("LayerNorm", dim, "dim");
  weight = register_parameter("weight", ones({dim}, init.dtype));
  bias = register_parameter("bias", zeros({dim}, init.dtype));
}

Variable LayerNorm::forward(const Variable& x) const {
  const GraphScope scope = graph_scope();
  return layer_norm(x, weight, bias, eps_);
}

std::string LayerNorm::describe() const {
  return "LayerNorm(" + std::to_string(dim_) + ", eps=" + std::to_string(eps_) + ")";
}

RMSNorm::RMSNorm(int64_t dim, RMSNormOptions options, Init init) : dim_(dim), eps_(options.eps) {
  check_positive("RMSNorm", dim, "dim");
  weight = register_parameter("weight", ones({dim}, init.dtype));
}

Variable RMSNorm::forward(const Variable& x) const {
  const GraphScope scope = graph_scope();
  return rms_norm(x, weight, eps_);
}

std::string RMSNorm::describe() const { return "RMSNorm(" + std::to_string(dim_) + ")"; }

}  // namespace gradflow::nn
