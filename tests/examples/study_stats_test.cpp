// The study's statistics against hand-computed values, closed forms of the
// t distribution for df = 1, 2, 3, and published t quantiles.
#include "examples/study/stats/stats.h"
#include "examples/study/study.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

#include "tensor/error.h"

namespace gradflow::study {
namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

// Runs f, expects a gradflow::Error whose message contains `text`.
template <class F>
void expect_error(F f, const std::string& text) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one mentioning \"" << text << "\"";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

// A difference interval built by hand: mean +- half_width over n seeds.
Interval diff_of(double mean, double half_width, int64_t n = 3) {
  Interval d;
  d.mean = mean;
  d.half_width = half_width;
  d.lo = mean - half_width;
  d.hi = mean + half_width;
  d.n = n;
  return d;
}

// ---- mean, sd, standard error ---------------------------------------------

TEST(StudyStats, MeanSdAndStandardErrorByHand) {
  // xs = {1, 2, 3, 4}: mean 2.5; squared deviations 2.25 + 0.25 + 0.25 + 2.25 = 5,
  // s = sqrt(5 / 3) = 1.2909944487, se = s / sqrt(4) = 0.6454972244.
  const std::vector<double> xs = {1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(mean(xs), 2.5);
  EXPECT_NEAR(sample_sd(xs), 1.2909944487358056, 1e-14);
  EXPECT_NEAR(standard_error(xs), 0.6454972243679028, 1e-14);
}

TEST(StudyStats, SdOfOneValueIsNaNAndOfEqualValuesExactlyZero) {
  const std::vector<double> one = {7};
  EXPECT_DOUBLE_EQ(mean(one), 7);
  EXPECT_TRUE(std::isnan(sample_sd(one)));
  EXPECT_TRUE(std::isnan(standard_error(one)));
  // 0.1 * 3 / 3 is not 0.1 in doubles; the shifted mean gives 0.1 exactly.
  const std::vector<double> equal = {0.1, 0.1, 0.1};
  EXPECT_EQ(mean(equal), 0.1);
  EXPECT_EQ(sample_sd(equal), 0.0);
}

TEST(StudyStats, SdFarFromZero) {
  // {1e9 + 1, 1e9 + 2, 1e9 + 3}: deviations -1, 0, 1, s = sqrt(2 / 2) = 1.
  const std::vector<double> xs = {1e9 + 1, 1e9 + 2, 1e9 + 3};
  EXPECT_DOUBLE_EQ(mean(xs), 1e9 + 2);
  EXPECT_DOUBLE_EQ(sample_sd(xs), 1.0);
}

TEST(StudyStats, EmptyAndNonFiniteSamplesThrowNamingTheFunction) {
  const std::vector<double> empty, with_nan = {1, kNaN, 3}, with_inf = {1, kInf};
  expect_error([&] { mean(empty); }, "mean: xs is empty");
  expect_error([&] { sample_sd(with_nan); }, "sample_sd: xs[1] is nan");
  expect_error([&] { standard_error(with_inf); }, "standard_error: xs[1] is inf");
  expect_error([&] { t_interval(with_nan); }, "t_interval: xs[1]");
  expect_error([&] { bootstrap_interval(with_nan, 100, 0); }, "bootstrap_interval: xs[1]");
}

// ---- the t distribution ----------------------------------------------------

TEST(StudyStats, TQuantilesMatchPublishedValues) {
  const struct {
    double df, t;
  } table[] = {{1, 12.706204736}, {2, 4.302652730},  {4, 2.776445105},
               {9, 2.262157163},  {29, 2.045229642}, {1000, 1.962339081}};
  for (const auto& row : table) {
    EXPECT_NEAR(student_t_quantile(0.975, row.df) / row.t, 1, 1e-9) << "df " << row.df;
    EXPECT_NEAR(student_t_quantile(0.025, row.df) / -row.t, 1, 1e-9) << "df " << row.df;
  }
  EXPECT_NEAR(student_t_quantile(0.995, 4), 4.604094871, 1e-9);
  EXPECT_NEAR(student_t_quantile(0.975, 3), 3.182446305, 1e-9);
  EXPECT_EQ(student_t_quantile(0.5, 7), 0.0);
}

TEST(StudyStats, TQuantileTendsToTheNormal) {
  EXPECT_NEAR(student_t_quantile(0.975, kInf), 1.959963985, 1e-9);
  // 40-digit values from mpmath's incomplete beta.
  EXPECT_NEAR(student_t_quantile(0.975, 1e7), 1.9599642217672055, 1e-9);
  EXPECT_NEAR(student_t_quantile(0.975, 1e8), 1.9599640082627668, 1e-9);
  EXPECT_NEAR(student_t_quantile(0.975, 1e12), 1.9599639845424265, 1e-9);
  // Where the CDF switches from the incomplete beta to the expansion about the
  // normal (past df = 1e7), both sides stay within 1e-9 of the truth.
  EXPECT_NEAR(student_t_quantile(0.975, 1.000001e7), 1.9599642217672055, 1e-9);
}

TEST(StudyStats, TQuantileForNonIntegerDfAndFarTails) {
  // mpmath: t_{.975, 2.5} = 3.5746548420, t_{.6, 0.5} = 0.3979754268.
  EXPECT_NEAR(student_t_quantile(0.975, 2.5), 3.5746548420036832, 1e-9);
  EXPECT_NEAR(student_t_quantile(0.6, 0.5), 0.39797542678479069, 1e-9);
  // df = 1 is Cauchy: F(t) = 1/2 + atan(t) / pi, so t_q = -1 / tan(pi q) for small q.
  for (double q : {1e-3, 1e-6, 1e-9, 1e-12}) {
    EXPECT_NEAR(student_t_quantile(q, 1) * -std::tan(std::numbers::pi * q), 1, 1e-9) << q;
    // 1 - q is rounded; its upper tail 1 - (1 - q) is exact, so judge against that.
    const double p = 1 - q;
    EXPECT_NEAR(student_t_quantile(p, 1) * std::tan(std::numbers::pi * (1 - p)), 1, 1e-9) << q;
  }
  // Near the median: F(t) ~ 1/2 + t / pi for Cauchy.
  EXPECT_NEAR(student_t_quantile(0.5 + 1e-10, 1) / (std::numbers::pi * 1e-10), 1, 1e-5);
}

TEST(StudyStats, TCdfMatchesClosedFormsAndKnownValues) {
  EXPECT_NEAR(student_t_cdf(2.228138852, 10), 0.975, 1e-9);
  EXPECT_NEAR(student_t_cdf(3, 30), 0.99730501796717403, 1e-12);  // mpmath
  EXPECT_NEAR(student_t_cdf(1.959963985, kInf), 0.975, 1e-9);
  EXPECT_EQ(student_t_cdf(0, 3), 0.5);
  for (double t : {-40.0, -3.0, -1.0, -0.1, 0.2, 1.0, 2.5, 100.0}) {
    // df 1: 1/2 + atan(t)/pi; df 2: 1/2 + t / (2 sqrt(2 + t^2));
    // df 3: 1/2 + (t / (sqrt(3) (1 + t^2/3)) + atan(t / sqrt(3))) / pi.
    const double pi = std::numbers::pi, r3 = std::sqrt(3.0);
    EXPECT_NEAR(student_t_cdf(t, 1), 0.5 + std::atan(t) / pi, 1e-13) << t;
    EXPECT_NEAR(student_t_cdf(t, 2), 0.5 + t / (2 * std::sqrt(2 + t * t)), 1e-13) << t;
    EXPECT_NEAR(student_t_cdf(t, 3), 0.5 + (t / (r3 * (1 + t * t / 3)) + std::atan(t / r3)) / pi,
                1e-13)
        << t;
    EXPECT_NEAR(student_t_cdf(-t, 5), 1 - student_t_cdf(t, 5), 1e-15) << t;
  }
  EXPECT_EQ(student_t_cdf(kInf, 4), 1.0);
  EXPECT_EQ(student_t_cdf(-kInf, 4), 0.0);
  // Far tails keep their relative accuracy: for df 1, F(-t) ~ 1 / (pi t), even
  // where t^2 overflows; past df = 1e7 and t = 40 the tail is below any double.
  EXPECT_NEAR(student_t_cdf(-1e200, 1) * std::numbers::pi * 1e200, 1, 1e-12);
  EXPECT_EQ(student_t_cdf(-50, 1e8), 0.0);
  EXPECT_EQ(student_t_cdf(50, 1e8), 1.0);
}

TEST(StudyStats, TCdfAndQuantileAreInverses) {
  for (double df : {1.0, 3.0, 7.5, 60.0, 1e5})
    for (double p : {0.001, 0.05, 0.3, 0.7, 0.975, 0.9999})
      EXPECT_NEAR(student_t_cdf(student_t_quantile(p, df), df), p, 1e-12 * p)
          << "df " << df << " p " << p;
}

TEST(StudyStats, TDistributionRejectsBadArguments) {
  expect_error([] { student_t_quantile(0, 3); }, "student_t_quantile: p must be in (0, 1)");
  expect_error([] { student_t_quantile(1, 3); }, "student_t_quantile: p");
  expect_error([] { student_t_quantile(kNaN, 3); }, "student_t_quantile: p");
  expect_error([] { student_t_quantile(0.9, 0); }, "student_t_quantile: df must be > 0");
  expect_error([] { student_t_quantile(0.9, kNaN); }, "student_t_quantile: df");
  expect_error([] { student_t_cdf(1, -2); }, "student_t_cdf: df must be > 0");
  expect_error([] { student_t_cdf(kNaN, 2); }, "student_t_cdf: t is nan");
}

// ---- t-intervals and paired differences ----------------------------------

TEST(StudyStats, TIntervalByHand) {
  // xs = {1, 2, 3, 4}: mean 2.5, se 0.6454972244, t_{.975,3} = 3.182446305,
  // half-width 3.182446305 * 0.6454972244 = 2.0542602566.
  const std::vector<double> xs = {1, 2, 3, 4};
  const Interval ci = t_interval(xs);
  EXPECT_EQ(ci.n, 4);
  EXPECT_EQ(ci.method, IntervalMethod::StudentT);
  EXPECT_DOUBLE_EQ(ci.mean, 2.5);
  EXPECT_NEAR(ci.half_width, 2.0542602566, 1e-9);
  EXPECT_NEAR(ci.lo, 2.5 - 2.0542602566, 1e-9);
  EXPECT_NEAR(ci.hi, 2.5 + 2.0542602566, 1e-9);
  // 90%: t_{.95,3} = 2.353363435, half-width 2.353363435 * 0.6454972244 = 1.5190895652.
  EXPECT_NEAR(t_interval(xs, 0.9).half_width, 1.5190895652, 1e-9);
}

TEST(StudyStats, TIntervalOfTwoOneAndEqualValues) {
  // n = 2, {1, 3}: s = sqrt(((-1)^2 + 1^2) / 1) = sqrt(2), se = sqrt(2) / sqrt(2) = 1,
  // so the half-width is t_{.975,1} = 12.706204736.
  const std::vector<double> two = {1, 3};
  EXPECT_NEAR(t_interval(two).half_width, 12.706204736, 1e-8);
  // n = 1: no interval.
  const std::vector<double> one = {5};
  const Interval single = t_interval(one);
  EXPECT_EQ(single.mean, 5);
  EXPECT_EQ(single.n, 1);
  EXPECT_TRUE(std::isnan(single.half_width));
  EXPECT_TRUE(std::isnan(single.lo));
  EXPECT_TRUE(std::isnan(single.hi));
  // All equal: zero width, exactly.
  const std::vector<double> equal = {0.7, 0.7, 0.7, 0.7};
  const Interval flat = t_interval(equal);
  EXPECT_EQ(flat.half_width, 0.0);
  EXPECT_EQ(flat.lo, 0.7);
  EXPECT_EQ(flat.hi, 0.7);
}

TEST(StudyStats, TIntervalRejectsBadConfidence) {
  const std::vector<double> xs = {1, 2};
  expect_error([&] { t_interval(xs, 1.0); }, "t_interval: confidence must be in (0, 1)");
  expect_error([&] { t_interval(xs, 0.0); }, "t_interval: confidence");
  expect_error([&] { t_interval(xs, kNaN); }, "t_interval: confidence");
  const std::vector<double> empty;
  expect_error([&] { t_interval(empty); }, "t_interval: xs is empty");
}

TEST(StudyStats, PairedDifferenceByHand) {
  // d = a - b = {2, 1, 2}: mean 5/3 = 1.6667; deviations 1/3, -2/3, 1/3,
  // squares sum to 6/9, s^2 = (6/9) / 2 = 1/3, se = sqrt(1/3) / sqrt(3) = 1/3,
  // half-width t_{.975,2} / 3 = 4.302652730 / 3 = 1.4342175767.
  const std::vector<double> a = {10, 12, 11}, b = {8, 11, 9};
  const Interval d = paired_difference(a, b);
  EXPECT_EQ(d.n, 3);
  EXPECT_NEAR(d.mean, 5.0 / 3, 1e-14);
  EXPECT_NEAR(d.half_width, 1.4342175767, 1e-9);
  EXPECT_NEAR(d.lo, 5.0 / 3 - 1.4342175767, 1e-9);
  // Pairing matters: the unpaired spreads (s = 1) would give a much wider interval.
  EXPECT_LT(d.half_width, t_interval(a).half_width);
  // Swapping the arguments flips the sign only.
  const Interval back = paired_difference(b, a);
  EXPECT_NEAR(back.mean, -d.mean, 1e-14);
  EXPECT_NEAR(back.half_width, d.half_width, 1e-14);
}

TEST(StudyStats, PairedDifferenceChecksItsInputs) {
  const std::vector<double> three = {1, 2, 3}, two = {1, 2}, nan = {1, kNaN, 3}, empty;
  expect_error([&] { paired_difference(three, two); },
               "paired_difference: a has 3 values, b has 2");
  expect_error([&] { paired_difference(three, nan); }, "paired_difference: b[1] is nan");
  expect_error([&] { paired_difference(empty, empty); }, "paired_difference: a is empty");
  expect_error([&] { paired_difference(two, two, 2.0); }, "paired_difference: confidence");
  const std::vector<double> big = {1e308, 1e308}, small = {-1e308, -1e308};
  expect_error([&] { paired_difference(big, small); }, "paired_difference: (a - b)[0] is inf");
}

// ---- bootstrap -------------------------------------------------------------

TEST(StudyStats, BootstrapIsDeterministicForASeed) {
  const std::vector<double> xs = {0.3, 1.7, 2.2, 5.1, 9.4};
  const Interval a = bootstrap_interval(xs, 1000, 2024), b = bootstrap_interval(xs, 1000, 2024);
  EXPECT_EQ(a.lo, b.lo);
  EXPECT_EQ(a.hi, b.hi);
  EXPECT_EQ(a.method, IntervalMethod::PercentileBootstrap);
  EXPECT_DOUBLE_EQ(a.mean, 3.74);
  // Pinned: the generator is ours (splitmix64), so these hold on every
  // platform; a change here changes every bootstrap figure in old reports.
  EXPECT_DOUBLE_EQ(a.lo, 1.26);
  EXPECT_DOUBLE_EQ(a.hi, 6.72);
  const Interval other = bootstrap_interval(xs, 1000, 2025);
  EXPECT_TRUE(other.lo != a.lo || other.hi != a.hi);
}

TEST(StudyStats, BootstrapOfSymmetricSampleSurroundsTheMean) {
  // Resample means of {1, 2, 3, 4, 5} are symmetric about 3 in distribution.
  const std::vector<double> xs = {1, 2, 3, 4, 5};
  const Interval ci = bootstrap_interval(xs, 2000, 11);
  EXPECT_DOUBLE_EQ(ci.mean, 3);
  EXPECT_LT(ci.lo, 3);
  EXPECT_GT(ci.hi, 3);
  EXPECT_NEAR((ci.lo + ci.hi) / 2, 3, 0.1 * ci.half_width);
  EXPECT_DOUBLE_EQ(ci.half_width, (ci.hi - ci.lo) / 2);
}

TEST(StudyStats, BootstrapOfEqualOrSingleValues) {
  const std::vector<double> equal = {0.1, 0.1, 0.1, 0.1};
  const Interval flat = bootstrap_interval(equal, 500, 3);
  EXPECT_EQ(flat.half_width, 0.0);
  EXPECT_EQ(flat.lo, 0.1);
  EXPECT_EQ(flat.hi, 0.1);
  const std::vector<double> one = {4};
  const Interval single = bootstrap_interval(one, 500, 3);
  EXPECT_EQ(single.mean, 4);
  EXPECT_TRUE(std::isnan(single.half_width));
  EXPECT_TRUE(std::isnan(single.lo));
}

TEST(StudyStats, BootstrapAgreesWithTIntervalOnNormalSample) {
  // 30 values at the normal quantiles of (i + 1/2) / 30: mean 10, sd about 2.
  std::vector<double> xs;
  for (int i = 0; i < 30; ++i) xs.push_back(10 + 2 * student_t_quantile((i + 0.5) / 30, kInf));
  const Interval t = t_interval(xs);
  // The percentile interval is narrower by about z / t_{.975,29} * sqrt(29/30) = 0.94.
  for (uint64_t seed : {1, 2, 3}) {
    const Interval b = bootstrap_interval(xs, 4000, seed);
    EXPECT_NEAR(b.half_width, t.half_width, 0.2 * t.half_width) << "seed " << seed;
    EXPECT_NEAR((b.lo + b.hi) / 2, t.mean, 0.2 * t.half_width) << "seed " << seed;
  }
}

TEST(StudyStats, BootstrapRejectsBadArguments) {
  const std::vector<double> xs = {1, 2, 3};
  expect_error([&] { bootstrap_interval(xs, 0, 1); }, "bootstrap_interval: resamples must be >= 1");
  expect_error([&] { bootstrap_interval(xs, 100, 1, 1.5); }, "bootstrap_interval: confidence");
  const std::vector<double> empty;
  expect_error([&] { bootstrap_interval(empty, 100, 1); }, "bootstrap_interval: xs is empty");
}

// ---- the decision rule -----------------------------------------------------

TEST(StudyStats, CompareEveryBranch) {
  using C = Comparison;
  // The whole interval above the margin: better when higher is better.
  EXPECT_EQ(compare(diff_of(3.2, 1.1), 1, true), C::Better);
  EXPECT_EQ(compare(diff_of(3.2, 1.1), 1, false), C::Worse);
  // Interval below 0, mean below -margin.
  EXPECT_EQ(compare(diff_of(-3.2, 1.1), 1, true), C::Worse);
  EXPECT_EQ(compare(diff_of(-3.2, 1.1), 1, false), C::Better);
  // Excludes 0 but |mean| within the margin (and exactly at it).
  EXPECT_EQ(compare(diff_of(0.4, 0.2), 1, true), C::NoDetectableDifference);
  EXPECT_EQ(compare(diff_of(-0.4, 0.2), 1, false), C::NoDetectableDifference);
  EXPECT_EQ(compare(diff_of(1.0, 0.5), 1, true), C::NoDetectableDifference);
  // Beyond the margin but the interval includes 0 (and touches it).
  EXPECT_EQ(compare(diff_of(2.0, 3.0), 1, true), C::NoDetectableDifference);
  EXPECT_EQ(compare(diff_of(-2.0, 3.0), 1, true), C::NoDetectableDifference);
  EXPECT_EQ(compare(diff_of(2.0, 2.0), 1, true), C::NoDetectableDifference);
  // The mean past the margin but not the whole interval: 1.6 +- 0.5 reaches down to 1.1 > 1,
  // better; 1.4 +- 0.5 reaches 0.9 < 1, not.
  EXPECT_EQ(compare(diff_of(1.6, 0.5), 1, true), C::Better);
  EXPECT_EQ(compare(diff_of(1.4, 0.5), 1, true), C::NoDetectableDifference);
  EXPECT_EQ(compare(diff_of(-1.4, 0.5), 1, true), C::NoDetectableDifference);
  // Margin 0: excluding 0 is enough.
  EXPECT_EQ(compare(diff_of(0.01, 0.005), 0, true), C::Better);
  // One seed: never a verdict, whatever the mean.
  EXPECT_EQ(compare(diff_of(50, kNaN, 1), 1, true), C::NoDetectableDifference);
  // From data: d = {2, 1, 2}, 1.667 +- 1.434 ([0.233, 3.101]) excludes 0 but
  // not margin 1; d = {3, 2, 3}, 2.667 +- 1.434 ([1.233, 4.101]) is past it.
  const std::vector<double> a = {10, 12, 11}, b = {8, 11, 9}, c = {7, 10, 8};
  EXPECT_EQ(compare(paired_difference(a, b), 0, true), C::Better);
  EXPECT_EQ(compare(paired_difference(a, b), 1, true), C::NoDetectableDifference);
  EXPECT_EQ(compare(paired_difference(a, c), 1, true), C::Better);
  expect_error([] { compare(diff_of(1, 1), -1, true); }, "compare: margin must be >= 0");
  expect_error([] { compare(diff_of(1, 1), kNaN, true); }, "compare: margin");
}

TEST(StudyStats, DescribeEveryVerdict) {
  EXPECT_EQ(describe(diff_of(-3.2, 1.1), 1, true, "points"),
            "worse by 3.2 +- 1.1 points (n = 3, the whole 95% t-interval past the margin 1)");
  // Lower is better (a loss): a negative difference is an improvement.
  EXPECT_EQ(describe(diff_of(-0.05, 0.01, 5), 0.01, false, "", 2),
            "better by 0.05 +- 0.01 (n = 5, the whole 95% t-interval past the margin 0.01)");
  EXPECT_EQ(describe(diff_of(-0.4, 2.0), 1, true, "points"),
            "no detectable difference with 3 seeds (difference -0.4 +- 2.0 points, "
            "95% t-interval includes 0)");
  EXPECT_EQ(describe(diff_of(0.4, 0.2), 1, true, "points"),
            "no difference past the margin 1 with 3 seeds (difference 0.4 +- 0.2 points, "
            "95% t-interval excludes 0)");
  EXPECT_EQ(describe(diff_of(-0.4, kNaN, 1), 1, true, "points"),
            "no detectable difference with 1 seed (difference -0.4 points, no interval)");
  // From data: d = {2, 1, 2} is 1.667 +- 1.434.
  const std::vector<double> a = {10, 12, 11}, b = {8, 11, 9};
  EXPECT_EQ(describe(paired_difference(a, b), 1, true, "points"),
            "no difference past the margin 1 with 3 seeds (difference 1.7 +- 1.4 points, "
            "95% t-interval excludes 0)");
  EXPECT_EQ(describe(paired_difference(a, b, 0.9), 0.5, false, "%", 2),
            "worse by 1.67 +- 0.97 % (n = 3, the whole 90% t-interval past the margin 0.5)");
  Interval boot = diff_of(2, 1, 4);
  boot.method = IntervalMethod::PercentileBootstrap;
  EXPECT_EQ(describe(boot, 0, true, "points"),
            "better by 2.0 +- 1.0 points (n = 4, the whole 95% bootstrap interval past the "
            "margin 0)");
  expect_error([] { describe(diff_of(1, 1), -0.5, true, ""); }, "describe: margin");
  expect_error([] { describe(diff_of(1, 1), 1, true, "", -1); }, "describe: digits");
}

TEST(StudyStats, MarginPValueMatchesTheShiftedTTest) {
  // d = {3, 2, 3}: mean 2.667, sd 0.5774, se 0.3333, df 2. Past margin 1 by
  // 1.667 = 5.0 se; P(T_2 > 5) = (1 - 5 / sqrt(27)) / 2 (the t_2 CDF in
  // closed form: 1/2 + t / (2 sqrt(2 + t^2))), so p = 1 - 5 / sqrt(27).
  const std::vector<double> a = {10, 12, 11}, c = {7, 10, 8};
  const Interval d = paired_difference(a, c);
  EXPECT_NEAR(margin_p_value(d, 1), 1 - 5 / std::sqrt(27.0), 1e-9);
  // p < 0.05 exactly when the whole 95% interval is past the margin.
  EXPECT_LT(margin_p_value(d, 1), 0.05);
  EXPECT_GT(margin_p_value(d, 1.3), 0.05);  // lo = 1.233 < 1.3
  EXPECT_EQ(compare(d, 1.3, true), Comparison::NoDetectableDifference);
  EXPECT_EQ(margin_p_value(d, 3), 1);                    // mean within the margin
  EXPECT_EQ(margin_p_value(diff_of(5, kNaN, 1), 1), 1);  // one seed
  expect_error([&] { margin_p_value(d, -1); }, "margin_p_value: margin must be >= 0");
}

// ---- loss spikes -----------------------------------------------------------

TEST(StudyStats, LossSpikesOnAHandMadeCurve) {
  // window 4, factor 2, first 5 indices never judged.
  const std::vector<double> loss = {4.0, 1.0, 9.0,  1.0,  1.0, 1.0, 2.5,
                                    1.0, 1.2, 2.15, kNaN, 0.9, 2.5};
  // i = 2: 9.0, but fewer than 5 previous values: not judged.
  // i = 5: window {1, 9, 1, 1}, median 1: 1.0 <= 2.
  // i = 6: window {9, 1, 1, 1}, median 1: 2.5 > 2, spike.
  // i = 7: {1, 1, 1, 2.5} median 1: 1.0.   i = 8: {1, 1, 2.5, 1} median 1: 1.2.
  // i = 9: {1, 2.5, 1, 1.2}, median (1 + 1.2) / 2 = 1.1: 2.15 <= 2.2.
  // i = 10: NaN, flagged.
  // i = 11: {1, 1.2, 2.15, NaN}, the NaN left out, median 1.2: 0.9 <= 2.4.
  // i = 12: {1.2, 2.15, 0.9}, median 1.2: 2.5 > 2.4, spike.
  const std::vector<bool> expected = {false, false, false, false, false, false, true,
                                      false, false, false, true,  false, true};
  EXPECT_EQ(loss_spikes(loss, 4), expected);
}

TEST(StudyStats, LossSpikesDefaultsAndEdges) {
  // Default window 20 covers all previous values; index 5 is the first judged.
  const std::vector<double> loss = {1, 1, 1, 1, 1, 3};
  EXPECT_EQ(loss_spikes(loss), std::vector<bool>({false, false, false, false, false, true}));
  EXPECT_EQ(loss_spikes(loss, 20, 3.0), std::vector<bool>(6, false));  // 3 is not > 3 * 1
  EXPECT_TRUE(loss_spikes(std::vector<double>{}).empty());
  // min_history 1 judges index 1 on index 0 alone.
  const std::vector<double> short_run = {1, 5};
  EXPECT_EQ(loss_spikes(short_run, 20, 2.0, 1), std::vector<bool>({false, true}));
  // A window of only NaN judges nothing; the first finite value starts one.
  const std::vector<double> nans = {kNaN, kNaN, kNaN, kNaN, kNaN, 1.0, 5.0};
  EXPECT_EQ(loss_spikes(nans, 5),
            std::vector<bool>({false, false, false, false, false, false, true}));
  expect_error([&] { loss_spikes(loss, 0); }, "loss_spikes: window must be >= 1");
  expect_error([&] { loss_spikes(loss, 4, 0.0); }, "loss_spikes: factor must be > 0");
  expect_error([&] { loss_spikes(loss, 4, 2.0, 0); }, "loss_spikes: min_history must be >= 1");
  expect_error([&] { loss_spikes(loss, 4, 2.0, 5, -1); },
               "loss_spikes: noise_multiple must be >= 0");
}

TEST(StudyStats, LossSpikesAgainstBatchNoise) {
  // Index 5 judged on the window {1.5, 0.5, 1.2, 0.8}: median 1.0, absolute
  // deviations {0.5, 0.5, 0.2, 0.2} with median 0.35, noise 1.4826 x 0.35 =
  // 0.51891. 2.1 is twice the median and more, but only 1.1 above it, within
  // 3 x 0.51891 = 1.5567: batch noise, no spike. 2.7 is 1.7 above: a spike.
  const std::vector<double> noisy = {1.0, 1.5, 0.5, 1.2, 0.8, 2.1};
  EXPECT_FALSE(loss_spikes(noisy, 4, 2.0, 5, 3.0)[5]);
  EXPECT_TRUE(loss_spikes(noisy, 4, 2.0, 5, 0.0)[5]);  // without the noise test it counts
  const std::vector<double> real = {1.0, 1.5, 0.5, 1.2, 0.8, 2.7};
  EXPECT_TRUE(loss_spikes(real, 4, 2.0, 5, 3.0)[5]);
  // A flat window has no noise: any rise past the factor counts.
  const std::vector<double> flat = {1, 1, 1, 1, 1, 2.01};
  EXPECT_TRUE(loss_spikes(flat, 4, 2.0, 5, 6.0)[5]);
}

// ---- formatting ------------------------------------------------------------

TEST(StudyStats, FormatInterval) {
  const Interval ci = diff_of(0.912, 0.013);
  EXPECT_EQ(format_interval(ci, 3), "0.912 +- 0.013");
  EXPECT_EQ(format_interval(ci, 3, true), "0.912 +- 0.013 (n = 3)");
  EXPECT_EQ(format_interval(ci, 1), "0.9 +- 0.0");
  EXPECT_EQ(format_interval(ci, 0), "1 +- 0");
  const std::vector<double> one = {0.912};
  EXPECT_EQ(format_interval(t_interval(one), 3), "0.912 (n = 1, no interval)");
  EXPECT_EQ(format_interval(t_interval(one), 3, true), "0.912 (n = 1, no interval)");
  EXPECT_EQ(format_interval(diff_of(kNaN, 0.5), 2), "nan +- 0.50");
  EXPECT_EQ(format_interval(diff_of(-kNaN, 0.5), 2), "nan +- 0.50");
  EXPECT_EQ(format_interval(diff_of(1, kInf), 2), "1.00 +- inf");
  EXPECT_EQ(format_interval(diff_of(-kInf, 1), 2), "-inf +- 1.00");
  expect_error([&] { format_interval(ci, -1); }, "format_interval: digits must be in [0, 17]");
  expect_error([&] { format_interval(ci, 18); }, "format_interval: digits");
}

}  // namespace
}  // namespace gradflow::study
