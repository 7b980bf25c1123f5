#include "nn/transformer.h"

#include "autograd/ops.h"
#include "nn/ffn_kinds.h"
#include "nn/norm_kinds.h"

namespace gradflow::nn {

std::string norm_placement_name(NormPlacement placement) {
  return placement == NormPlacement::Pre ? "pre" : "post";
}

NormPlacement parse_norm_placement(const std::string& name) {
  if (name == "pre") return NormPlacement::Pre;
  if (name == "post") return NormPlacement::Post;
  fail("norm placement: unknown '", name, "' (expected pre or post)");
}

namespace {
// One residual sublayer in either arrangement; `f` is the sublayer itself.
template <class F>
Variable residual(const Variable& x, const Norm& norm, NormPlacement placement,
                  const Dropout& dropout, F f) {
  if (placement == NormPlacement::Pre) return x + dropout.forward(f(norm.forward(x)));
  return norm.forward(x + dropout.forward(f(x)));
}
std::shared_ptr<Norm> norm_of(const BlockConfig& c, Init init) {
  return norm_kind(c.norm_type).make(c.d_model, init);
}
std::shared_ptr<FeedForward> ff_of(const BlockConfig& c, Init init) {
  check_ffn_activation(c.ffn, c.activation);
  return ffn_kind(c.ffn).make(
      {.d_model = c.d_model, .d_ff = c.d_ff, .activation = c.activation, .init = init});
}
}  // namespace

EncoderLayer::EncoderLayer(const BlockConfig& c, Init init) : config_(c) {
  if (c.cross_attention)
    fail("EncoderLayer: cross_attention is for decoder layers (BlockConfig.cross_attention)");
  self_attn_norm = register_module("self_attn_norm", norm_of(c, init));
  self_attn = register_module("self_attn",
                              std::make_shared<MultiHeadAttention>(c.d_model, c.attention, init));
  ff_norm = register_module("ff_norm", norm_of(c, init));
  ff = register_module("ff", ff_of(c, init));
  dropout_ = register_module("dropout", std::make_shared<Dropout>(c.dropout, init));
}

Variable EncoderLayer::forward(const Variable& x, const Tensor& mask) const {
  const GraphScope scope = graph_scope();
  Variable h = residual(x, *self_attn_norm, config_.norm, *dropout_,
                        [&](const Variable& y) { return self_attn->forward(y, y, mask); });
  return residual(h, *ff_norm, config_.norm, *dropout_,
                  [&](const Variable& y) { return ff->forward(y); });
}

DecoderLayer::DecoderLayer(const BlockConfig& c, Init init) : config_(c) {
  self_attn_norm = register_module("self_attn_norm", norm_of(c, init));
  self_attn = register_module("self_attn",
                              std::make_shared<MultiHeadAttention>(c.d_model, c.attention, init));
  if (c.cross_attention) {
    // The same config but no positional scheme: the queries' and the keys'
    // positions are in two different sequences, so their distance means
    // nothing.
    AttentionConfig cross = c.attention;
    cross.positional.clear();
    cross_attn_norm = register_module("cross_attn_norm", norm_of(c, init));
    cross_attn =
        register_module("cross_attn", std::make_shared<MultiHeadAttention>(c.d_model, cross, init));
  }
  ff_norm = register_module("ff_norm", norm_of(c, init));
  ff = register_module("ff", ff_of(c, init));
  dropout_ = register_module("dropout", std::make_shared<Dropout>(c.dropout, init));
}

Variable DecoderLayer::forward(const Variable& x, const Tensor& self_mask, const Variable& memory,
                               const Tensor& memory_mask, LayerCache* cache) const {
  const GraphScope scope = graph_scope();
  Variable h = residual(x, *self_attn_norm, config_.norm, *dropout_, [&](const Variable& y) {
    return self_attn->forward(y, y, self_mask, cache ? &cache->self : nullptr);
  });
  if (cross_attn) {
    if (!memory.defined()) fail("DecoderLayer: cross-attention needs the encoder memory");
    h = residual(h, *cross_attn_norm, config_.norm, *dropout_, [&](const Variable& y) {
      return cross_attn->forward(y, memory, memory_mask, cache ? &cache->cross : nullptr);
    });
  }
  return residual(h, *ff_norm, config_.norm, *dropout_,
                  [&](const Variable& y) { return ff->forward(y); });
}

std::string DecoderLayer::describe() const {
  return std::string("DecoderLayer(") +
         (config_.norm == NormPlacement::Pre ? "pre-LN" : "post-LN") +
         (cross_attn ? ", cross-attention)" : ")");
}

Encoder::Encoder(int64_t n, const BlockConfig& c, Init init) {
  if (n <= 0) fail("Encoder: layers must be positive, got ", n);
  for (int64_t i = 0; i < n; ++i)
    layers.push_back(
        register_module("layers." + std::to_string(i), std::make_shared<EncoderLayer>(c, init)));
}

Variable Encoder::forward(Variable x, const Tensor& mask) const {
  const GraphScope scope = graph_scope();
  for (const auto& layer : layers) x = layer->forward(x, mask);
  return x;
}

Decoder::Decoder(int64_t n, const BlockConfig& c, Init init) {
  if (n <= 0) fail("Decoder: layers must be positive, got ", n);
  for (int64_t i = 0; i < n; ++i)
    layers.push_back(
        register_module("layers." + std::to_string(i), std::make_shared<DecoderLayer>(c, init)));
}

Variable Decoder::forward(Variable x, const Tensor& self_mask, const Variable& memory,
                          const Tensor& memory_mask, std::vector<LayerCache>* caches) const {
  const GraphScope scope = graph_scope();
  if (caches && caches->size() != layers.size()) caches->resize(layers.size());
  for (size_t i = 0; i < layers.size(); ++i)
    x = layers[i]->forward(x, self_mask, memory, memory_mask, caches ? &(*caches)[i] : nullptr);
  return x;
}

}  // namespace gradflow::nn
