// The models: parameter counts equal to the PyTorch peer's, dotted names,
// causality, cross-attention reading the memory, KV-cache equivalence.
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/gradcheck.h"
#include "nn/generate.h"
#include "nn/models.h"
#include "tensor/ops.h"

namespace gradflow::nn {
namespace {

ModelConfig seq2seq_tiny() {
  ModelConfig c;
  c.vocab = 16, c.d_model = 64, c.heads = 4, c.layers = 2, c.d_ff = 256, c.max_len = 16;
  return c;
}

ModelConfig gpt_small() {
  ModelConfig c;
  c.vocab = 96, c.d_model = 256, c.heads = 8, c.layers = 4, c.d_ff = 1024, c.max_len = 128;
  return c;
}

TEST(Models, ParameterCountsMatchThePeer) {
  Generator gen(0);
  EXPECT_EQ(EncoderDecoder(seq2seq_tiny(), gen).num_parameters(), 236688);
  EXPECT_EQ(DecoderLM(gpt_small(), gen).num_parameters(), 3241568);
}

TEST(Models, DottedParameterNames) {
  Generator gen(0);
  EncoderDecoder m(seq2seq_tiny(), gen);
  std::vector<std::string> names;
  for (auto& [name, p] : m.named_parameters()) names.push_back(name);
  auto has = [&](const std::string& n) {
    return std::find(names.begin(), names.end(), n) != names.end();
  };
  EXPECT_TRUE(has("decoder.layers.0.self_attn.q_proj.weight"));
  EXPECT_TRUE(has("decoder.layers.1.cross_attn.v_proj.bias"));
  EXPECT_TRUE(has("encoder.layers.1.ff.fc2.weight"));
  EXPECT_TRUE(has("embed.token.weight"));
  EXPECT_TRUE(has("embed.position.weight"));
  EXPECT_TRUE(has("lm_head.weight"));
  EXPECT_EQ(names.size(), m.parameters().size());
}

TEST(Models, CausalDecoderIgnoresFutureTokens) {
  Generator gen(1);
  ModelConfig c = seq2seq_tiny();
  DecoderLM m(c, gen);
  Tensor ids = randint(0, c.vocab, {2, 8}, gen);
  Tensor changed = ids.clone();
  changed.set({0, 6}, (ids.at({0, 6}) + 1.0) - (ids.at({0, 6}) + 1.0 >= c.vocab ? c.vocab : 0));
  Tensor a = m.forward(ids).data(), b = m.forward(changed).data();
  for (int64_t t = 0; t < 8; ++t) {
    double diff = max(abs(sub(a.select(1, t), b.select(1, t)))).item();
    if (t < 6) {
      EXPECT_EQ(diff, 0) << "position " << t << " saw the future";
    } else if (t == 6) {
      EXPECT_GT(diff, 0) << "position 6 ignores its own token";
    }
  }
}

TEST(Models, CrossAttentionReadsTheMemory) {
  Generator gen(2);
  EncoderDecoder m(seq2seq_tiny(), gen);
  Tensor src = randint(3, 16, {1, 6}, gen), tgt = randint(3, 16, {1, 5}, gen);
  Tensor other = src.clone();
  other.set({0, 2}, src.at({0, 2}) == 3 ? 4 : 3);
  double diff = max(abs(sub(m.forward(src, tgt).data(), m.forward(other, tgt).data()))).item();
  EXPECT_GT(diff, 1e-4);
}

TEST(Models, KVCacheGivesTheSameLogits) {
  Generator gen(3);
  ModelConfig c = seq2seq_tiny();
  DecoderLM m(c, gen);
  Tensor ids = randint(0, c.vocab, {2, 7}, gen);
  NoGradGuard no_grad;
  Tensor full_logits = m.forward(ids).data();
  std::vector<LayerCache> caches;
  for (int64_t t = 0; t < 7; ++t) {
    Tensor step = m.forward(ids.narrow(1, t, 1).contiguous(), Tensor(), &caches, t).data();
    double diff = max(abs(sub(step.select(1, 0), full_logits.select(1, t)))).item();
    EXPECT_LT(diff, 1e-5) << "position " << t;
  }
}

TEST(Models, GreedyDecodeSameWithAndWithoutCache) {
  Generator gen(4);
  EncoderDecoder m(seq2seq_tiny(), gen);
  Tensor src = randint(3, 16, {3, 6}, gen);
  Tensor pad = zeros({3, 6});
  Tensor with = m.greedy_decode(src, pad, 1, 2, 10, true);
  Tensor without = m.greedy_decode(src, pad, 1, 2, 10, false);
  EXPECT_EQ(with.to_vector(), without.to_vector());
}

TEST(Models, BadConfigsThrow) {
  ModelConfig c = seq2seq_tiny();
  c.heads = 5;
  EXPECT_THROW(EncoderDecoder{c}, Error);
  c = seq2seq_tiny();
  c.d_ff = 0;
  EXPECT_THROW(DecoderLM{c}, Error);
}

}  // namespace
}  // namespace gradflow::nn

