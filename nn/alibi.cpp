// ALiBi (Press, Smith and Lewis 2022, "Train Short, Test Long: Attention with
// Linear Biases"): no position embeddings; instead each head h adds
// -m_h |i - j| to the logit of query position i and key position j, a
// penalty growing with distance, with fixed slopes m_h = 2^(-8 (h + 1) / H)
// (for H = 8: 1/2, 1/4, ..., 1/256), so some heads look far and some near.
// A decoder's causal mask hides j > i, where the paper's -m_h (i - j) and
// this |i - j| agree; an encoder's keys on both sides get the same penalty
// for the same distance.
//
// A score transform (attention_variant.h): the layer takes the composed
// attention path. Shapes: logits (B, H, T, S); the bias is (1, H, T, S).
// With a KV cache the new queries start at at.query_start, and the logits
// cover every key from position 0.
#include <cmath>

#include "autograd/ops.h"
#include "nn/positional_schemes.h"
#include "tensor/tensor.h"

namespace gradflow::nn {

namespace {

class Alibi : public AttentionVariant {
 public:
  explicit Alibi(int64_t heads) : heads_(heads) {
    if (heads <= 0) fail("alibi: heads must be positive, got ", heads);
  }
  bool transforms_scores() const override { return true; }
  Variable transform_scores(const Variable& logits, const AttentionPositions& at) const override {
    if (logits.ndim() != 4 || logits.shape()[1] != heads_)
      fail("alibi: expected logits (B, ", heads_, ", T, S), got ", shape_str(logits.shape()));
    const int64_t t = logits.shape()[2], s = logits.shape()[3];
    Tensor bias = Tensor::empty({1, heads_, t, s}, DType::Float64);
    double* b = bias.data<double>();
    for (int64_t h = 0; h < heads_; ++h) {
      const double slope = std::pow(2.0, -8.0 * static_cast<double>(h + 1) / heads_);
      for (int64_t r = 0; r < t; ++r)
        for (int64_t j = 0; j < s; ++j) {
          const double distance = std::abs(static_cast<double>(at.query_start + r - j));
          *b++ = -slope * distance;
        }
    }
    return logits + Variable(bias.to(logits.dtype()));
  }
  std::string describe() const override { return "Alibi(heads=" + std::to_string(heads_) + ")"; }

 private:
  int64_t heads_;
};

}  // namespace

std::shared_ptr<AttentionVariant> make_alibi(const PositionalContext& context) {
  return std::make_shared<Alibi>(context.heads);
}

}  // namespace gradflow::nn
