#include "nn/attention.h"

#include "autograd/ops.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "nn/qk_norm.h"
#include "nn/rope.h"
#include "nn/scale_variants.h"
#include "tensor/creation.h"
#include "tensor/index.h"

namespace gradflow::nn {

ScaleMode::ScaleMode(const char* name) {
  if (name == nullptr) fail("scale mode: a null name (expected e.g. \"inv_sqrt_dk\" or \"none\")");
  *this = parse(name);
}

ScaleMode ScaleMode::parse(const std::string& name) {
  if (name == "inv_sqrt_dk") return {InvSqrtDk};
  if (name == "none") return {None};
  if (name == "inv_dk") return {InvDk};
  if (name == "inv_2sqrt_dk") return {Inv2SqrtDk};
  if (name == "learned") return {Learned};
  if (name == "qk_norm") return {QkNorm};
  if (name == "qk_l2norm") return {QkL2Norm};
  if (name == "learned_log") return {LearnedLog};
  if (name.rfind("const:", 0) == 0) {
    std::string number = name.substr(6);
    char* end = nullptr;
    double value = std::strtod(number.c_str(), &end);
    if (number.empty() || *end != '\0' || !std::isfinite(value) || value <= 0)
      fail("scale mode: '", name, "' needs a positive number after const:, e.g. const:0.125");
    // Attention runs in float32: a larger scale would be infinity there.
    if (value > std::numeric_limits<float>::max())
      fail("scale mode: '", name, "': ", number, " does not fit in float32 (at most 3.4e38)");
    return {Constant, value};
  }
  fail("scale mode: unknown '", name,
       "' (expected inv_sqrt_dk, none, inv_dk, inv_2sqrt_dk, const:<value>, learned, qk_norm, "
       "qk_l2norm or learned_log)");
}

std::string ScaleMode::name() const {
  switch (kind) {
    case InvSqrtDk:
      return "inv_sqrt_dk";
    case None:
      return "none";
    case InvDk:
      return "inv_dk";
    case Inv2SqrtDk:
      return "inv_2sqrt_dk";
    case Learned:
      return "learned";
    case QkNorm:
      return "qk_norm";
    case QkL2Norm:
      return "qk_l2norm";
    case LearnedLog:
      return "learned_log";
    case Constant: {
      // Shortest text that reads back to the same double, so a mode written
      // to a log or checkpoint parses back exactly.
      char buf[32];
      auto [end, ec] = std::to_chars(buf, buf + sizeof buf, constant);
      return "const:" + std::string(buf, ec == std::errc() ? end : buf);
    }
  }
  return "?";
}

double ScaleMode::value(int64_t d_k) const {
  const double d = static_cast<double>(d_k);
  switch (kind) {
    case None:
      return 1.0;
    case InvDk:
      return 1.0 / d;
    case Inv2SqrtDk:
      return 0.5 / std::sqrt(d);
    case Constant:
      return constant;
    case QkL2Norm:
    case LearnedLog:
      return 1.0;  // the variant on q carries the scale
    default:
      return 1.0 / std::sqrt(d);  // InvSqrtDk, and the start of Learned, QkNorm
  }
}

Variable scaled_dot_product_attention(const Variable& q, const Variable& k, const Variable& v,
                                      const Tensor& mask, double fixed_scale, const Variable& scale,
                                      AttentionProbe* probe, const ScoreTransform& transform) {
  if (q.ndim() < 2 || k.ndim() != q.ndim() || v.ndim() != q.ndim() ||
      q.shape().back() != k.shape().back() || k.shape()[k.ndim() - 2] != v.shape()[v.ndim() - 2])
    fail(
        "scaled_dot_product_attention: expected q (..., T, D), k (..., S, D), v (..., S, Dv), got ",
        shape_str(q.shape()), ", ", shape_str(k.shape()), ", ", shape_str(v.shape()));
  if (!probe && !scale.defined() && !transform) {
    // One kernel for scale, mask and softmax, and no (T, S) tensor kept for
    // the backward, which recomputes the weights. The study's probe needs the
    // logits as a live graph node, a learned scale its gradient and a score
    // transform the logits themselves: those take the composed path below.
    return fused_attention(q, k, v, fixed_scale, mask);
  }
  // The composition of fused_attention_reference, keeping the logits and
  // weights for the probe and taking the scale as a Variable when learned.
  // Shape: scores (B, H, T, S) = q (B, H, T, D) @ k^T (B, H, D, S).
  Variable scores = matmul(q, transpose(k, -1, -2));
  Variable logits = scale.defined() ? scores * scale : scores * fixed_scale;
  if (transform) logits = transform(logits);
  Variable weights;
  if (mask.defined()) {
    // -inf, not a large negative number: a row with every key masked then
    // softmaxes to zeros (see softmax) instead of a uniform average of
    // values it must not see.
    weights = softmax(
        masked_fill(logits, mask.to(q.dtype()), -std::numeric_limits<double>::infinity()), -1);
  } else {
    weights = softmax(logits, -1);
  }
  if (probe) *probe = {logits, weights, mask};
  return matmul(weights, v);
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
  // The built-in variants. qk_norm's parameters keep the names they had
  // before variants existed, "q_norm.weight": no name level of its own.
  if (config.scale.kind == ScaleMode::QkNorm)
    add_variant("", std::make_shared<QkNorm>(d_k_, LayerNormOptions{}, init));
  if (config.scale.kind == ScaleMode::QkL2Norm)
    add_variant("qk_l2norm", std::make_shared<QkL2Norm>(config.max_len, init));
  if (config.scale.kind == ScaleMode::LearnedLog)
    add_variant("learned_log", std::make_shared<LearnedLogScale>(d_k_, init));
  if (config.rope) add_variant("rope", std::make_shared<Rope>(d_k_));
  if (config.scale.kind == ScaleMode::Learned)
    scale = register_parameter("scale", full({1}, config.scale.value(d_k_), init.dtype));
}

Variable MultiHeadAttention::split_heads(const Variable& x) const {
  const int64_t b = x.shape()[0], t = x.shape()[1];
  // A view: (B, T, H, D) then swap T and H; GEMM reads the strides as they are.
  return transpose(reshape(x, {b, t, config_.heads, d_k_}), 1, 2);
}

Variable MultiHeadAttention::forward(const Variable& x, const Variable& memory, const Tensor& mask,
                                     KVCache* cache) {
  if (x.ndim() != 3 || x.shape()[2] != d_model_ || memory.ndim() != 3 ||
      memory.shape()[2] != d_model_ || memory.shape()[0] != x.shape()[0])
    fail("MultiHeadAttention: expected x (B, T, ", d_model_, ") and memory (B, S, ", d_model_,
         "), got ", shape_str(x.shape()), " and ", shape_str(memory.shape()));
  const int64_t b = x.shape()[0], t = x.shape()[1];
  // The cache holds plain tensors: with gradients on, those of k_proj and
  // v_proj would be silently cut after the first step.
  if (cache && grad_enabled())
    fail("MultiHeadAttention: the KV cache is for generation; use it under NoGradGuard");
  // New queries start where the cache's queries end; new keys where its keys
  // end (cross-attention's keys, the memory, always start at 0).
  AttentionPositions at{.query_start = cache ? cache->queries : 0,
                        .key_start = cache && !cache->fixed ? cache->length() : 0};
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
  if (cache) {
    if (!cache->fixed && cache->k.defined()) {
      k = Variable(cat({cache->k, k.data()}, 2));
      v = Variable(cat({cache->v, v.data()}, 2));
    }
    cache->k = k.data();
    cache->v = v.data();
    cache->queries += t;
  }
  // The scores cover every key, the cached ones included.
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
  Variable heads = scaled_dot_product_attention(q, k, v, mask, config_.scale.value(d_k_), scale,
                                                record_probe ? &probe : nullptr, transform);
  // (B, H, T, D) -> (B, T, H, D) -> (B, T, H*D): the one copy, into row-major.
  return o_proj->forward(reshape(transpose(heads, 1, 2), {b, t, inner_}));
}

std::string MultiHeadAttention::describe() const {
  return "MultiHeadAttention(d_model=" + std::to_string(d_model_) +
         ", heads=" + std::to_string(config_.heads) + ", d_k=" + std::to_string(d_k_) +
         ", scale=" + config_.scale.name() + ")";
}

}  // namespace gradflow::nn
