// Masks (nonzero = hidden): combining causal and padding masks, and padded
// batches through the models giving, at every real position, the logits of
// each sequence run alone.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "nn/masks.h"
#include "nn/models.h"
#include "tests/nn/nn_check.h"

namespace gradflow::nn {
namespace {
using namespace gradflow::testing;

TEST(Masks, CombineHidesWhereEitherHides) {
  Tensor causal = causal_mask(3, 3);
  Tensor pad = from_vector({0, 0, 1, 1, 0, 0}, {2, 3});
  Tensor both = combine_masks(causal, key_padding_mask(pad));
  ASSERT_EQ(both.shape(), (Shape{2, 1, 3, 3}));
  EXPECT_EQ(both.dtype(), DType::Float32);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 3; ++j)
        EXPECT_EQ(both.at({b, 0, i, j}), (j > i || pad.at({b, j}) != 0) ? 1.0 : 0.0)
            << b << " " << i << " " << j;
  // Any nonzero value hides; an undefined mask hides nothing.
  EXPECT_EQ(combine_masks(full({1, 2}, 0.5), zeros({2, 1})).to_vector(),
            (std::vector<double>{1, 1, 1, 1}));
  EXPECT_EQ(combine_masks(causal, Tensor()).to_vector(), causal.to_vector());
  EXPECT_EQ(combine_masks(Tensor(), causal).to_vector(), causal.to_vector());
  EXPECT_FALSE(combine_masks(Tensor(), Tensor()).defined());
  EXPECT_EQ(key_padding_mask(pad).shape(), (Shape{2, 1, 1, 3}));
  EXPECT_THROW(key_padding_mask(zeros({2, 3, 1})), Error);
}

ModelConfig tiny(const std::string& positional) {
  ModelConfig c;
  c.vocab = 9, c.d_model = 8, c.heads = 2, c.layers = 2, c.d_ff = 16, c.max_len = 6;
  c.positional = positional;
  return c;
}

// Rows of `lengths` tokens (1 + row + position, mod vocab), padded with 0 to
// the longest on the left or on the right. Returns ids (B, T) and pad (B, T).
std::pair<Tensor, Tensor> padded(const std::vector<int64_t>& lengths, int64_t t, bool left) {
  const int64_t b = static_cast<int64_t>(lengths.size());
  Tensor ids = zeros({b, t}, DType::Int64), pad = zeros({b, t});
  for (int64_t r = 0; r < b; ++r) {
    const int64_t first = left ? t - lengths[r] : 0;
    for (int64_t p = 0; p < t; ++p) {
      if (p >= first && p < first + lengths[r])
        ids.set({r, p}, static_cast<double>((1 + r + p - first) % 9));
      else
        pad.set({r, p}, 1);
    }
  }
  return {ids, pad};
}

// Logits of row r's real tokens run alone: (L, V).
Tensor alone(const Tensor& ids, const Tensor& pad, int64_t r,
             const std::function<Tensor(const Tensor&)>& forward) {
  int64_t first = 0, n = 0;
  for (int64_t p = 0; p < ids.shape()[1]; ++p)
    if (pad.at({r, p}) == 0 && n++ == 0) first = p;
  return forward(ids.narrow(0, r, 1).narrow(1, first, n).contiguous()).select(0, 0);
}

void expect_real_positions_match(const Tensor& batch_logits, const Tensor& ids, const Tensor& pad,
                                 const std::function<Tensor(const Tensor&)>& forward) {
  for (int64_t r = 0; r < ids.shape()[0]; ++r) {
    Tensor want = alone(ids, pad, r, forward);
    int64_t k = 0;
    for (int64_t p = 0; p < ids.shape()[1]; ++p)
      if (pad.at({r, p}) == 0)
        expect_close(batch_logits.select(0, r).select(0, p), want.select(0, k++), 1e-10,
                     "row " + std::to_string(r) + " position " + std::to_string(p));
  }
}

TEST(Masks, PaddedDecoderBatchMatchesTheSequencesOneByOne) {
  NoGradGuard no_grad;
  // Left padding needs the mask, and positions that do not shift: rope's
  // are relative. Right padding is the usual case with learned positions.
  const std::vector<std::pair<std::string, bool>> cases = {
      {"rope", true}, {"learned", false}, {"rope", false}};
  for (const auto& [positional, left] : cases) {
    SCOPED_TRACE(positional + (left ? ", left padding" : ", right padding"));
    Generator gen(1);
    DecoderLM m(tiny(positional), {gen, DType::Float64});
    auto [ids, pad] = padded({5, 2, 4}, 5, left);
    auto forward = [&](const Tensor& row) { return m.forward(row).data(); };
    expect_real_positions_match(m.forward(ids, pad).data(), ids, pad, forward);
    if (left) {  // without the mask the padding is read
      Tensor unmasked = m.forward(ids).data();
      EXPECT_GT(
          max(abs(sub(unmasked.select(0, 1), m.forward(ids, pad).data().select(0, 1)))).item(),
          1e-6);
    }
  }
}

TEST(Masks, PaddedPromptWithTheCacheMatchesTheFullForward) {
  NoGradGuard no_grad;
  Generator gen(2);
  DecoderLM m(tiny("rope"), {gen, DType::Float64});
  auto [ids, pad] = padded({5, 2, 4}, 5, /*left=*/true);
  Tensor full = m.forward(ids, pad).data();
  std::vector<LayerCache> caches;
  Tensor first =
      m.forward(ids.narrow(1, 0, 3).contiguous(), pad.narrow(1, 0, 3).contiguous(), &caches, 0)
          .data();
  expect_close(first, full.narrow(1, 0, 3), 1e-10, "prompt");
  for (int64_t t = 3; t < 5; ++t) {
    Tensor step = m.forward(ids.narrow(1, t, 1).contiguous(), pad.narrow(1, 0, t + 1).contiguous(),
                            &caches, t)
                      .data();
    expect_close(step, full.narrow(1, t, 1), 1e-10, "position " + std::to_string(t));
  }
  EXPECT_THROW(m.forward(ids, pad.narrow(1, 0, 4).contiguous()), Error);
}

TEST(Masks, PaddedEncoderBatchMatchesTheSequencesOneByOne) {
  NoGradGuard no_grad;
  auto [ids, pad] = padded({5, 2, 4}, 5, /*left=*/false);
  Generator gen(3);
  EncoderClassifier tokens(/*classes=*/0, tiny("learned"), {gen, DType::Float64});
  expect_real_positions_match(tokens.forward(ids, pad).data(), ids, pad,
                              [&](const Tensor& row) { return tokens.forward(row).data(); });
  // Bidirectional: without the mask the real positions read the padding.
  EXPECT_GT(max(abs(sub(tokens.forward(ids).data().select(0, 1),
                        tokens.forward(ids, pad).data().select(0, 1))))
                .item(),
            1e-6);
  // One label per sequence: the mean over its real positions.
  EncoderClassifier classes(/*classes=*/3, tiny("learned"), {gen, DType::Float64});
  Tensor batch = classes.forward(ids, pad).data();
  for (int64_t r = 0; r < 3; ++r) {
    Tensor want = alone(ids, pad, r, [&](const Tensor& row) {
      return classes.forward(row).data();  // (1, classes) -> select(0, 0) below
    });
    expect_close(batch.select(0, r), want, 1e-10, "row " + std::to_string(r));
  }
}

}  // namespace
}  // namespace gradflow::nn
