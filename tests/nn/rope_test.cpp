// Rotary position embeddings: values against the formula written out here,
// scores that depend only on the distance, gradient checks on every layout,
// attention with a KV cache, and models built with positional = "rope".
#include <gtest/gtest.h>

#include <cmath>

#include "nn/generate.h"
#include "nn/models.h"
#include "nn/rope.h"
#include "tests/nn/nn_check.h"

namespace gradflow::nn {
namespace {
using namespace gradflow::testing;

bool has_name(const Module& m, const std::string& name) {
  for (const auto& [n, p] : m.named_parameters())
    if (n == name) return true;
  return false;
}

TEST(Rope, ValuesMatchTheFormula) {
  const int64_t t = 3, d = 6, start = 5;
  Tensor x = dense({2, t, d});
  std::vector<double> in = x.to_vector(), got = rope(Variable(x), start).data().to_vector();
  for (int64_t r = 0; r < 2 * t; ++r) {
    const double p = static_cast<double>(start + r % t);
    for (int64_t i = 0; i < d / 2; ++i) {
      const double angle = p * std::pow(10000.0, -2.0 * static_cast<double>(i) / d);
      const double a = in[r * d + 2 * i], b = in[r * d + 2 * i + 1];
      EXPECT_NEAR(got[r * d + 2 * i], a * std::cos(angle) - b * std::sin(angle), 1e-14);
      EXPECT_NEAR(got[r * d + 2 * i + 1], a * std::sin(angle) + b * std::cos(angle), 1e-14);
    }
  }
  // Position 0 turns nothing; another base changes the angles.
  expect_close(rope(Variable(x.narrow(1, 0, 1)), 0).data(), x.narrow(1, 0, 1), 0);
  EXPECT_GT(
      max(abs(sub(rope(Variable(x), start, 100).data(), rope(Variable(x), start).data()))).item(),
      1e-3);
}

// q.k after rope depends on the positions m and n only through m - n.
TEST(Rope, ScoresDependOnlyOnTheDistance) {
  Tensor q = dense({1, 1, 8}), k = dense({1, 1, 8});
  auto score = [&](int64_t m, int64_t n) {
    return sum(mul(rope(Variable(q), m).data(), rope(Variable(k), n).data())).item();
  };
  EXPECT_NEAR(score(3, 1), score(10, 8), 1e-12);
  EXPECT_NEAR(score(0, 5), score(20, 25), 1e-12);
  EXPECT_GT(std::abs(score(3, 1) - score(3, 2)), 1e-6);
}

TEST(Rope, GradcheckOnEveryLayout) {
  for (int64_t start : {0, 4}) {
    SCOPED_TRACE(start);
    auto fn = [start](const Vars& v) { return rope(v[0], start); };
    EXPECT_GRADCHECK(fn, {dense({2, 3, 4})});
    EXPECT_GRADCHECK(fn, {transposed({2, 3, 4})});  // no axis of stride 1: a copy
    EXPECT_GRADCHECK(fn, {strided({2, 3, 4})});     // every other element
    // As attention's heads: (B, T, H, D) viewed as (B, H, T, D).
    EXPECT_GRADCHECK(fn, {dense({2, 3, 2, 4}).transpose(1, 2)});
  }
}

TEST(Rope, RejectsOddOrEmptyDimensions) {
  EXPECT_THROW(rope(Variable(dense({2, 3})), 0), Error);
  EXPECT_THROW(rope(Variable(dense({4})), 0), Error);
  EXPECT_THROW(rope(Variable(dense({2, 4})), -1), Error);
  EXPECT_THROW(Rope(5), Error);
  EXPECT_THROW(Rope(4, {.base = 1}), Error);
  ModelConfig c;
  c.d_model = 12, c.heads = 4, c.positional = "rope";  // d_k 3
  EXPECT_THROW(c.validate(), Error);
  c.head_dim = 4;
  EXPECT_NO_THROW(c.validate());
}

TEST(Rope, AttentionLayerGradcheckAndCacheEqualsFullForward) {
  Generator gen(1);
  MultiHeadAttention mha(8, {.heads = 2, .positional = "rope"}, {gen, DType::Float64});
  ASSERT_NE(mha.variant<Rope>(), nullptr);
  EXPECT_EQ(mha.num_parameters(), 4 * (8 * 8 + 8));  // no parameters of its own
  Tensor causal = causal_mask(3, 3, DType::Float64);
  EXPECT_GRADCHECK([&](const Vars& v) { return mha.forward(v[0], v[0], causal); },
                   {dense({2, 3, 8})});
  Variable x(dense({2, 3, 8}));
  expect_parameter_grads(mha, [&] { return mha.forward(x, x, causal); });

  // Chunks of new positions with a cache: each gives the full forward's rows.
  NoGradGuard no_grad;
  Tensor seq = dense({2, 6, 8});
  Tensor full = mha.forward(Variable(seq), Variable(seq), causal_mask(6, 6, DType::Float64)).data();
  for (const std::vector<int64_t>& chunks :
       {std::vector<int64_t>{1, 1, 1, 1, 1, 1}, std::vector<int64_t>{3, 1, 2}}) {
    KVCache cache;
    int64_t start = 0;
    for (int64_t n : chunks) {
      Variable part(seq.narrow(1, start, n));
      Tensor got =
          mha.forward(part, part, causal_mask(n, start + n, DType::Float64, start), &cache).data();
      expect_close(got, full.narrow(1, start, n), 1e-12, "from " + std::to_string(start));
      start += n;
    }
  }
}

ModelConfig tiny_rope() {
  ModelConfig c;
  c.vocab = 11, c.d_model = 16, c.heads = 2, c.layers = 2, c.d_ff = 32, c.max_len = 12;
  c.positional = "rope";
  return c;
}

TEST(Rope, DecoderLMHasNoPositionTableAndCachedGenerationMatches) {
  Generator gen(2);
  ModelConfig learned = tiny_rope();
  learned.positional = "learned";
  DecoderLM m(tiny_rope(), gen);
  EXPECT_FALSE(has_name(m, "embed.position.weight"));
  EXPECT_TRUE(has_name(m, "decoder.layers.0.self_attn.q_proj.weight"));
  EXPECT_EQ(m.num_parameters(), DecoderLM(learned, gen).num_parameters() - 12 * 16);
  for (const auto& layer : m.decoder->layers) EXPECT_NE(layer->self_attn->variant<Rope>(), nullptr);

  NoGradGuard no_grad;
  Tensor ids = randint(0, 11, {2, 9}, gen);
  Tensor full = m.forward(ids).data();
  std::vector<LayerCache> caches;
  for (int64_t t = 0; t < 9; ++t) {
    Tensor step = m.forward(ids.narrow(1, t, 1), Tensor(), &caches, t).data();
    expect_close(step.select(1, 0), full.select(1, t), 1e-5, "position " + std::to_string(t));
  }
  // A prompt of 3, then 6 tokens: the same with and without the cache.
  Generator g1(7), g2(7);
  Tensor prompt = ids.narrow(1, 0, 3);
  Tensor with = generate(m, prompt, {.new_tokens = 6, .temperature = 0.8}, g1);
  Tensor without =
      generate(m, prompt, {.new_tokens = 6, .temperature = 0.8, .use_cache = false}, g2);
  EXPECT_EQ(with.to_vector(), without.to_vector());
}

TEST(Rope, EncoderDecoderTurnsSelfAttentionOnlyAndDecodesAlikeWithTheCache) {
  Generator gen(3);
  EncoderDecoder m(tiny_rope(), gen);
  EXPECT_FALSE(has_name(m, "embed.position.weight"));
  for (const auto& layer : m.encoder->layers) EXPECT_NE(layer->self_attn->variant<Rope>(), nullptr);
  for (const auto& layer : m.decoder->layers) {
    EXPECT_NE(layer->self_attn->variant<Rope>(), nullptr);
    EXPECT_EQ(layer->cross_attn->variant<Rope>(), nullptr);  // two sequences' positions
  }
  Tensor src = randint(3, 11, {3, 7}, gen);
  Tensor pad = zeros({3, 7});
  pad.set({1, 6}, 1);
  EXPECT_EQ(m.greedy_decode(src, pad, 1, 2, 10, true).to_vector(),
            m.greedy_decode(src, pad, 1, 2, 10, false).to_vector());
}

}  // namespace
}  // namespace gradflow::nn
