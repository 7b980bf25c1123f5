#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "check.h"

namespace gradflow {
namespace {
using namespace testing;
using Vars = std::vector<Variable>;

TEST(Softmax, GradcheckEveryAxisAndLayout) {
  for (Tensor input : {dense({2, 3, 4}), transposed({2, 3, 4}), strided({2, 3, 4})}) {
    for (int64_t axis : {0, 1, 2, -1}) {
      EXPECT_GRADCHECK([&](const Vars& v) { return softmax(v[0], axis); }, {input});
      EXPECT_GRADCHECK([&](const Vars& v) { return log_softmax(v[0], axis); }, {input});
    }
  }
  Tensor broadcast = dense({1, 5}).expand({3, 5});
  EXPECT_GRADCHECK([](const Vars& v) { return softmax(v[0] * v[0], -1); }, {broadcast});
}

TEST(Softmax, LogSoftmaxOfHugeEqualLogitsIsExact) {
  Variable x(from_vector({1e8, 1e8}), true);
  Variable y = log_softmax(x, 0);
  EXPECT_EQ(y.data().at({0}), static_cast<float>(std::log(0.5)));
  EXPECT_EQ(y.data().at({1}), static_cast<float>(std::log(0.5)));
  sum(y).backward();
  expect_near_vec(x.grad(), {0, 0});
}

TEST(Softmax, LogSoftmaxOfSpreadLogitsStaysFinite) {
  Variable x(from_vector({-431, 279, 427}), true);
  Variable y = log_softmax(x, 0);
  // Reference in double: x - max - log(sum(exp(x - max))).
  double lse = 427 + std::log(std::exp(-858.0) + std::exp(-148.0) + 1.0);
  expect_near_vec(y.data(), {-431 - lse, 279 - lse, 427 - lse}, 1e-3);
  Variable picked = select(y, 0, 1);  // the loss of class 1
  picked.backward();
  for (double g : x.grad().to_vector()) EXPECT_TRUE(std::isfinite(g));
  expect_near_vec(x.grad(), {0, 1, -1}, 1e-6);
}

TEST(Softmax, FullyMaskedRowGivesZerosAndFiniteGradient) {
  const double inf = INFINITY;
  Variable x(from_vector({-inf, -inf, -inf, 1, 2, 3}, {2, 3}, DType::Float64), true);
  Variable y = softmax(x, 1);
  expect_near_vec(y.data().select(0, 0), {0, 0, 0});
  sum(y * y).backward();
  for (double g : x.grad().to_vector()) EXPECT_TRUE(std::isfinite(g));
}

// ---- scaled_masked_softmax ------------------------------------------------

// The composed path nn/attention.cpp takes when it cannot fuse (a probe, a
// learned scale): scale, masked_fill with -inf, softmax.
Variable scaled_masked_softmax_composed(const Variable& scores, double scale, const Tensor& mask) {
  Variable logits = scores * scale;
  if (!mask.defined()) return softmax(logits, -1);
  return softmax(
      masked_fill(logits, mask.to(scores.dtype()), -std::numeric_limits<double>::infinity()), -1);
}

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

// Values and the gradient of sum(f(scores) * r).
std::pair<Tensor, Tensor> value_and_grad(const std::function<Variable(const Variable&)>& f,
                                         const Tensor& scores, const Tensor& r) {
  Variable x(scores, true);
  Variable y = f(x);
  sum(y * Variable(r)).backward();
  return {y.data(), x.grad()};
}

void expect_close(const Tensor& a, const Tensor& b, double tol, const std::string& what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  std::vector<double> x = a.to_vector(), y = b.to_vector();
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_NEAR(x[i], y[i], tol * (1 + std::abs(y[i]))) << what << " at " << i;
}

TEST(ScaledMaskedSoftmax, MatchesComposedValuesAndGradients) {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    const double tol = dtype == DType::Float32 ? 1e-6 : 1e-14;
    // Spread scores, so that some exponents are far below the row's maximum.
    Tensor scores = mul(dense({B, H, T, S}), 4.0).to(dtype), r = dense({B, H, T, S}).to(dtype);
    for (const auto& [name, mask] : attention_masks()) {
      for (double scale : {1.0, 0.37}) {
        const std::string what = std::string(dtype_name(dtype)) + " " + name;
        auto [y, dx] = value_and_grad(
            [&](const Variable& x) { return scaled_masked_softmax(x, scale, mask); }, scores, r);
        auto [y_ref, dx_ref] = value_and_grad(
            [&](const Variable& x) { return scaled_masked_softmax_composed(x, scale, mask); },
            scores, r);
        expect_close(y, y_ref, tol, what + " y");
        expect_close(dx, dx_ref, tol, what + " dscores");
        // Masked entries: exactly 0, in the weights and in the gradient.
        if (mask.defined()) {
          std::vector<double> m = mask.to(DType::Float64).expand(scores.shape()).to_vector();
          std::vector<double> yv = y.to_vector(), dv = dx.to_vector();
          for (size_t i = 0; i < m.size(); ++i)
            if (m[i] != 0) {
              ASSERT_TRUE(yv[i] == 0 && dv[i] == 0) << what << " at " << i;
            }
        }
      }
    }
  }
}

TEST(ScaledMaskedSoftmax, FullyMaskedRowGivesZerosAndZeroGradient) {
  AnomalyGuard anomaly;  // a NaN or Inf in the backward throws
  Tensor mask = from_vector({1, 1, 1, 0, 1, 0}, {2, 3}, DType::Float64);
  Variable x(dense({2, 3}), true);
  Variable y = scaled_masked_softmax(x, 0.5, mask);
  expect_near_vec(y.data().select(0, 0), {0, 0, 0}, 0);
  EXPECT_EQ(y.data().at({1, 1}), 0);
  EXPECT_NEAR(y.data().at({1, 0}) + y.data().at({1, 2}), 1, 1e-15);
  sum(y * Variable(dense({2, 3}))).backward();
  expect_near_vec(x.grad().select(0, 0), {0, 0, 0}, 0);
  EXPECT_EQ(x.grad().at({1, 1}), 0);
  // -inf scores are masked entries too, as in softmax.
  const double inf = std::numeric_limits<double>::infinity();
  Tensor minus_inf = from_vector({-inf, -inf, -inf, -inf, 2, -inf}, {2, 3}, DType::Float64);
  expect_near_vec(scaled_masked_softmax(Variable(minus_inf), 1.0, Tensor()).data(),
                  {0, 0, 0, 0, 1, 0}, 0);
}

TEST(ScaledMaskedSoftmax, GradcheckEveryMask) {
  for (const auto& [name, mask] : attention_masks()) {
    EXPECT_GRADCHECK([&](const Vars& v) { return scaled_masked_softmax(v[0], 0.6, mask); },
                     {dense({B, H, T, S})});
  }
  // Non-contiguous scores: transposed, and every other element.
  Tensor causal = attention_masks()[1].second;
  for (const Tensor& x : {transposed({B, H, T, S}), strided({B, H, T, S})})
    EXPECT_GRADCHECK([&](const Vars& v) { return scaled_masked_softmax(v[0], 1.3, causal); }, {x});
}

TEST(ScaledMaskedSoftmax, SameBitsAtOneTwoAndThreeThreads) {
  // (4, 4, 64, 64): 1024 rows, cut into 3 chunks at 3 threads.
  Tensor mask = zeros({64, 64});
  for (int64_t i = 0; i < 64; ++i)
    for (int64_t j = i + 1; j < 64; ++j) mask.set({i, j}, 1);
  for (DType dtype : {DType::Float32, DType::Float64}) {
    Tensor scores = dense({4, 4, 64, 64}).to(dtype), r = dense({4, 4, 64, 64}).to(dtype);
    std::vector<double> y1, dx1;
    for (int threads : {1, 2, 3}) {
      ThreadsFor pool(threads);
      auto [y, dx] = value_and_grad(
          [&](const Variable& x) { return scaled_masked_softmax(x, 0.125, mask); }, scores, r);
      if (threads == 1) {
        y1 = y.to_vector();
        dx1 = dx.to_vector();
      }
      EXPECT_EQ(y.to_vector(), y1) << threads << " threads";
      EXPECT_EQ(dx.to_vector(), dx1) << threads << " threads";
    }
  }
}

TEST(ScaledMaskedSoftmax, MasksOfOtherLayoutsMatchComposed) {
  // A mask repeated along S (copied to rows first), a 0-d one, and a
  // transposed (non-contiguous) one, in another dtype than the scores.
  Tensor scores = dense({2, 3, 4}), r = dense({2, 3, 4});
  Tensor transposed_mask = zeros({4, 3});
  transposed_mask.set({1, 0}, 1);
  transposed_mask.set({2, 2}, 1);
  for (const Tensor& mask :
       {from_vector({0, 1, 0}, {3, 1}), zeros({}), transposed_mask.transpose(0, 1)}) {
    auto [y, dx] = value_and_grad(
        [&](const Variable& x) { return scaled_masked_softmax(x, 0.8, mask); }, scores, r);
    auto [y_ref, dx_ref] = value_and_grad(
        [&](const Variable& x) { return scaled_masked_softmax_composed(x, 0.8, mask); }, scores, r);
    expect_close(y, y_ref, 1e-14, "y " + shape_str(mask.shape()));
    expect_close(dx, dx_ref, 1e-14, "dscores " + shape_str(mask.shape()));
  }
}

TEST(ScaledMaskedSoftmax, RejectsAMaskThatDoesNotBroadcast) {
  Variable x(dense({2, 3, 4}));
  EXPECT_THROW(scaled_masked_softmax(x, 1.0, zeros({3, 5})), Error);
  EXPECT_THROW(scaled_masked_softmax(x, 1.0, zeros({2, 2, 3, 4})), Error);  // would grow x
  EXPECT_THROW(scaled_masked_softmax(Variable(dense({})), 1.0, Tensor()), Error);
  EXPECT_NO_THROW(scaled_masked_softmax(x, 1.0, zeros({4})));
  EXPECT_NO_THROW(scaled_masked_softmax(x, 1.0, zeros({3, 1})));  // repeated along S
}

}  // namespace
}  // namespace gradflow
