// Scaled dot-product attention with the scale as the user's choice, and
// multi-head attention built from separate Q, K, V and O projections, with
// AttentionVariants (attention_variant.h) as its extension point. Masks, and
// what their values mean, are in masks.h.
//
// Shapes: q (B, H, T, D), k and v (B, H, S, D), weights (B, H, T, S), with T
// query positions, S key positions, H heads of size D = d_k = d_model / H.
// The scale modes are a table of their own (scale_modes.h).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "autograd/variable.h"
#include "nn/attention_variant.h"
#include "nn/linear.h"
#include "nn/masks.h"
#include "nn/module.h"
#include "nn/scale_modes.h"

namespace gradflow::nn {

// What the study looks at. The Variables are the live graph nodes: a
// gradient hook registered on them before backward sees the gradient at the
// scores. Recording them changes the result only by rounding: with a probe
// the weights come from the composed mul, masked_fill
// and softmax, without one from the fused attention kernel (fused_attention,
// or with reference_ops() on its composed reference, autograd/reference.h).
//
// The logits are scale * q k^T before any score transform (ALiBi's bias,
// attention_variant.h), the mask and the softmax: what the scale mode made of
// q and k, so the study's max logit and logit std measure the scale alone
// whatever the positional scheme. The weights are the softmax's output,
// after every transform.
struct AttentionProbe {
  Variable logits;   // scale * q k^T before score transforms and mask, (B, H, T, S)
  Variable weights;  // softmax output, (B, H, T, S)
  Tensor mask;       // the mask that was applied (1 = hidden), or undefined
};

// logits (B, H, T, S) -> the same shape, applied before the mask.
using ScoreTransform = std::function<Variable(const Variable& logits)>;

// softmax(transform(scale * q k^T), masked) v. `mask` (masks.h: nonzero =
// hidden) broadcasts to (B, H, T, S); it may be undefined. `scale` is the
// fixed factor on q k^T (a learned scale is a variant on q, scale_modes.h).
// `transform`, if given, changes the logits before the mask (the probe keeps
// its input). A query whose keys are all masked gets zero weights, a zero
// output and zero gradients.
Variable scaled_dot_product_attention(const Variable& q, const Variable& k, const Variable& v,
                                      const Tensor& mask, double scale,
                                      AttentionProbe* probe = nullptr,
                                      const ScoreTransform& transform = nullptr);

// Keys and values of the positions seen so far, for generation: each new
// token then costs one position instead of re-running the whole prefix.
// For cross-attention the memory does not grow: `fixed` keys and values are
// computed on the first step and reused after. The keys are stored as the
// variants left them (a cached key is not transformed again).
struct KVCache {
  Tensor k{}, v{};      // (B, H, S_so_far, D), undefined before the first step
  bool fixed = false;   // cross-attention: computed once from the memory
  int64_t queries = 0;  // queries seen so far: the position of the next one
  int64_t length() const { return k.defined() ? k.shape()[2] : 0; }
};

// What a MultiHeadAttention is, besides its width d_model. Every attention
// layer of a block reads the block's one AttentionConfig, so a field set
// there (head_dim, say) reaches self- and cross-attention alike.
struct AttentionConfig {
  int64_t heads = 4;
  // d_k of each head. 0: d_model / heads (which must divide). Another value
  // decouples d_k from the model width: q, k and v map d_model to
  // heads * head_dim and o maps it back (the scaling study varies d_k so).
  int64_t head_dim = 0;
  ScaleMode scale = {};  // 1/sqrt(d_k); a mode with a variant adds it (scale_modes.h)
  // A positional scheme whose variant this layer adds (positional_schemes.h:
  // "rope", "alibi"), or empty for none; a scheme without a variant adds
  // nothing here.
  std::string positional{};
  // The sequence length L the layer is built for: qk_l2norm's g starts at
  // log2(L^2 - L), ssmax's s at 1/(sqrt(d_k) log L). The models set it to
  // their max_len.
  int64_t max_len = 0;
};

class MultiHeadAttention : public Module {
 public:
  MultiHeadAttention(int64_t d_model, const AttentionConfig& config = {}, Init init = {});

  // x (B, T, C) attends to memory (B, S, C): pass x itself for
  // self-attention, the encoder output for cross-attention. With a cache,
  // x holds only the new positions and their keys and values are appended.
  Variable forward(const Variable& x, const Variable& memory, const Tensor& mask = Tensor(),
                   KVCache* cache = nullptr);
  std::string describe() const override;

  // Registers `variant` as the child `name` (its parameters become
  // "name.<param>") and calls its hooks from then on, after those of the
  // variants added before it. Add variants before building the optimizer.
  // Returns the variant.
  template <class V>
  std::shared_ptr<V> add_variant(std::string name, std::shared_ptr<V> variant) {
    variants_.push_back(register_module(std::move(name), variant));
    return variant;
  }
  // The first variant of type V, or null.
  template <class V>
  V* variant() const {
    for (const auto& v : variants_)
      if (auto* found = dynamic_cast<V*>(v.get())) return found;
    return nullptr;
  }

  int64_t heads() const { return config_.heads; }
  int64_t d_k() const { return d_k_; }
  const ScaleMode& scale_mode() const { return config_.scale; }
  // The factor on q.k now: scale_mode().value(d_k()) times each variant's
  // logit_factor() (a learned scale as trained so far; log_n and ssmax at
  // n = max_len). At the start it is scale_mode().start_factor(...) of this
  // layer's context, within float rounding.
  double logit_factor() const;
  const AttentionConfig& config() const { return config_; }

  // Set record_probe to keep the last forward's logits and weights.
  bool record_probe = false;
  AttentionProbe probe;

  std::shared_ptr<Linear> q_proj, k_proj, v_proj, o_proj;

 private:
  Variable split_heads(const Variable& x) const;  // (B, T, C) -> (B, H, T, D)
  AttentionConfig config_;
  int64_t d_model_, d_k_, inner_;  // inner_ = heads * d_k_
  std::vector<std::shared_ptr<AttentionVariant>> variants_;
};

}  // namespace gradflow::nn
