// DyT, Dynamic Tanh (Zhu, Chen, He, LeCun and Liu 2025, "Transformers
// without Normalization"): the norm choice `dyt` (norm_kinds.cpp),
//   y = weight * tanh(alpha x) + bias
// elementwise over (..., C), alpha one learned scalar started at 0.5,
// weight (C) at 1 and bias (C) at 0. No statistic of the row is taken: the
// paper's observation is that a trained LayerNorm maps its inputs along an
// S-shaped, tanh-like curve, so a learned squash can stand in for it. A
// large entry is bounded (|y - bias| < |weight|) where a norm would instead
// shrink the whole row. Composed from the autograd ops (mul, tanh, add);
// the backward keeps tanh(alpha x), one (..., C) tensor beyond x (NormKind
// ::kept = 1).
#pragma once

#include <string>

#include "nn/norm.h"

namespace gradflow::nn {

struct DyTOptions {
  double alpha = 0.5;  // the paper's default for non-LLM models
};

// x (..., C), alpha (1), weight and bias (C) -> (..., C).
Variable dyt(const Variable& x, const Variable& alpha, const Variable& weight,
             const Variable& bias);

class DyT : public Norm {
 public:
  explicit DyT(int64_t dim, DyTOptions options = {}, Init init = {});
  Variable forward(const Variable& x) const override;
  std::string describe() const override { return "DyT(" + std::to_string(dim_) + ")"; }
  Variable alpha, weight, bias;

 private:
  int64_t dim_;
};

}  // namespace gradflow::nn
