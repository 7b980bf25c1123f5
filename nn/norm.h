// LayerNorm and RMSNorm over the last axis, as functions and as layers.
#pragma once

#include "autograd/variable.h"
#include "nn/module.h"
#include "tensor/random.h"

namespace gradflow::nn {

struct LayerNormOptions {
  double eps = 1e-5;  // as torch.nn.LayerNorm
};
struct RMSNormOptions {
  double eps = 1e-6;
};

// LayerNorm computes (x - mean) / sqrt(var + eps) * weight + bias over the
// last axis, with the biased variance (as PyTorch): the fused autograd op
// gradflow::layer_norm (autograd/ops.h, autograd/norm.cpp).
// x / sqrt(mean(x^2) + eps) * weight over the last axis.
Variable rms_norm(const Variable& x, const Variable& weight, double eps);

class LayerNorm : public Module {
 public:
  explicit LayerNorm(int64_t dim, LayerNormOptions options = {}, Init init = {});
  Variable forward(const Variable& x) const;
  std::string describe() const override;
  Variable weight, bias;

 private:
  int64_t dim_;
  double eps_;
};

class RMSNorm : public Module {
 public:
  explicit RMSNorm(int64_t dim, RMSNormOptions options = {}, Init init = {});
  Variable forward(const Variable& x) const;
  std::string describe() const override;
  Variable weight;

 private:
  int64_t dim_;
  double eps_;
};

}  // namespace gradflow::nn
