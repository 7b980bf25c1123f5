// Three scale modes that learn their scale, as attention variants
// (attention_variant.h) on q, so attention keeps its fused kernel; the
// layer's own fixed scale is then 1.
//
//   qk_l2norm (Henry et al. 2020, "Query-Key Normalization for
//     Transformers"): q and k divided by their L2 norms (over D, per head),
//     q then multiplied by a learned scalar g, started at log2(L^2 - L) for
//     the sequence length L the layer is built for. Logits are g cos(q, k):
//     within +-g whatever d_k, and g chooses how sharp attention may get.
//   learned: q multiplied by a learned scalar started at 1/sqrt(d_k).
//   learned_log: q multiplied by exp(t), a learned scalar t started at
//     log(1/sqrt(d_k)). An Adam step moves t by about the learning rate, so
//     the temperature exp(t) changes by a factor per step, not by an amount
//     (the `learned` mode's scale moves by about lr, a large relative step
//     when the scale is 1/16).
// Shapes: q, k (B, H, T, D), as in attention_variant.h.
#pragma once

#include <string>

#include "nn/attention_variant.h"

namespace gradflow::nn {

// g's starting value for a sequence of L positions: log2(L^2 - L).
// REQUIRES: L >= 2 (else Error).
double qk_l2norm_start(int64_t max_len);

// x / ||x|| over the last axis: x (..., D) -> (..., D), each row of norm 1
// (a zero row stays 0: the norm has 1e-12 added under its square root).
Variable l2_normalize(const Variable& x);

class QkL2Norm : public AttentionVariant {
 public:
  explicit QkL2Norm(int64_t max_len, Init init = {});
  Variable transform_query(const Variable& q, const AttentionPositions& at) const override;
  Variable transform_key(const Variable& k, const AttentionPositions& at) const override;
  double logit_factor() const override;  // g: the logits are g cos(q, k)
  std::string describe() const override { return "QkL2Norm"; }
  Variable g;  // shape (1)
};

class LearnedScale : public AttentionVariant {
 public:
  explicit LearnedScale(int64_t head_dim, Init init = {});
  Variable transform_query(const Variable& q, const AttentionPositions& at) const override;
  double logit_factor() const override;  // the scale
  std::string describe() const override { return "LearnedScale"; }
  Variable scale;  // shape (1)
};

class LearnedLogScale : public AttentionVariant {
 public:
  explicit LearnedLogScale(int64_t head_dim, Init init = {});
  Variable transform_query(const Variable& q, const AttentionPositions& at) const override;
  double logit_factor() const override;  // exp(t)
  std::string describe() const override { return "LearnedLogScale"; }
  Variable log_scale;  // t, shape (1): the scale is exp(t)
};

}  // namespace gradflow::nn
