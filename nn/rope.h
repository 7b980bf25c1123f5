// Rotary position embeddings (RoPE; Su et al. 2021, "RoFormer"): q and k of
// every head are turned pair by pair through angles proportional to their
// position, so that q.k depends on the two positions only through their
// difference. No parameters and no position table.
//
// For a row x of D values (D even) at position p, pair i = (x[2i], x[2i+1]),
// i = 0 .. D/2 - 1, turns by the angle p * theta_i, theta_i = base^(-2i/D):
//   y[2i]   = x[2i] cos(p theta_i) - x[2i+1] sin(p theta_i)
//   y[2i+1] = x[2i] sin(p theta_i) + x[2i+1] cos(p theta_i)
// base = 10000 as in the paper. The angles are computed in float64 and their
// cos and sin rounded to x's dtype. (Adjacent pairs, as the paper; some
// libraries pair x[i] with x[i + D/2] instead, a permutation of D.)
#pragma once

#include <cstdint>
#include <string>

#include "nn/attention_variant.h"

namespace gradflow::nn {

// x (..., T, D) whose row t sits at position start + t -> the same shape.
// Composed of views, mul, sub, add and cat: its gradient, the inverse
// rotation, comes from theirs.
Variable rope(const Variable& x, int64_t start, double base = 10000);

struct RopeOptions {
  double base = 10000;
};

// The variant: rope on the queries at their positions and on the keys at
// theirs. Only q and k change, so attention keeps its fused kernel.
class Rope : public AttentionVariant {
 public:
  explicit Rope(int64_t head_dim, RopeOptions options = {});
  Variable transform_query(const Variable& q, const AttentionPositions& at) const override {
    return rope(q, at.query_start, base_);
  }
  Variable transform_key(const Variable& k, const AttentionPositions& at) const override {
    return rope(k, at.key_start, base_);
  }
  std::string describe() const override;

 private:
  int64_t head_dim_;
  double base_;
};

}  // namespace gradflow::nn
