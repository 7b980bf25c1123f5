// Text generation for the decoder-only model and the encoder-decoder:
// greedy, or sampling with a temperature and top-k. With the KV cache each new token costs one
// position; without it the whole sequence is re-run each step. Both give the same tokens (tested),
// so the cache is purely a speed-up.
#pragma once

#include <vector>

#include "nn/models.h"
#include "tensor/random.h"

namespace gradflow::nn {

struct GenerateOptions {
  int64_t new_tokens = 100;
  double temperature = 1.0;  // 0 means greedy (argmax)
  int64_t top_k = 0;         // 0 means all tokens
  bool use_cache = true;
};

// Continues each row of `prompt` (B, P) int64 by new_tokens tokens and
// returns (B, P + new_tokens). Past the model's max_len, each token is
// predicted from the last max_len tokens (a sliding window; positions count
// from the window's start), with or without the cache. Draws from `gen` when
// sampling.
Tensor generate(const DecoderLM& model, const Tensor& prompt, const GenerateOptions& options,
                Generator& gen);

// The encoder-decoder's: decodes each row of src (B, S) from bos until every
// row has made eos or options.new_tokens tokens, (B, <= new_tokens), each
// token picked as sample_tokens picks it (temperature 0: greedy_decode's
// tokens). REQUIRES: new_tokens <= the model's max_len, where the decoder's
// positions end (throws Error otherwise).
Tensor generate(const EncoderDecoder& model, const Tensor& src, const Tensor& src_pad, int64_t bos,
                int64_t eos, const GenerateOptions& options, Generator& gen);

// Picks one token per row from logits (B, V): argmax when temperature is 0,
// else a draw from softmax(logits / temperature) restricted to the top_k.
Tensor sample_tokens(const Tensor& logits, double temperature, int64_t top_k, Generator& gen);

}  // namespace gradflow::nn
