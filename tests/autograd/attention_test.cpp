// fused_attention against its composed reference, fused_attention_reference
// (values and gradients at q, k and v under every mask kind and mask
// layout), and gradient checks of both.
#include <cmath>
#include <string>

#include "check.h"

namespace gradflow {
namespace {
using namespace testing;
using Vars = std::vector<Variable>;

constexpr int64_t B = 2, H = 3, T = 4, S = 5;

// The masks attention sees: none, causal (T, S), key padding (B, 1, 1, S)
// with batch 1 hiding every key, and (B, 1, T, S) with one fully masked query.
std::vector<std::pair<std::string, Tensor>> attention_masks() {
  Tensor causal = zeros({T, S}, DType::Float64);
  for (int64_t i = 0; i < T; ++i)
    for (int64_t j = i + S - T + 1; j < S; ++j) causal.set({i, j}, 1);
  Tensor padding = from_vector({0, 0, 0, 1, 1, 1, 1, 1, 1, 1}, {B, 1, 1, S}, DType::Float64);
  Tensor per_query = zeros({B, 1, T, S}, DType::Float32);  // float32 on float64 scores too
  for (int64_t j = 0; j < S; ++j) per_query.set({0, 0, 2, j}, 1);
  per_query.set({1, 0, 0, 1}, 1);
  return {{"none", Tensor()}, {"causal", causal}, {"padding", padding}, {"per query", per_query}};
}

void expect_close(const Tensor& a, const Tensor& b, double tol, const std::string& what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  std::vector<double> x = a.to_vector(), y = b.to_vector();
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_NEAR(x[i], y[i], tol * (1 + std::abs(y[i]))) << what << " at " << i;
}

using AttentionFn = Variable (*)(const Variable&, const Variable&, const Variable&, double,
                                 const Tensor&);

// The output and the gradients at q, k and v of sum(attention(q, k, v) * r).
std::vector<Tensor> run(AttentionFn attention, const Tensor& q, const Tensor& k, const Tensor& v,
                        const Tensor& r, double scale, const Tensor& mask) {
  Variable vq(q, true), vk(k, true), vv(v, true);
  Variable out = attention(vq, vk, vv, scale, mask);
  sum(out * Variable(r)).backward();
  return {out.data(), vq.grad(), vk.grad(), vv.grad()};
}

// The same values and gradients (at q, k and v) as its reference, under
// every mask, with S != T as in cross-attention; and a gradcheck.
TEST(FusedAttention, MatchesComposedAndGradchecks) {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    const double tol = dtype == DType::Float32 ? 1e-5 : 1e-12;
    const Tensor q = dense({B, H, T, 6}).to(dtype), k = dense({B, H, S, 6}).to(dtype),
                 v = dense({B, H, S, 7}).to(dtype), r = dense({B, H, T, 7}).to(dtype);
    for (const auto& [name, mask] : attention_masks()) {
      const std::string what = std::string(dtype_name(dtype)) + " " + name;
      const std::vector<Tensor> got = run(fused_attention, q, k, v, r, 0.41, mask),
                                want = run(fused_attention_reference, q, k, v, r, 0.41, mask);
      for (size_t i = 0; i < got.size(); ++i)
        expect_close(got[i], want[i], tol, what + " output/dq/dk/dv " + std::to_string(i));
    }
  }
  const Tensor causal = attention_masks()[1].second;
  EXPECT_GRADCHECK([&](const Vars& v) { return fused_attention(v[0], v[1], v[2], 0.7, causal); },
                   {dense({2, T, 3}), transposed({2, S, 3}), dense({2, S, 2})});
}

TEST(FusedAttention, MasksOfOtherLayoutsMatchTheReference) {
  // A mask repeated along S (copied to rows first), a 0-d one, and a
  // transposed (non-contiguous) one, in another dtype than q, k and v.
  const Tensor q = dense({2, T, 3}), k = dense({2, S, 3}), v = dense({2, S, 2}),
               r = dense({2, T, 2});
  Tensor transposed_mask = zeros({S, T});
  transposed_mask.set({1, 0}, 1);
  transposed_mask.set({2, 2}, 1);
  for (const Tensor& mask :
       {from_vector({0, 1, 0, 0}, {T, 1}), zeros({}), transposed_mask.transpose(0, 1)}) {
    const std::vector<Tensor> got = run(fused_attention, q, k, v, r, 0.8, mask),
                              want = run(fused_attention_reference, q, k, v, r, 0.8, mask);
    for (size_t i = 0; i < got.size(); ++i)
      expect_close(got[i], want[i], 1e-14,
                   "mask " + shape_str(mask.shape()) + " output/dq/dk/dv " + std::to_string(i));
  }
}

// Heads as MultiHeadAttention makes them, views of (B, T, H * D) projections,
// and batch axes that broadcast (one k and v for every head).
TEST(FusedAttention, GradchecksOnSplitHeadsAndBroadcastBatches) {
  const Tensor causal = attention_masks()[1].second;
  auto split = [](const Variable& x, int64_t d) {
    return transpose(reshape(x, {2, x.shape()[1], 2, d}), 1, 2);
  };
  for (AttentionFn attention : {fused_attention, fused_attention_reference}) {
    EXPECT_GRADCHECK(
        [&](const Vars& v) {
          return attention(split(v[0], 3), split(v[1], 3), split(v[2], 2), 0.7, causal);
        },
        {dense({2, T, 6}), dense({2, S, 6}), dense({2, S, 4})});
    EXPECT_GRADCHECK([&](const Vars& v) { return attention(v[0], v[1], v[2], 0.7, Tensor()); },
                     {dense({2, 2, T, 3}), dense({2, 1, S, 3}), dense({S, 2})});
  }
}

TEST(FusedAttentionReference, GradchecksEveryMask) {
  for (const auto& [name, mask] : attention_masks()) {
    EXPECT_GRADCHECK(
        [&](const Vars& v) { return fused_attention_reference(v[0], v[1], v[2], 0.6, mask); },
        {dense({B, H, T, 3}), transposed({B, H, S, 3}), strided({B, H, S, 2})});
  }
}

// composed_attention, the formula of the probe path and the reference: a
// transform sees the scaled logits before the mask, the kept logits and
// weights are those of the output, and gradients flow through the transform.
TEST(ComposedAttention, TransformsTheScaledLogitsBeforeTheMaskAndKeepsThem) {
  const Tensor causal = attention_masks()[1].second;
  const Tensor q = dense({B, H, T, 3}), k = dense({B, H, S, 3}), v = dense({B, H, S, 2});
  const Tensor bias = dense({T, S});
  auto add_bias = [&bias](const Variable& logits) { return logits + Variable(bias); };
  ComposedAttention kept;
  Variable out =
      composed_attention(Variable(q), Variable(k), Variable(v), 0.5, causal, add_bias, &kept);
  // By hand, for one query row: b = 1, h = 2, t = 1 sees keys 0 .. 2 of S = 5.
  const int64_t b = 1, h = 2, t = 1;
  std::vector<double> logit(S), weight(S, 0.0);
  double total = 0;
  for (int64_t j = 0; j < S; ++j) {
    double dot = 0;
    for (int64_t d = 0; d < 3; ++d) dot += q.at({b, h, t, d}) * k.at({b, h, j, d});
    logit[j] = 0.5 * dot + bias.at({t, j});
    EXPECT_NEAR(kept.logits.data().at({b, h, t, j}), logit[j], 1e-12) << j;
    if (causal.at({t, j}) == 0) total += std::exp(logit[j]);
  }
  for (int64_t j = 0; j < S; ++j) {
    if (causal.at({t, j}) == 0) weight[j] = std::exp(logit[j]) / total;
    EXPECT_NEAR(kept.weights.data().at({b, h, t, j}), weight[j], 1e-12) << j;
  }
  for (int64_t d = 0; d < 2; ++d) {
    double want = 0;
    for (int64_t j = 0; j < S; ++j) want += weight[j] * v.at({b, h, j, d});
    EXPECT_NEAR(out.data().at({b, h, t, d}), want, 1e-12) << d;
  }
  // No transform and nothing kept: the reference, bit for bit.
  const Tensor r = dense({B, H, T, 2});
  const std::vector<Tensor> plain =
      run([](const Variable& a, const Variable& c, const Variable& e, double scale,
             const Tensor& m) { return composed_attention(a, c, e, scale, m); },
          q, k, v, r, 0.5, causal);
  const std::vector<Tensor> reference = run(fused_attention_reference, q, k, v, r, 0.5, causal);
  for (size_t i = 0; i < plain.size(); ++i) expect_close(plain[i], reference[i], 0, "plain");
  EXPECT_GRADCHECK(
      [&](const Vars& x) {
        return composed_attention(x[0], x[1], x[2], 0.6, causal,
                                  [&x](const Variable& logits) { return logits * x[3]; });
      },
      {dense({B, H, T, 3}), transposed({B, H, S, 3}), strided({B, H, S, 2}), dense({T, 1})});
}

TEST(FusedAttention, BothPathsRejectTheSameCalls) {
  for (AttentionFn attention : {fused_attention, fused_attention_reference}) {
    Variable q(dense({2, T, 3})), k(dense({2, S, 3})), v(dense({2, S, 2}));
    EXPECT_NO_THROW(attention(q, k, v, 1.0, zeros({T, S})));
    EXPECT_THROW(attention(q, Variable(dense({2, S, 4})), v, 1.0, Tensor()), Error);      // D
    EXPECT_THROW(attention(q, k, Variable(dense({2, S + 1, 2})), 1.0, Tensor()), Error);  // S
    EXPECT_THROW(attention(q, k, Variable(dense({3, S, 2})), 1.0, Tensor()), Error);      // batch
    EXPECT_THROW(attention(q, k, Variable(dense({2, S, 2}).to(DType::Float32)), 1.0, Tensor()),
                 Error);
    EXPECT_THROW(attention(q, k, v, 1.0, zeros({T, S + 1})), Error);
    EXPECT_THROW(attention(q, k, v, 1.0, zeros({2, 2, T, S})), Error);  // would grow the scores
    EXPECT_THROW(attention(Variable(dense({3})), k, v, 1.0, Tensor()), Error);
  }
}

}  // namespace
}  // namespace gradflow
