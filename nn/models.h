// The three transformer models. Shapes: ids (B, T) int64; logits (B, T, V).
//
// Embeddings: one token table shared by source and target and a learned
// position table of max_len rows (or fixed sinusoids), added; with rope no
// table, positions enter as rotations of q and k in every self-attention
// layer (rope.h). The head is a final norm (of config.norm_type, as the
// blocks') and an untied Linear to the vocabulary. With the workload
// settings of bench/WORKLOADS.md the parameter counts equal the PyTorch
// peer's (236,688 for seq2seq-tiny, 3,241,568 for gpt-small). Padding masks:
// masks.h.
#pragma once

#include "nn/embedding.h"
#include "nn/model_config.h"
#include "nn/positional.h"
#include "nn/transformer.h"

namespace gradflow::nn {

// Token and position embeddings: (B, T) ids -> (B, T, C).
class Embeddings : public Module {
 public:
  Embeddings(const ModelConfig& config, Init init = {});
  Variable forward(const Tensor& ids, int64_t start = 0) const;
  std::string describe() const override { return "Embeddings"; }
  std::shared_ptr<Embedding> token;
  std::shared_ptr<LearnedPositionalEmbedding> position;    // learned positions
  std::shared_ptr<SinusoidalPositionalEncoding> sinusoid;  // or fixed ones (neither: rope)
};

// Encoder-decoder (seq2seq), as Vaswani et al.; the decoder cross-attends to
// the encoder output.
class EncoderDecoder : public Module {
 public:
  explicit EncoderDecoder(const ModelConfig& config, Init init = {});
  // src (B, S), tgt_in (B, T), src_pad (B, S) 1 at padding or undefined.
  Variable forward(const Tensor& src, const Tensor& tgt_in, const Tensor& src_pad = Tensor()) const;
  Variable encode(const Tensor& src, const Tensor& src_pad) const;  // (B, S, C)
  // Target positions [start, start + T) given the memory; with caches, only
  // the new positions are passed.
  Variable decode(const Tensor& tgt, const Variable& memory, const Tensor& src_pad,
                  std::vector<LayerCache>* caches = nullptr, int64_t start = 0) const;
  // Greedy decoding from BOS until EOS or max_len tokens: (B, <= max_len);
  // nn::generate samples (generate.h). REQUIRES: max_len <= config().max_len.
  Tensor greedy_decode(const Tensor& src, const Tensor& src_pad, int64_t bos, int64_t eos,
                       int64_t max_len, bool use_cache = true) const;
  std::string describe() const override { return "EncoderDecoder"; }
  const ModelConfig& config() const { return config_; }
  std::shared_ptr<Embeddings> embed;
  std::shared_ptr<Encoder> encoder;
  std::shared_ptr<Decoder> decoder;
  std::shared_ptr<Norm> final_norm;
  std::shared_ptr<Linear> lm_head;

 private:
  ModelConfig config_;
};

// Decoder-only language model (GPT-like): causal self-attention only.
class DecoderLM : public Module {
 public:
  explicit DecoderLM(const ModelConfig& config, Init init = {});
  // ids (B, T) at positions [start, start + T) -> logits (B, T, V). pad
  // (B, start + T), nonzero at padding, or undefined: padded keys are hidden
  // from every query, on top of the causal mask (masks.h). With caches, ids
  // are only the new positions and pad covers the cached ones too.
  Variable forward(const Tensor& ids, const Tensor& pad = Tensor(),
                   std::vector<LayerCache>* caches = nullptr, int64_t start = 0) const;
  std::string describe() const override { return "DecoderLM"; }
  const ModelConfig& config() const { return config_; }
  std::shared_ptr<Embeddings> embed;
  std::shared_ptr<Decoder> decoder;
  std::shared_ptr<Norm> final_norm;
  std::shared_ptr<Linear> lm_head;

 private:
  ModelConfig config_;
};

// Encoder-only (BERT-like). With classes > 0: the mean of the final states
// over non-padding positions -> (B, classes). With classes == 0: a logit per
// token over the vocabulary, (B, T, V).
class EncoderClassifier : public Module {
 public:
  EncoderClassifier(int64_t classes, const ModelConfig& config, Init init = {});
  // ids (B, T); pad (B, T), nonzero at padding, or undefined: padded
  // positions are hidden as keys and left out of the mean.
  Variable forward(const Tensor& ids, const Tensor& pad = Tensor()) const;
  std::string describe() const override { return "EncoderClassifier"; }
  std::shared_ptr<Embeddings> embed;
  std::shared_ptr<Encoder> encoder;
  std::shared_ptr<Norm> final_norm;
  std::shared_ptr<Linear> head;

 private:
  ModelConfig config_;
  int64_t classes_;
};

}  // namespace gradflow::nn
