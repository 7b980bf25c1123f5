// Positional encodings: fixed sinusoids (Vaswani et al.) or a learned table.
// Constructed as every layer is (module.h): sizes, then Init (generator and
// dtype; the initial values' distributions are in init.h).
#pragma once

#include "autograd/variable.h"
#include "nn/module.h"
#include "tensor/random.h"

namespace gradflow::nn {

// Positional encodings, added to (B, T, C) token embeddings. `start` is the
// position of the first row (for generation with a KV cache).
class SinusoidalPositionalEncoding : public Module {
 public:
  SinusoidalPositionalEncoding(int64_t max_len, int64_t dim, Init init = {});  // its dtype
  Variable forward(const Variable& x, int64_t start = 0) const;
  std::string describe() const override;

 private:
  Tensor table_;  // (max_len, dim), fixed: sin on even features, cos on odd
};

class LearnedPositionalEmbedding : public Module {
 public:
  LearnedPositionalEmbedding(int64_t max_len, int64_t dim, Init init = {});
  Variable forward(const Variable& x, int64_t start = 0) const;
  std::string describe() const override;
  Variable weight;  // (max_len, dim), ~ N(0, 1) as an Embedding
};

}  // namespace gradflow::nn
