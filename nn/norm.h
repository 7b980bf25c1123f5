// LayerNorm and RMSNorm over the last axis, as functions and as layers, and
// Norm, what a block holds either as. Which one a model's blocks use is a
// row of the table in norm_kinds.cpp (norm_kinds.h; ModelConfig::norm_type).
#pragma once

#include "autograd/variable.h"
#include "nn/module.h"
#include "tensor/random.h"

namespace gradflow::nn {

struct LayerNormOptions {
  double eps = 1e-5;  // as torch.nn.LayerNorm
};
struct RMSNormOptions {
  double eps = 1e-6;  // as LLaMA; torch.nn.RMSNorm's default is the dtype's epsilon
};

// A normalisation over the last axis that keeps the shape: (..., C) -> (..., C).
class Norm : public Module {
 public:
  virtual Variable forward(const Variable& x) const = 0;
};

// LayerNorm computes (x - mean) / sqrt(var + eps) * weight + bias over the
// last axis, with the biased variance (as PyTorch): the fused autograd op
// gradflow::layer_norm (autograd/ops.h, autograd/norm.cpp).
//
// RMSNorm (Zhang and Sennrich 2019) drops the centring and the bias:
//   x / sqrt(mean(x^2) + eps) * weight
// over the last axis, one gain per channel. Half of LayerNorm's parameters
// and no mean to subtract; LLaMA's norm. It is composed from the autograd ops
// (mul, mean, pow), not fused: no benchmark has shown a fused one to pay, and
// the composed form is the reference a fused one would be tested against.
// Its backward keeps x times the row's 1/rms, one more (..., C) tensor than
// the fused layer_norm keeps (the memory estimate counts it: NormKind::kept).
Variable rms_norm(const Variable& x, const Variable& weight, double eps);

class LayerNorm : public Norm {
 public:
  explicit LayerNorm(int64_t dim, LayerNormOptions options = {}, Init init = {});
  Variable forward(const Variable& x) const override;
  std::string describe() const override;
  Variable weight, bias;

 private:
  int64_t dim_;
  double eps_;
};

// weight (C), started at 1; no bias.
class RMSNorm : public Norm {
 public:
  explicit RMSNorm(int64_t dim, RMSNormOptions options = {}, Init init = {});
  Variable forward(const Variable& x) const override;
  std::string describe() const override;
  Variable weight;

 private:
  int64_t dim_;
  double eps_;
};

}  // namespace gradflow::nn
