// The scale mode softcap (nn/softcap.h): the cap against numbers worked out
// by hand (a cap written tanh(x c) / c, or the scale outside the tanh, fails
// them), a layer against the hand composition, gradients in float64 on
// every layout, and the mode's value and default reaching the layer.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "nn/attention.h"
#include "nn/masks.h"
#include "nn/softcap.h"
#include "tests/nn/nn_check.h"

namespace gradflow::nn {
namespace {
using namespace gradflow::testing;

// c = 2: 2 tanh(x / 2) at x = 0, 1, 3, -6, 40 (to 16 digits, by Python's
// math.tanh). tanh(2x) / 2 would give 0, 0.482, 0.49999, -0.5, 0.5.
TEST(SoftCap, CapsTheScoresAsWorkedOutByHand) {
  SoftCap cap(2);
  ASSERT_TRUE(cap.transforms_scores());
  const Tensor logits = from_vector({0, 1, 3, -6, 40}, {1, 1, 1, 5}, DType::Float64);
  expect_near_vec(cap.transform_scores(Variable(logits), {}).data(),
                  {0, 0.9242343145200195, 1.8102965072897328, -1.990109507373461, 2.0}, 1e-15);
  EXPECT_THROW(SoftCap(0), Error);
  EXPECT_THROW(SoftCap(-1), Error);
  EXPECT_THROW(SoftCap(std::numeric_limits<double>::infinity()), Error);
}

// Float64 central differences on every layout the autograd tests use, and
// a (1, 1, T, S) tensor broadcast over B and H (stride 0).
TEST(SoftCap, GradientsOnEveryLayout) {
  SoftCap cap(1.5);
  auto fn = [&](const Vars& v) { return cap.transform_scores(v[0] * 3.0, {}); };
  for (const Tensor& x : {dense({2, 2, 3, 4}), transposed({2, 2, 3, 4}), strided({2, 2, 3, 4}),
                          dense({1, 1, 3, 4}).expand({2, 2, 3, 4})})
    EXPECT_GRADCHECK(fn, {x});
}

// softmax(c tanh(q k^T / (sqrt(d) c)) + mask) v per head, merged and
// projected, by composing plain ops.
Tensor by_hand(const MultiHeadAttention& mha, const Tensor& x, double c, const Tensor& mask) {
  const int64_t b = x.shape()[0], t = x.shape()[1], h = mha.heads(), d = mha.d_k();
  auto heads = [&](const Linear& proj) {
    return transpose(reshape(proj.forward(Variable(x)), {b, t, h, d}), 1, 2);
  };
  Variable logits = matmul(heads(*mha.q_proj), transpose(heads(*mha.k_proj), -1, -2)) *
                    (1 / std::sqrt(static_cast<double>(d)));
  Variable capped = tanh(logits / c) * c;
  if (mask.defined()) capped = capped + Variable(mul(mask, -1e300));
  Variable y = matmul(softmax(capped, -1), heads(*mha.v_proj));
  return mha.o_proj->forward(reshape(transpose(y, 1, 2), {b, t, h * d})).data();
}

TEST(SoftCap, ALayerMatchesTheHandComputation) {
  Generator gen(1);
  MultiHeadAttention mha(8, {.heads = 2, .scale = "softcap:1.5"}, {gen, DType::Float64});
  ASSERT_NE(mha.variant<SoftCap>(), nullptr);
  EXPECT_EQ(mha.variant<SoftCap>()->cap(), 1.5);
  EXPECT_EQ(mha.num_parameters(), 4 * (8 * 8 + 8));  // no parameters of its own
  // Inputs large enough that many logits pass the cap, where it matters.
  const Tensor x = mul(dense({2, 5, 8}), 3.0);
  mha.record_probe = true;
  const Tensor out = mha.forward(Variable(x), Variable(x)).data();
  mha.record_probe = false;
  EXPECT_GT(max(abs(mha.probe.logits.data())).item(), 3.0);  // before the cap
  expect_close(out, by_hand(mha, x, 1.5, Tensor()), 1e-12);
  const Tensor causal = causal_mask(5, 5, DType::Float64);
  expect_close(mha.forward(Variable(x), Variable(x), causal).data(), by_hand(mha, x, 1.5, causal),
               1e-12);
  // Differentiable in its input and its parameters, through the cap.
  EXPECT_GRADCHECK(
      [&](const Vars& v) { return mha.forward(v[0], v[0], causal_mask(3, 3, DType::Float64)); },
      {mul(dense({2, 3, 8}), 3.0)});
  Variable small(mul(dense({2, 3, 8}), 3.0));
  expect_parameter_grads(mha, [&] { return mha.forward(small, small); });
}

// A bare softcap is c = 30 and is written with it; softcap:<c> reaches the
// variant; a value that is not a positive float is refused.
TEST(SoftCap, TheModesValueAndDefault) {
  const ScaleMode bare = ScaleMode::parse("softcap");
  EXPECT_EQ(bare.constant(), 30);
  EXPECT_EQ(bare.name(), "softcap:30");
  EXPECT_EQ(ScaleMode::parse("softcap:30"), bare);
  EXPECT_DOUBLE_EQ(bare.value(16), 0.25);  // the fixed factor is 1/sqrt(d_k)
  MultiHeadAttention a(8, {.heads = 2, .scale = "softcap:2.5"});
  EXPECT_EQ(a.variant<SoftCap>()->cap(), 2.5);
  EXPECT_EQ(MultiHeadAttention(8, {.heads = 2, .scale = bare}).variant<SoftCap>()->cap(), 30);
  for (const char* bad : {"softcap:", "softcap:0", "softcap:-1", "softcap:x", "softcap:inf"})
    EXPECT_THROW(ScaleMode::parse(bad), Error) << bad;
}

}  // namespace
}  // namespace gradflow::nn
