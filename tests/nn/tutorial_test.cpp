// The code of docs/tutorial_add_a_layer.md, compiled and run, so the
// tutorial cannot drift from the library: every ```cpp block of the tutorial
// is here byte for byte (Tutorial.SnippetsAreInTheTest, in
// tests/CMakeLists.txt, checks it), in namespace tutorial.
//
// A reader who follows the tutorial moves its code into the library and its
// tests beside the others, under the same names. Each step is then compiled
// from the reader's file only: the step's blocks here are skipped once its
// file exists (__has_include), so the two copies never meet (an ambiguous
// call, a test defined twice).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "nn/attention.h"
#include "nn/attention_variant.h"
#include "nn/linear.h"
#include "nn/models.h"
#include "nn/module.h"
#include "tensor/map.h"
#include "tensor/ops.h"

namespace tutorial {
using namespace gradflow;

// ---- Steps 1 and 2: an op with its backward, and its tests -----------------
#if !__has_include("autograd/softplus.cpp")
// softplus(x) = log(1 + exp(x)); d/dx = sigmoid(x) = 1 / (1 + exp(-x)).
Variable softplus(const Variable& x) {
  const Tensor xd = x.data();
  // Stable: log1p(exp(x)) overflows for large x, max(x, 0) + log1p(exp(-|x|)) does not.
  Tensor y = map_unary(xd, "softplus", [](auto v) {
    return std::max(v, decltype(v){0}) + std::log1p(std::exp(-std::abs(v)));
  });
  return make_result(y, "softplus", {x}, [xd](const Tensor& g) {
    return std::vector<Tensor>{map_binary(g, xd, "softplus_backward",
                                          [](auto gv, auto v) { return gv / (1 + std::exp(-v)); })};
  });
}

TEST(Softplus, ValuesByHand) {
  Variable x(from_vector({-30, 0, 2, 100}, DType::Float64));
  std::vector<double> y = softplus(x).data().to_vector();
  EXPECT_NEAR(y[0], std::exp(-30.0), 1e-20);  // log(1 + e) = e for a tiny e
  EXPECT_NEAR(y[1], std::log(2.0), 1e-15);
  EXPECT_NEAR(y[2], 2.1269280110429727, 1e-15);  // log(1 + e^2)
  EXPECT_EQ(y[3], 100);                          // no overflow
}

TEST(Softplus, GradcheckOnEveryLayout) {
  Generator gen(0);
  auto fn = [](const std::vector<Variable>& v) { return softplus(v[0]); };
  Tensor x = randn({3, 4}, gen, DType::Float64);
  for (Tensor input : {x, x.transpose(0, 1), x.slice(1, 0, 4, 2)}) {
    GradcheckResult r = gradcheck(fn, {input});
    EXPECT_TRUE(r.ok) << r.message;
  }
}
#endif

// ---- Steps 3 and 4: a layer built from it, and its tests -------------------
#if !__has_include("nn/gated_feed_forward.h")
// y = out(softplus(gate(x)) * up(x)); x is (..., dim), y (..., dim).
class GatedFeedForward : public nn::Module {
 public:
  GatedFeedForward(int64_t dim, int64_t hidden, nn::Init init = {}) {
    auto linear = [&](int64_t from, int64_t to) {
      return std::make_shared<nn::Linear>(from, to, nn::LinearOptions{}, init);
    };
    gate = register_module("gate", linear(dim, hidden));
    up = register_module("up", linear(dim, hidden));
    out = register_module("out", linear(hidden, dim));
  }
  Variable forward(const Variable& x) const {
    return out->forward(softplus(gate->forward(x)) * up->forward(x));
  }
  std::string describe() const override { return "GatedFeedForward"; }
  std::shared_ptr<nn::Linear> gate, up, out;
};

TEST(GatedFeedForward, NamesShapesAndGradients) {
  Generator gen(1);
  GatedFeedForward layer(4, 6, {gen, DType::Float64});
  EXPECT_EQ(layer.num_parameters(), 3 * 4 * 6 + 6 + 6 + 4);
  EXPECT_EQ(layer.named_parameters()[0].first, "gate.weight");
  // The gradient with respect to the input.
  GradcheckResult r = gradcheck([&](const std::vector<Variable>& v) { return layer.forward(v[0]); },
                                {randn({2, 3, 4}, gen, DType::Float64)});
  EXPECT_TRUE(r.ok) << r.message;
  // And every parameter's gradient, element by element.
  Variable x(randn({2, 3, 4}, gen, DType::Float64));
  r = check_parameter_grads(layer.named_parameters(), [&] { return layer.forward(x); });
  EXPECT_TRUE(r.ok) << r.message;  // e.g. "d(L)/d(out.bias[2]): analytical ... vs numerical ..."
}
#endif

// ---- Steps 5 and 6: an attention variant, and its tests --------------------
#if !__has_include("nn/distance_penalty.h")
// logits[b, h, i, j] -= softplus(weight[h]) * |position_i - position_j|
class DistancePenalty : public nn::AttentionVariant {
 public:
  explicit DistancePenalty(int64_t heads, nn::Init init = {}) : heads_(heads) {
    weight = register_parameter("weight", zeros({heads}, init.dtype));
  }
  bool transforms_scores() const override { return true; }
  Variable transform_scores(const Variable& logits,
                            const nn::AttentionPositions& at) const override {
    const int64_t t = logits.shape()[2], s = logits.shape()[3];
    Tensor distance = zeros({t, s}, logits.dtype());
    for (int64_t i = 0; i < t; ++i)
      for (int64_t j = 0; j < s; ++j)
        distance.set({i, j}, std::abs(static_cast<double>(at.query_start + i - at.key_start - j)));
    // Shape: slope (H, 1, 1) * distance (T, S) -> (H, T, S), broadcast over B.
    Variable slope = reshape(softplus(weight), {heads_, 1, 1});
    return logits - slope * Variable(distance);
  }
  std::string describe() const override { return "DistancePenalty"; }
  Variable weight;  // (H)

