// Transformer blocks and stacks. Shapes: x (B, T, C) with C = d_model;
// memory (B, S, C) the encoder output; masks as in masks.h (nonzero = hidden).
//
// Pre-LN (default):  x = x + Attn(N(x)); [x = x + CrossAttn(N(x), memory)];
//                    x = x + FF(N(x))
// Post-LN (Vaswani et al. 2017): x = N(x + Attn(x)); ... ; x = N(x + FF(x))
// N is a norm of the table in norm_kinds.h (LayerNorm by default, or
// RMSNorm), FF a feed-forward of the table in ffn_kinds.h (the MLP
// fc2(act(fc1(x))), act GELU (erf) or ReLU, by default, or SwiGLU).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "nn/attention.h"
#include "nn/dropout.h"
#include "nn/feed_forward.h"
#include "nn/norm.h"

namespace gradflow::nn {

// Where each sublayer's norm sits: before it, inside the residual
// branch (Pre), or after the residual add (Post).
enum class NormPlacement { Pre, Post };
std::string norm_placement_name(NormPlacement placement);     // "pre" or "post"
NormPlacement parse_norm_placement(const std::string& name);  // throws on another name

// One block, encoder or decoder. Every attention layer of the block, self-
// and cross-attention alike, is built from `attention`.
struct BlockConfig {
  int64_t d_model = 64, d_ff = 256;
  AttentionConfig attention = {};  // heads 4, d_k = d_model / heads, 1/sqrt(d_k)
  NormPlacement norm = NormPlacement::Pre;
  std::string norm_type = "layernorm";  // an entry of norm_kinds(): or "rmsnorm"
  std::string ffn = "mlp";              // an entry of ffn_kinds(): or "swiglu"
  std::string activation = "gelu";      // the mlp's: or "relu"
  double dropout = 0;                   // on each sublayer's output, before the residual add
  // Decoder layers only: also attend to the encoder's output (seq2seq).
  // Cross-attention gets no rope: its queries and keys are positions of two
  // different sequences.
  bool cross_attention = false;
};

// Self-attention (bidirectional unless a mask says otherwise) + feed-forward.
class EncoderLayer : public Module {
 public:
  EncoderLayer(const BlockConfig& config, Init init = {});
  Variable forward(const Variable& x, const Tensor& mask) const;
  std::string describe() const override {
    return config_.norm == NormPlacement::Pre ? "EncoderLayer(pre-LN)" : "EncoderLayer(post-LN)";
  }
  std::shared_ptr<MultiHeadAttention> self_attn;
  std::shared_ptr<Norm> self_attn_norm, ff_norm;
  std::shared_ptr<FeedForward> ff;

 private:
  BlockConfig config_;
  std::shared_ptr<Dropout> dropout_;
};

// Per-layer state for generation: self-attention keys and values grow by one
// position a step; cross-attention ones are computed once from the memory.
struct LayerCache {
  KVCache self;
  KVCache cross{.fixed = true};
};

// Masked self-attention, optional cross-attention to the memory, feed-forward.
class DecoderLayer : public Module {
 public:
  DecoderLayer(const BlockConfig& config, Init init = {});
  Variable forward(const Variable& x, const Tensor& self_mask, const Variable& memory = Variable(),
                   const Tensor& memory_mask = Tensor(), LayerCache* cache = nullptr) const;
  std::string describe() const override;
  std::shared_ptr<MultiHeadAttention> self_attn, cross_attn;  // cross_attn null if none
  std::shared_ptr<Norm> self_attn_norm, cross_attn_norm, ff_norm;
  std::shared_ptr<FeedForward> ff;

 private:
  BlockConfig config_;
  std::shared_ptr<Dropout> dropout_;
};

class Encoder : public Module {
 public:
  Encoder(int64_t layers, const BlockConfig& config, Init init = {});
  Variable forward(Variable x, const Tensor& mask) const;
  std::string describe() const override { return "Encoder"; }
  std::vector<std::shared_ptr<EncoderLayer>> layers;
};

class Decoder : public Module {
 public:
  Decoder(int64_t layers, const BlockConfig& config, Init init = {});
  Variable forward(Variable x, const Tensor& self_mask, const Variable& memory = Variable(),
                   const Tensor& memory_mask = Tensor(),
                   std::vector<LayerCache>* caches = nullptr) const;
  std::string describe() const override { return "Decoder"; }
  std::vector<std::shared_ptr<DecoderLayer>> layers;
};

}  // namespace gradflow::nn
