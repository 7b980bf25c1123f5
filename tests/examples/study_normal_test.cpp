// The study's ziggurat sampler against the normal distribution it claims to
// draw from: moments, tail mass and the largest gap between its empirical
// CDF and Phi, over a million samples.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "examples/study/study.h"

namespace gradflow::study {
namespace {

TEST(StudyNormalSampler, MatchesTheStandardNormal) {
  const size_t n = 1'000'000;
  std::vector<float> x(n);
  Generator gen(11);
  fill_normal(x, gen);
  double m1 = 0, m2 = 0, m4 = 0, beyond3 = 0, beyond_r = 0;
  for (float v : x) {
    m1 += v, m2 += double(v) * v, m4 += std::pow(double(v), 4);
    beyond3 += std::abs(v) > 3;
    beyond_r += std::abs(v) > 3.442619855899;  // the tail the slow path draws
  }
  m1 /= n, m2 /= n, m4 /= n;
  // Standard errors over 1e6 samples: mean 0.001, variance 0.0014, fourth
  // moment 0.0097 (sqrt(96 / n)); bounds at about 5 of them.
  EXPECT_NEAR(m1, 0, 0.005);
  EXPECT_NEAR(m2, 1, 0.007);
  EXPECT_NEAR(m4, 3, 0.05);
  // P(|x| > 3) = 0.0026998, P(|x| > 3.4426) = 0.0005761; binomial se 5e-5, 2.4e-5.
  EXPECT_NEAR(beyond3 / n, 0.0026998, 0.00026);
  EXPECT_NEAR(beyond_r / n, 0.0005761, 0.00012);
  // Kolmogorov-Smirnov: the 1% critical gap for n = 1e6 is 1.63 / sqrt(n).
  std::sort(x.begin(), x.end());
  double gap = 0;
  for (size_t i = 0; i < n; i += 97) {
    const double phi = 0.5 * std::erfc(-x[i] / std::sqrt(2.0));
    gap = std::max({gap, std::abs(phi - double(i) / n), std::abs(phi - double(i + 1) / n)});
  }
  EXPECT_LT(gap, 1.63 / std::sqrt(double(n)));
}

TEST(StudyNormalSampler, SameSeedSameSamples) {
  std::vector<float> a(1000), b(1000);
  Generator g1(3), g2(3);
  fill_normal(a, g1);
  fill_normal(b, g2);
  EXPECT_EQ(a, b);
}

}  // namespace
}  // namespace gradflow::study
