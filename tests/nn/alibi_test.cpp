// ALiBi (nn/alibi.cpp) as a positional scheme: its bias against numbers
// written out by hand (a flipped slope, i - j for |i - j| or a cache offset
// ignored each changes them), a layer against the hand computation, the
// KV cache, gradients, and models built with positional = "alibi".
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "nn/generate.h"
#include "nn/models.h"
#include "nn/positional_schemes.h"
#include "tests/nn/nn_check.h"

namespace gradflow::nn {
namespace {
using namespace gradflow::testing;

// Two heads: slopes 2^(-8/2) = 1/16 and 2^(-16/2) = 1/256.
const double kSlopes[] = {0.0625, 0.00390625};

TEST(Alibi, BiasIsMinusSlopeTimesDistance) {
  auto alibi = make_alibi({.d_k = 4, .heads = 2});
  ASSERT_TRUE(alibi->transforms_scores());
  // Three new queries at positions 1, 2, 3 (one cached before them) against
  // keys 0 to 3: the bias alone, on zero logits.
  Tensor zero = zeros({1, 2, 3, 4}, DType::Float64);
  std::vector<double> got =
      alibi->transform_scores(Variable(zero), {.query_start = 1}).data().to_vector();
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t r = 0; r < 3; ++r)
      for (int64_t j = 0; j < 4; ++j) {
        const double distance = std::abs(static_cast<double>(1 + r - j));
        EXPECT_DOUBLE_EQ(got[(h * 3 + r) * 4 + j], -kSlopes[h] * distance) << h << r << j;
      }
  // Two entries written out: query 1 against key 3 in head 0 (a key after
  // the query, as an encoder sees it) and query 3 against key 0 in head 1.
  EXPECT_DOUBLE_EQ(got[(0 * 3 + 0) * 4 + 3], -0.125);
  EXPECT_DOUBLE_EQ(got[(1 * 3 + 2) * 4 + 0], -3.0 / 256);
  EXPECT_THROW(alibi->transform_scores(Variable(zeros({1, 3, 2, 2})), {}), Error);
}

// softmax(q k^T / sqrt(d) - m_h |i - j|) v per head, merged and projected,
// by composing plain ops; the bias from kSlopes.
Tensor by_hand(const MultiHeadAttention& mha, const Tensor& x) {
  const int64_t b = x.shape()[0], t = x.shape()[1], h = mha.heads(), d = mha.d_k();
  auto heads = [&](const Linear& proj) {
    return transpose(reshape(proj.forward(Variable(x)), {b, t, h, d}), 1, 2);
  };
  Tensor bias = zeros({1, h, t, t}, DType::Float64);
  for (int64_t head = 0; head < h; ++head)
    for (int64_t i = 0; i < t; ++i)
      for (int64_t j = 0; j < t; ++j)
        bias.set({0, head, i, j}, -kSlopes[head] * std::abs(static_cast<double>(i - j)));
  Variable logits = matmul(heads(*mha.q_proj), transpose(heads(*mha.k_proj), -1, -2)) *
                    (1 / std::sqrt(static_cast<double>(d)));
  Variable y = matmul(softmax(logits + Variable(bias), -1), heads(*mha.v_proj));
  return mha.o_proj->forward(reshape(transpose(y, 1, 2), {b, t, h * d})).data();
}

TEST(Alibi, ALayerWithoutAMaskMatchesTheHandComputation) {
  // No mask: every query sees keys on both sides, where |i - j| and i - j differ.
  Generator gen(1);
  MultiHeadAttention mha(8, {.heads = 2, .positional = "alibi"}, {gen, DType::Float64});
  EXPECT_EQ(mha.num_parameters(), 4 * (8 * 8 + 8));  // no parameters of its own
  Tensor x = mul(dense({2, 5, 8}), 3.0);  // larger logits: the bias is not all that matters
  expect_close(mha.forward(Variable(x), Variable(x)).data(), by_hand(mha, x), 1e-12);
  EXPECT_GRADCHECK([&](const Vars& v) { return mha.forward(v[0], v[0]); }, {dense({2, 3, 8})});
  Variable small(dense({2, 3, 8}));
  expect_parameter_grads(mha, [&] { return mha.forward(small, small); });
}

TEST(Alibi, TheCacheGivesTrueDistances) {
  Generator gen(2);
  MultiHeadAttention mha(8, {.heads = 2, .positional = "alibi"}, {gen, DType::Float64});
  NoGradGuard no_grad;
  Tensor x = mul(dense({2, 6, 8}), 3.0);
  Tensor full = mha.forward(Variable(x), Variable(x), causal_mask(6, 6, DType::Float64)).data();
  KVCache cache;
  int64_t start = 0;
  for (int64_t n : {2, 1, 1, 2}) {
    Variable part(x.narrow(1, start, n));
    Tensor mask = n > 1 ? causal_mask(n, start + n, DType::Float64, start) : Tensor();
    expect_close(mha.forward(part, part, mask, &cache).data(), full.narrow(1, start, n), 1e-12,
                 "from " + std::to_string(start));
    start += n;
  }
}

TEST(Alibi, IsAModelOption) {
  ModelConfig c;
  c.vocab = 9, c.d_model = 8, c.heads = 2, c.layers = 2, c.d_ff = 16, c.max_len = 12;
  c.positional = "alibi";
  Generator gen(3);
  EncoderDecoder seq2seq(c, Init(gen, DType::Float64));
  EXPECT_EQ(seq2seq.embed->position, nullptr);  // no table
  const auto& layer = *seq2seq.decoder->layers[0];
  EXPECT_NE(layer.self_attn->summary().find("alibi: Alibi(heads=2)"), std::string::npos);
  EXPECT_EQ(layer.cross_attn->summary().find("alibi"), std::string::npos);  // not across sequences
  DecoderLM lm(c, Init(gen, DType::Float64));
  Tensor prompt = from_vector({1, 4, 2}, {1, 3}, DType::Int64);
  GenerateOptions cached{.new_tokens = 8, .temperature = 0, .use_cache = true};
  GenerateOptions uncached = cached;
  uncached.use_cache = false;
  EXPECT_EQ(generate(lm, prompt, cached, gen).to_vector(),
            generate(lm, prompt, uncached, gen).to_vector());
  EXPECT_EQ(positional_scheme("alibi").table, PositionalScheme::Table::None);
  EXPECT_THROW(positional_scheme("alibi2"), Error);
}

}  // namespace
}  // namespace gradflow::nn
