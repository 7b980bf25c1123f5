#include "nn/models.h"

#include "autograd/ops.h"
#include "nn/attention.h"
#include "nn/generate.h"
#include "nn/norm_kinds.h"
#include "nn/positional_schemes.h"
#include "tensor/creation.h"
#include "tensor/elementwise.h"
#include "tensor/index.h"
#include "tensor/map.h"
#include "tensor/reduce.h"

namespace gradflow::nn {

Embeddings::Embeddings(const ModelConfig& c, Init init) {
  token = register_module("token", std::make_shared<Embedding>(c.vocab, c.d_model, init));
  const PositionalScheme::Table table = positional_scheme(c.positional).table;
  if (table == PositionalScheme::Table::Learned)
    position = register_module(
        "position", std::make_shared<LearnedPositionalEmbedding>(c.max_len, c.d_model, init));
  else if (table == PositionalScheme::Table::Sinusoidal)
    sinusoid = register_module(
        "sinusoid", std::make_shared<SinusoidalPositionalEncoding>(c.max_len, c.d_model, init));
}

Variable Embeddings::forward(const Tensor& ids, int64_t start) const {
  const GraphScope scope = graph_scope();
  if (ids.ndim() != 2) fail("Embeddings: ids must be (B, T), got ", shape_str(ids.shape()));
  Variable x = token->forward(ids);
  if (position) return position->forward(x, start);
  if (sinusoid) return sinusoid->forward(x, start);
  return x;  // rope, alibi: the attention layers see positions
}

EncoderDecoder::EncoderDecoder(const ModelConfig& c, Init init) : config_(c) {
  c.validate();
  BlockConfig with_cross = c.block();
  with_cross.cross_attention = true;
  embed = register_module("embed", std::make_shared<Embeddings>(c, init));
  encoder = register_module("encoder", std::make_shared<Encoder>(c.layers, c.block(), init));
  decoder = register_module("decoder", std::make_shared<Decoder>(c.layers, with_cross, init));
  final_norm = register_module("final_norm", norm_kind(c.norm_type).make(c.d_model, init));
  lm_head = register_module("lm_head",
                            std::make_shared<Linear>(c.d_model, c.vocab, LinearOptions{}, init));
}

Variable EncoderDecoder::encode(const Tensor& src, const Tensor& src_pad) const {
  return encoder->forward(embed->forward(src), key_padding_mask(src_pad));
}

Variable EncoderDecoder::decode(const Tensor& tgt, const Variable& memory, const Tensor& src_pad,
                                std::vector<LayerCache>* caches, int64_t start) const {
  const int64_t t = tgt.shape()[1], total = start + t;
  Tensor mask = causal_mask(t, total, memory.dtype(), start);
  Variable x =
      decoder->forward(embed->forward(tgt, start), mask, memory, key_padding_mask(src_pad), caches);
  return lm_head->forward(final_norm->forward(x));
}

Variable EncoderDecoder::forward(const Tensor& src, const Tensor& tgt_in,
                                 const Tensor& src_pad) const {
  const GraphScope scope = graph_scope();
  return decode(tgt_in, encode(src, src_pad), src_pad);
}

Tensor EncoderDecoder::greedy_decode(const Tensor& src, const Tensor& src_pad, int64_t bos,
                                     int64_t eos, int64_t max_len, bool use_cache) const {
  Generator unused(0);  // greedy draws nothing
  return generate(*this, src, src_pad, bos, eos,
                  {.new_tokens = max_len, .temperature = 0, .use_cache = use_cache}, unused);
}

DecoderLM::DecoderLM(const ModelConfig& c, Init init) : config_(c) {
  c.validate();
  embed = register_module("embed", std::make_shared<Embeddings>(c, init));
  decoder = register_module("decoder", std::make_shared<Decoder>(c.layers, c.block(), init));
  final_norm = register_module("final_norm", norm_kind(c.norm_type).make(c.d_model, init));
  lm_head = register_module("lm_head",
                            std::make_shared<Linear>(c.d_model, c.vocab, LinearOptions{}, init));
}

Variable DecoderLM::forward(const Tensor& ids, const Tensor& pad, std::vector<LayerCache>* caches,
                            int64_t start) const {
  const GraphScope scope = graph_scope();
  if (ids.ndim() != 2) fail("DecoderLM: ids must be (B, T), got ", shape_str(ids.shape()));
  const int64_t b = ids.shape()[0], t = ids.shape()[1];
  if (pad.defined() && pad.shape() != Shape{b, start + t})
    fail("DecoderLM: pad must be (B, start + T) = ", shape_str({b, start + t}), ", got ",
         shape_str(pad.shape()));
  Variable x = embed->forward(ids, start);
  // Shape: (T, start + T), or (B, 1, T, start + T) with padding.
  Tensor mask = combine_masks(causal_mask(t, start + t, x.dtype(), start), key_padding_mask(pad));
  x = decoder->forward(x, mask, Variable(), Tensor(), caches);
  return lm_head->forward(final_norm->forward(x));
}

EncoderClassifier::EncoderClassifier(int64_t classes, const ModelConfig& c, Init init)
    : config_(c), classes_(classes) {
  c.validate();
  if (classes < 0) fail("EncoderClassifier: classes must be >= 0, got ", classes);
  embed = register_module("embed", std::make_shared<Embeddings>(c, init));
  encoder = register_module("encoder", std::make_shared<Encoder>(c.layers, c.block(), init));
  final_norm = register_module("final_norm", norm_kind(c.norm_type).make(c.d_model, init));
  head = register_module(
      "head",
      std::make_shared<Linear>(c.d_model, classes > 0 ? classes : c.vocab, LinearOptions{}, init));
}

Variable EncoderClassifier::forward(const Tensor& ids, const Tensor& pad) const {
  const GraphScope scope = graph_scope();
  Variable x = final_norm->forward(encoder->forward(embed->forward(ids), key_padding_mask(pad)));
  if (classes_ == 0) return head->forward(x);
  // Mean over the real (non-padding) positions: (B, T, C) -> (B, C).
  Tensor keep = pad.defined() ? sub(1.0, pad.to(x.dtype()))
                              : ones({ids.shape()[0], ids.shape()[1]}, x.dtype());
  Tensor count = sum(keep, {1}, true);
  Variable weights(
      div(keep, map_unary(count, "max1", [](auto v) { return v < 1 ? decltype(v){1} : v; }))
          .unsqueeze(-1));
  return head->forward(sum(x * weights, {1}));
}

}  // namespace gradflow::nn
