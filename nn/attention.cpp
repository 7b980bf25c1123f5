#include "nn/attention.h"

#include "autograd/ops.h"

#include <algorithm>

#include "nn/positional_schemes.h"
#include "tensor/index.h"

namespace gradflow::nn {

Variable scaled_dot_product_attention(const Variable& q, const Variable& k, const Variable& v,
                                      const Tensor& mask, double scale, AttentionProbe* probe,
                                      const ScoreTransform& transform) {
  if (q.ndim() < 2 || k.ndim() != q.ndim() || v.ndim() != q.ndim() ||
      q.shape().back() != k.shape().back() || k.shape()[k.ndim() - 2] != v.shape()[v.ndim() - 2])
    fail(
        "scaled_dot_product_attention: expected q (..., T, D), k (..., S, D), v (..., S, Dv), got ",
        shape_str(q.shape()), ", ", shape_str(k.shape()), ", ", shape_str(v.shape()));
  if (!probe && !transform) {
    // One kernel for scale, mask and softmax, and no (T, S) tensor kept for
    // the backward, which recomputes the weights. The study's probe needs the
    // logits as a live graph node and a score transform the logits
    // themselves: those take the composed path below.
    return fused_attention(q, k, v, scale, mask);
  }
  // The composed formula, the reference's too, keeping the logits and
  // weights for the probe. composed_attention keeps the logits after the
  // transform; the probe wants them before (attention.h), so the transform's
  // input is caught on its way in.
  ComposedAttention kept;
  Variable before_transform;
  ScoreTransform catching = nullptr;
  if (probe && transform)
    catching = [&](const Variable& logits) {
      before_transform = logits;
      return transform(logits);
    };
  Variable out = composed_attention(q, k, v, scale, mask, catching ? catching : transform,
                                    probe ? &kept : nullptr);
  if (probe) *probe = {transform ? before_transform : kept.logits, kept.weights, mask};
  return out;
}

MultiHeadAttention::MultiHeadAttention(int64_t d_model, const AttentionConfig& config, Init init)
    : config_(config), d_model_(d_model) {
  const int64_t heads = config.heads, head_dim = config.head_dim;
  if (head_dim < 0) fail("MultiHeadAttention: head_dim must be >= 0, got ", head_dim);
  if (d_model <= 0 || heads <= 0 || (head_dim == 0 && d_model % heads != 0))
    fail("MultiHeadAttention: d_model (", d_model, ") must be a positive multiple of heads (",
         heads, ")");
  d_k_ = head_dim ? head_dim : d_model / heads;
  inner_ = heads * d_k_;
  q_proj =
      register_module("q_proj", std::make_shared<Linear>(d_model, inner_, LinearOptions{}, init));
  k_proj =
      register_module("k_proj", std::make_shared<Linear>(d_model, inner_, LinearOptions{}, init));
  v_proj =
      register_module("v_proj", std::make_shared<Linear>(d_model, inner_, LinearOptions{}, init));
  o_proj =
      register_module("o_proj", std::make_shared<Linear>(inner_, d_model, LinearOptions{}, init));
  // The built-in variants: the scale mode's, then the positional scheme's,
  // each named after its mode or scheme.
  if (auto variant = config.scale.make_variant(
          {.d_k = d_k_, .heads = heads, .max_len = config.max_len, .init = init}))
    add_variant(config.scale.name(), variant);
  if (!config.positional.empty()) {
    const PositionalScheme& scheme = positional_scheme(config.positional);
    const PositionalContext at{.d_k = d_k_, .heads = heads};
    if (scheme.check) scheme.check(at);
    if (scheme.variant) add_variant(scheme.name, scheme.variant(at));
  }
}

#ifndef GRADFLOW_EXERCISES  // exercise 7: docs/exercises/07_split_heads.md
Variable MultiHeadAttention::split_heads(const Variable& x) const {
  const int64_t b = x.shape()[0], t = x.shape()[1];
  // A view: (B, T, H, D) then swap T and H; GEMM reads the strides as they are.
  return transpose(reshape(x, {b, t, config_.heads, d_k_}), 1, 2);
}
#endif

// The lesson is five lines; the rest is machinery, fenced "[machinery]" below
// so a first read can skip it (the KV cache for generation, the variants of
// the scale and position tables, the probe):
//   q = split_heads(q_proj(x))                            (B, H, T, D)
//   k = split_heads(k_proj(memory)), v = split_heads(v_proj(memory))
//   heads = softmax(scale * q k^T, mask) v                (B, H, T, D)
//   return o_proj(heads with H and D merged back)         (B, T, C)
Variable MultiHeadAttention::forward(const Variable& x, const Variable& memory, const Tensor& mask,
                                     KVCache* cache) {
  const GraphScope scope = graph_scope();
  if (x.ndim() != 3 || x.shape()[2] != d_model_ || memory.ndim() != 3 ||
      memory.shape()[2] != d_model_ || memory.shape()[0] != x.shape()[0])
    fail("MultiHeadAttention: expected x (B, T, ", d_model_, ") and memory (B, S, ", d_model_,
         "), got ", shape_str(x.shape()), " and ", shape_str(memory.shape()));
  const int64_t b = x.shape()[0], t = x.shape()[1];
  // [machinery] The cache holds plain tensors: with gradients on, those of k_proj and
  // v_proj would be silently cut after the first step.
  if (cache && grad_enabled())
    fail("MultiHeadAttention: the KV cache is for generation; use it under NoGradGuard");
  // New queries start where the cache's queries end; new keys where its keys
  // end (cross-attention's keys, the memory, always start at 0).
  // S: the keys the queries will see, the cached ones included.
  const int64_t keys = cache && cache->fixed && cache->k.defined() ? cache->length()
                       : cache && !cache->fixed ? cache->length() + memory.shape()[1]
                                                : memory.shape()[1];
  AttentionPositions at{.query_start = cache ? cache->queries : 0,
                        .key_start = cache && !cache->fixed ? cache->length() : 0,
                        .key_length = keys,
                        .mask = mask};
  // The lesson: three projections of the input, each split into heads.
  Variable q = split_heads(q_proj->forward(x));
  for (const auto& variant : variants_) q = variant->transform_query(q, at);
  Variable k, v;
  if (cache && cache->fixed && cache->k.defined()) {
    k = Variable(cache->k);
    v = Variable(cache->v);
  } else {
    k = split_heads(k_proj->forward(memory));
    v = split_heads(v_proj->forward(memory));
    for (const auto& variant : variants_) k = variant->transform_key(k, at);
  }
  if (cache) {  // [machinery] generation: keep this step's keys and values
    if (!cache->fixed && cache->k.defined()) {
      k = Variable(cat({cache->k, k.data()}, 2));
      v = Variable(cat({cache->v, v.data()}, 2));
    }
    cache->k = k.data();
    cache->v = v.data();
    cache->queries += t;
  }
  // [machinery] The scores cover every key, the cached ones included.
  at.key_start = 0;
  ScoreTransform transform = nullptr;
  if (std::any_of(variants_.begin(), variants_.end(),
                  [](const auto& v) { return v->transforms_scores(); }))
    transform = [this, at](const Variable& logits) {
      Variable out = logits;
      for (const auto& v : variants_)
        if (v->transforms_scores()) out = v->transform_scores(out, at);
      return out;
    };
  // The lesson again: softmax(scale q k^T) v, head by head.
  Variable heads = scaled_dot_product_attention(q, k, v, mask, config_.scale.value(d_k_),
                                                record_probe ? &probe : nullptr, transform);
  // (B, H, T, D) -> (B, T, H, D) -> (B, T, H*D): the one copy, into row-major.
  return o_proj->forward(reshape(transpose(heads, 1, 2), {b, t, inner_}));
}

double MultiHeadAttention::logit_factor() const {
  double factor = config_.scale.value(d_k_);
  for (const auto& variant : variants_) factor *= variant->logit_factor();
  return factor;
}

std::string MultiHeadAttention::describe() const {
  return "MultiHeadAttention(d_model=" + std::to_string(d_model_) +
         ", heads=" + std::to_string(config_.heads) + ", d_k=" + std::to_string(d_k_) +
         ", scale=" + config_.scale.name() + ")";
}

}  // namespace gradflow::nn
