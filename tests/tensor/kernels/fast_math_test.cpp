// The float exp and erf of fast_math.h against libm in double, over a dense
// sweep of their whole useful range, in units in the last place (ulp).
#include "tensor/kernels/fast_math.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "tensor/creation.h"
#include "tensor/elementwise.h"

namespace gradflow {
namespace {

// The distance between |v| and the next float up: one unit in the last place.
double ulp(double v) {
  const float f = std::abs(static_cast<float>(v));
  return std::nextafter(f, std::numeric_limits<float>::infinity()) - f;
}

// The worst error of f against ref over [lo, hi], stepping by a relative 1e-6
// (and at least `step`): several million points.
template <class F, class Ref>
double worst_ulp(F f, Ref ref, float lo, float hi, float step) {
  double worst = 0;
  for (float x = lo; x < hi; x += std::max(step, std::abs(x) * 1e-6f)) {
    const double want = ref(static_cast<double>(x));
    worst = std::max(worst, std::abs(static_cast<double>(f(x)) - want) / ulp(want));
  }
  return worst;
}

TEST(FastMath, ExpWithinOneAndAHalfUlp) {
  const double worst = worst_ulp([](float x) { return fast::exp(x); },
                                 [](double x) { return std::exp(x); }, -87.0f, 88.0f, 1e-5f);
  EXPECT_LE(worst, 1.5);  // 1.05 when g++ fuses the multiply-adds, 1.35 when not
  EXPECT_GT(worst, 0);    // it is an approximation: the sweep did reach it
}

TEST(FastMath, ErfWithinTwoUlp) {
  const double worst = worst_ulp([](float x) { return fast::erf(x); },
                                 [](double x) { return std::erf(x); }, -6.0f, 6.0f, 1e-7f);
  EXPECT_LE(worst, 2.0);  // 1.57 when g++ fuses the multiply-adds, 1.66 when not
  EXPECT_GT(worst, 0);
}

TEST(FastMath, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::nanf("");
  EXPECT_EQ(fast::exp(0.0f), 1.0f);
  EXPECT_TRUE(std::isnan(fast::exp(nan)));
  EXPECT_LT(fast::exp(-inf), 1e-37f);
  EXPECT_GE(fast::exp(-inf), 0.0f);
  EXPECT_TRUE(std::isfinite(fast::exp(inf)));  // saturates at about 1.7e38
  EXPECT_EQ(fast::erf(0.0f), 0.0f);
  EXPECT_EQ(fast::erf(inf), 1.0f);
  EXPECT_EQ(fast::erf(-inf), -1.0f);
  EXPECT_EQ(fast::erf(10.0f), 1.0f);
  EXPECT_TRUE(std::isnan(fast::erf(nan)));
  // Odd: erf(-x) is exactly -erf(x).
  for (float x : {0.3f, 1.0f, 1.01f, 1.5f, 3.9f, 3.95f})
    EXPECT_EQ(fast::erf(-x), -fast::erf(x)) << x;
}

// GELU in float32 uses fast::erf, in float64 std::erf: they agree to float
// precision.
TEST(FastMath, GeluInFloatMatchesDouble) {
  Tensor x = arange(-8, 8, 0.004, DType::Float64);
  const std::vector<double> want = gelu(x).to_vector();
  const std::vector<double> got = gelu(x.to(DType::Float32)).to_vector();
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 3e-7 * (1 + std::abs(want[i]))) << "x = " << x.to_vector()[i];
}

}  // namespace
}  // namespace gradflow
