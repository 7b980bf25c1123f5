// log_n and ssmax (nn/length_scale.h): the keys each query sees, counted
// from every mask layout; the factors on q against hand computations;
// ssmax's start; gradient checks on every layout and through s; and models
// built with them generating the same with and without the KV cache.
#include <gtest/gtest.h>

#include <cmath>

#include "nn/generate.h"
#include "nn/length_scale.h"
#include "nn/masks.h"
#include "nn/models.h"
#include "tests/nn/nn_check.h"

namespace gradflow::nn {
namespace {
using namespace gradflow::testing;

std::vector<double> counts(const Tensor& mask, int64_t s) {
  return visible_keys({.key_length = s, .mask = mask}, DType::Float64).to_vector();
}

TEST(VisibleKeys, CountsWhatEachQuerySees) {
  // No mask: every key.
  EXPECT_EQ(counts(Tensor(), 7), std::vector<double>{7});
  // Causal, 3 new queries after 2 cached keys: they see 3, 4 and 5 keys.
  EXPECT_EQ(counts(causal_mask(3, 5, DType::Float64, 2), 5), (std::vector<double>{3, 4, 5}));
  // Key padding (B, 1, 1, S): 4 keys of which 1 and then 3 are padding.
  Tensor pad = from_vector({0, 0, 0, 1, 0, 1, 1, 1}, {2, 4});
  EXPECT_EQ(counts(key_padding_mask(pad), 4), (std::vector<double>{3, 1}));
  // Both (B, 1, T, S); a query that sees nothing counts 1 (its output is 0).
  Tensor both = combine_masks(causal_mask(4, 4), key_padding_mask(pad));
  EXPECT_EQ(counts(both, 4), (std::vector<double>{1, 2, 3, 3, 1, 1, 1, 1}));
  Tensor none_seen = full({1, 3}, 1.0);
  EXPECT_EQ(counts(none_seen, 3), std::vector<double>{1});
}

TEST(LogNScale, MultipliesEachQueryByLogItsKeysOverSqrtDk) {
  // Queries of ones, causal over 3 positions, d_k = 4: rows times log(1)/2,
  // log(2)/2, log(3)/2.
  LogNScale log_n(4);
  Tensor q = ones({1, 2, 3, 4}, DType::Float64);
  AttentionPositions at{.key_length = 3, .mask = causal_mask(3, 3, DType::Float64)};
  std::vector<double> got = log_n.transform_query(Variable(q), at).data().to_vector();
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t r = 0; r < 3; ++r)
      for (int64_t c = 0; c < 4; ++c)
        EXPECT_NEAR(got[(h * 3 + r) * 4 + c], std::log(r + 1.0) / 2, 1e-15) << h << r << c;
  // Without a mask all 3 keys count, at every row.
  for (double x : log_n.transform_query(Variable(q), {.key_length = 3}).data().to_vector())
    EXPECT_NEAR(x, std::log(3.0) / 2, 1e-15);
}

TEST(LogNScale, AttentionWeightsByHand) {
  // One head, d_k = 1, two keys: query 1 sees both, so its logits are
  // log(2) q k_j; query 0 sees only key 0 and takes its value.
  Generator gen(1);
  MultiHeadAttention mha(1, {.heads = 1, .scale = ScaleMode::parse("log_n")},
                         Init(gen, DType::Float64));
  for (auto* lin : {mha.q_proj.get(), mha.k_proj.get(), mha.v_proj.get(), mha.o_proj.get()}) {
    Tensor w = lin->weight.data(), b = lin->bias.data();
    w.fill_(1);
    b.fill_(0);
  }
  Tensor x = from_vector({0.5, 2.0}, {1, 2, 1}, DType::Float64);
  std::vector<double> y =
      mha.forward(Variable(x), Variable(x), causal_mask(2, 2, DType::Float64)).data().to_vector();
  EXPECT_NEAR(y[0], 0.5, 1e-15);
  const double l0 = std::log(2.0) * 2.0 * 0.5, l1 = std::log(2.0) * 2.0 * 2.0;
  const double w0 = std::exp(l0) / (std::exp(l0) + std::exp(l1));
  EXPECT_NEAR(y[1], w0 * 0.5 + (1 - w0) * 2.0, 1e-14);
}

TEST(ScalableSoftmax, StartsAtInvSqrtDkAtTheBuiltLengthAndPerHead) {
  Generator gen(0);
  ScalableSoftmax ssmax(2, 16, 64, Init(gen, DType::Float64));
  EXPECT_DOUBLE_EQ(ssmax_start(16, 64), 1 / (4 * std::log(64.0)));
  Tensor q = dense({1, 2, 1, 16});
  // A query that sees L = 64 keys: exactly q / sqrt(d_k).
  expect_close(ssmax.transform_query(Variable(q), {.key_length = 64}).data(), mul(q, 0.25), 1e-15);
  // Head 1's s doubled: head 1 doubles, head 0 does not.
  Tensor s = ssmax.s.data();
  s.set({1}, 2 * s.at({1}));
  Tensor got = ssmax.transform_query(Variable(q), {.key_length = 64}).data();
  expect_close(got.select(1, 0), mul(q.select(1, 0), 0.25), 1e-15);
  expect_close(got.select(1, 1), mul(q.select(1, 1), 0.5), 1e-15);
  EXPECT_THROW(ssmax.transform_query(Variable(dense({1, 3, 1, 16})), {.key_length = 4}), Error);
  EXPECT_THROW(ScalableSoftmax(2, 16, 1), Error);  // log 1 = 0: no start
  EXPECT_THROW(ScalableSoftmax(0, 16, 8), Error);
  EXPECT_THROW(LogNScale(0), Error);
}

TEST(LengthScale, GradcheckOnEveryLayoutAndThroughS) {
  const Tensor causal = causal_mask(3, 3, DType::Float64);
  const Tensor padded =
      key_padding_mask(from_vector({0, 0, 1, 0, 0, 0}, {2, 3}, DType::Float64));  // (2, 1, 1, 3)
  Generator gen(2);
  ScalableSoftmax ssmax(2, 4, 8, Init(gen, DType::Float64));
  LogNScale log_n(4);
  for (const Tensor& mask : {Tensor(), causal, padded}) {
    const AttentionPositions at{.key_length = 3, .mask = mask};
    for (const AttentionVariant* v : {static_cast<const AttentionVariant*>(&log_n),
                                      static_cast<const AttentionVariant*>(&ssmax)}) {
      auto fn = [&](const Vars& x) { return v->transform_query(x[0], at); };
      EXPECT_GRADCHECK(fn, {dense({2, 2, 3, 4})});
      EXPECT_GRADCHECK(fn, {transposed({2, 2, 3, 4})});
      EXPECT_GRADCHECK(fn, {strided({2, 2, 3, 4})});
    }
    Variable q(dense({2, 2, 3, 4}));
    expect_parameter_grads(ssmax, [&] { return ssmax.transform_query(q, at); });
  }
}

// Greedy generation of a DecoderLM is the same with the KV cache as without:
// each cached step counts the cache's keys as the full forward does.
TEST(LengthScale, CachedGenerationMatchesTheFullForward) {
  for (const char* mode : {"log_n", "ssmax"}) {
    SCOPED_TRACE(mode);
    ModelConfig c;
    c.vocab = 9, c.d_model = 8, c.heads = 2, c.layers = 2, c.d_ff = 16, c.max_len = 12;
    c.scale = ScaleMode::parse(mode);
    Generator gen(3);
    DecoderLM model(c, Init(gen, DType::Float64));
    Tensor prompt = from_vector({1, 4, 2}, {1, 3}, DType::Int64);
    GenerateOptions with{.new_tokens = 8, .temperature = 0, .use_cache = true};
    GenerateOptions without = with;
    without.use_cache = false;
    EXPECT_EQ(generate(model, prompt, with, gen).to_vector(),
              generate(model, prompt, without, gen).to_vector());
  }
}

}  // namespace
}  // namespace gradflow::nn