namespace gradflow::nn {
namespace {

TEST(Generate, SameTokensWithAndWithoutCache) {
  Generator init(5);
  ModelConfig c;
  c.vocab = 12, c.d_model = 16, c.heads = 2, c.layers = 2, c.d_ff = 32, c.max_len = 20;
  DecoderLM m(c, init);
  Tensor prompt = randint(0, 12, {2, 3}, init);
  for (double temperature : {0.0, 0.8}) {
    for (int64_t top_k : {0, 3}) {
      Generator g1(9), g2(9);
      GenerateOptions with{
          .new_tokens = 12, .temperature = temperature, .top_k = top_k, .use_cache = true};
      GenerateOptions without = with;
      without.use_cache = false;
      Tensor a = generate(m, prompt, with, g1), b = generate(m, prompt, without, g2);
      EXPECT_EQ(a.shape(), (Shape{2, 15}));
      EXPECT_EQ(a.to_vector(), b.to_vector())
          << "temperature " << temperature << " top_k " << top_k;
    }
  }
}

TEST(Generate, TopKOneIsGreedyAndSamplingFollowsTheDistribution) {
  Generator gen(1);
  Tensor logits = from_vector({0.0, std::log(3.0), -1e9, 0.0, 0.0, 5.0}, {2, 3});
  EXPECT_EQ(sample_tokens(logits, 1.0, 1, gen).to_vector(), (std::vector<double>{1, 2}));
  EXPECT_EQ(sample_tokens(logits, 0.0, 0, gen).to_vector(), (std::vector<double>{1, 2}));
  // Row 0: p = (1/4, 3/4, 0): token 2 never, token 1 about 75% of draws.
  int ones = 0;
  for (int i = 0; i < 4000; ++i) {
    double t = sample_tokens(logits, 1.0, 0, gen).at({0, 0});
    EXPECT_NE(t, 2);
    ones += t == 1;
  }
  EXPECT_NEAR(ones / 4000.0, 0.75, 0.03);
}

}  // namespace
}  // namespace gradflow::nn