 private:
  int64_t heads_;
};

TEST(DistancePenalty, PlugsIntoAttention) {
  Generator gen(2);
  nn::MultiHeadAttention attention(8, {.heads = 2}, {gen, DType::Float64});
  Variable x(randn({2, 5, 8}, gen, DType::Float64));
  const Tensor plain = attention.forward(x, x).data();
  attention.add_variant("distance", std::make_shared<DistancePenalty>(2, DType::Float64));
  EXPECT_EQ(attention.named_parameters().back().first, "distance.weight");
  EXPECT_GT(max(abs(sub(attention.forward(x, x).data(), plain))).item(), 1e-3);
  // The input's gradient, then every parameter's, the slopes' included.
  const Tensor causal = nn::causal_mask(5, 5, DType::Float64);
  GradcheckResult r = gradcheck(
      [&](const std::vector<Variable>& v) { return attention.forward(v[0], v[0], causal); },
      {randn({1, 5, 8}, gen, DType::Float64)});
  EXPECT_TRUE(r.ok) << r.message;
  r = check_parameter_grads(attention.named_parameters(),
                            [&] { return attention.forward(x, x, causal); });
  EXPECT_TRUE(r.ok) << r.message;
}

TEST(DistancePenalty, InEveryLayerOfAModelWithTheCache) {
  nn::ModelConfig config;
  config.vocab = 10, config.d_model = 8, config.heads = 2, config.layers = 2, config.max_len = 8;
  Generator gen(3);
  nn::DecoderLM model(config, gen);
  for (const auto& layer : model.decoder->layers)
    layer->self_attn->add_variant("distance", std::make_shared<DistancePenalty>(config.heads));
  const auto names = model.named_parameters();
  EXPECT_TRUE(std::any_of(names.begin(), names.end(), [](const auto& kv) {
    return kv.first == "decoder.layers.1.self_attn.distance.weight";
  }));
  // Generation with the KV cache sees the true positions: the same logits.
  NoGradGuard no_grad;
  const Tensor ids = randint(0, 10, {2, 6}, gen);
  const Tensor full = model.forward(ids).data();
  std::vector<nn::LayerCache> caches;
  for (int64_t t = 0; t < 6; ++t) {
    const Tensor step = model.forward(ids.narrow(1, t, 1), Tensor(), &caches, t).data();
    EXPECT_LT(max(abs(sub(step.select(1, 0), full.select(1, t)))).item(), 1e-5) << t;
  }
}
#endif

}  // namespace tutorial
