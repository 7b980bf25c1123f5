// qk_norm (Dehghani et al. 2023): LayerNorm over D on q and on k before their
// product, one weight and bias of size D shared by all heads, for each of q
// and k. The scale mode qk_norm (attention.h) adds it to every attention
// layer, as an AttentionVariant: it changes only q and k, so attention keeps
// its fused kernel. Its parameters are "...self_attn.qk_norm.q_norm.weight".
#pragma once

#include <memory>
#include <string>

#include "nn/attention_variant.h"
#include "nn/norm.h"

namespace gradflow::nn {

class QkNorm : public AttentionVariant {
 public:
  explicit QkNorm(int64_t head_dim, LayerNormOptions options = {}, Init init = {});
  Variable transform_query(const Variable& q, const AttentionPositions& at) const override;
  Variable transform_key(const Variable& k, const AttentionPositions& at) const override;
  std::string describe() const override { return "QkNorm"; }
  std::shared_ptr<LayerNorm> q_norm, k_norm;
};

}  // namespace gradflow::nn