namespace gradflow::nn {
namespace {

TEST(Models, PostLayerNormIsSelectableAndDifferentiable) {
  ModelConfig c;
  c.vocab = 7, c.d_model = 8, c.heads = 2, c.layers = 1, c.d_ff = 8, c.max_len = 5;
  c.norm = NormPlacement::Post;
  Generator g1(3), g2(3);
  EncoderDecoder post(c, g1);
  c.norm = NormPlacement::Pre;
  EncoderDecoder pre(c, g2);
  EXPECT_EQ(post.num_parameters(), pre.num_parameters());  // same weights, other wiring
  Tensor src = randint(0, 7, {2, 5}, g1), tgt = randint(0, 7, {2, 4}, g1);
  Tensor a = post.forward(src, tgt).data(), b = pre.forward(src, tgt).data();
  EXPECT_GT(max(abs(sub(a, b))).item(), 1e-3);
  // Post-LN: every sublayer output passes a LayerNorm, so each position of
  // the decoder output before the head has mean 0 and variance 1.
  Variable x = post.decoder->forward(post.embed->forward(tgt), causal_mask(4, 4),
                                     post.encode(src, Tensor()), Tensor());
  Tensor m = mean(x.data(), {-1}), v = var(x.data(), {-1}, false, 0);
  for (double mv : m.to_vector()) EXPECT_NEAR(mv, 0, 1e-5);
  for (double vv : v.to_vector()) EXPECT_NEAR(vv, 1, 1e-3);
  // And the whole model is differentiable in float64.
  ModelConfig d = c;
  d.norm = NormPlacement::Post;
  Generator g3(4);
  EncoderDecoder tiny(d, {g3, DType::Float64});
  GradcheckResult r = gradcheck(
      [&](const std::vector<Variable>& in) {
        return tiny.decoder->forward(in[0], causal_mask(3, 3, DType::Float64), in[1], Tensor());
      },
      {randn({1, 3, 8}, g3, DType::Float64), randn({1, 4, 8}, g3, DType::Float64)});
  EXPECT_TRUE(r.ok) << r.message;
}

}  // namespace
}  // namespace gradflow::nn

namespace gradflow::nn {
namespace {

// Every attention layer of every model kind, self- and cross-attention
// alike, has d_k = head_dim when head_dim is set: q, k, v map d_model to
// heads * head_dim and o maps it back. (Cross-attention once dropped
// head_dim and silently kept d_model / heads.)
void expect_head_dim_everywhere(const Module& model, int64_t d_model, int64_t inner,
                                int64_t expected_layers) {
  int64_t seen = 0;
  for (const auto& [name, p] : model.named_parameters()) {
    const auto ends = [&name](const std::string& tail) {
      return name.size() >= tail.size() &&
             name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
    };
    if (ends("q_proj.weight") || ends("k_proj.weight") || ends("v_proj.weight")) {
      EXPECT_EQ(p.shape(), (Shape{inner, d_model})) << name;
      seen += ends("q_proj.weight");
    } else if (ends("o_proj.weight")) {
      EXPECT_EQ(p.shape(), (Shape{d_model, inner})) << name;
    }
  }
  EXPECT_EQ(seen, expected_layers);
}

TEST(Models, HeadDimReachesEveryAttentionLayer) {
  ModelConfig c;
  c.vocab = 11, c.d_model = 64, c.heads = 2, c.layers = 2, c.d_ff = 32, c.max_len = 9;
  c.head_dim = 16;  // d_k 16, not d_model / heads = 32
  Generator gen(5);
  EncoderDecoder seq2seq(c, gen);
  expect_head_dim_everywhere(seq2seq, 64, 32, 2 + 2 * 2);  // encoder self, decoder self + cross
  for (const auto& layer : seq2seq.decoder->layers) {
    EXPECT_EQ(layer->self_attn->d_k(), 16);
    EXPECT_EQ(layer->cross_attn->d_k(), 16);
  }
  DecoderLM lm(c, gen);
  expect_head_dim_everywhere(lm, 64, 32, 2);
  EncoderClassifier classifier(/*classes=*/3, c, gen);
  expect_head_dim_everywhere(classifier, 64, 32, 2);
  // And the models run with it: logits of the right shape.
  Tensor src = randint(0, 11, {2, 5}, gen), tgt = randint(0, 11, {2, 4}, gen);
  EXPECT_EQ(seq2seq.forward(src, tgt).shape(), (Shape{2, 4, 11}));
  EXPECT_EQ(lm.forward(tgt).shape(), (Shape{2, 4, 11}));
  EXPECT_EQ(classifier.forward(src).shape(), (Shape{2, 3}));
}

}  // namespace
}  // namespace gradflow::nn
