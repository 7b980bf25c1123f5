// Two scale modes that grow the scale with the number of keys n a query
// sees, as attention variants on q (attention_variant.h), so attention
// keeps its fused kernel; the layer's own fixed scale is then 1.
//
// Why: with a fixed scale, the largest softmax weight among n keys falls
// toward 0 as n grows (the sum in the denominator grows like n while the top
// logit does not), so a layer trained on short sequences attends more
// diffusely on long ones. Multiplying the logits by log(n) keeps the top
// weight's share roughly constant: e^(c log n) = n^c grows with the
// denominator.
//
//   log_n: q times log(n) / sqrt(d_k). At n = e the factor is 1/sqrt(d_k);
//     Qwen's and YaRN's "logn" attention factors are this with the ratio to
//     the training length (Chiang and Cholak 2022 motivate it).
//   ssmax, Scalable-Softmax (Nakanishi 2025): q times s log(n), s learned,
//     one per head. s starts at 1/(sqrt(d_k) log L), L the length the layer
//     is built for, so that at n = L the logits are exactly 1/sqrt(d_k)'s:
//     the model starts where the textbook model starts on full-length
//     sequences and learns how strongly the scale should grow.
//
// n is counted from the mask as applied: a causal query at position i sees
// i + 1 keys, a padded key is not counted, a query in a KV-cached step sees
// the cache and itself. A query that sees no key gets n = 1 (its output is 0
// anyway). Shapes: q (B, H, T, D); n broadcasts to (B, H, T, 1).
#pragma once

#include <string>

#include "nn/attention_variant.h"

namespace gradflow::nn {

// The number of keys each query row sees: (..., T or 1, 1) in `dtype`,
// broadcasting to (B, H, T, 1); from at.mask (nonzero = hidden) and
// at.key_length. Each count is at least 1.
Tensor visible_keys(const AttentionPositions& at, DType dtype);

// log(max(2, L)): log n at the length L a layer is built for, where the
// logit factors below are reported. L may be 0 (unknown) for log_n; the
// floor of 2 keeps the factor positive then.
double log_length(int64_t max_len);

class LogNScale : public AttentionVariant {
 public:
  // max_len: the length L the layer is built for, used only by logit_factor.
  explicit LogNScale(int64_t head_dim, int64_t max_len = 0);
  Variable transform_query(const Variable& q, const AttentionPositions& at) const override;
  double logit_factor() const override;  // log(max(2, L)) / sqrt(d_k)
  std::string describe() const override { return "LogNScale"; }

 private:
  double inv_sqrt_dk_;
  int64_t head_dim_, max_len_;
};

class ScalableSoftmax : public AttentionVariant {
 public:
  // REQUIRES: max_len >= 2 (log L > 0), heads and head_dim positive.
  ScalableSoftmax(int64_t heads, int64_t head_dim, int64_t max_len, Init init = {});
  Variable transform_query(const Variable& q, const AttentionPositions& at) const override;
  // The mean of s over the heads times log L: one number for the layer.
  double logit_factor() const override;
  std::string describe() const override { return "ScalableSoftmax"; }
  Variable s;  // (H): head h's logits are s[h] log(n) q.k

 private:
  int64_t max_len_;
};

// s's starting value: 1/(sqrt(d_k) log L).
double ssmax_start(int64_t head_dim, int64_t max_len);

}  // namespace gradflow::nn
