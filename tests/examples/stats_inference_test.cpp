// The study's inference routines against values computed by hand (each
// computation in the comment above its check) and published values.
#include "examples/study/stats/inference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "tensor/error.h"

namespace gradflow::stats {
namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

// ---- exact binomial interval ----------------------------------------------------

TEST(StudyInference, IncompleteBetaClosedForms) {
  // I_x(1, b) = 1 - (1 - x)^b; I_x(a, 1) = x^a; I_x(2, 2) = 3x^2 - 2x^3; I_1/2(a, a) = 1/2.
  EXPECT_NEAR(regularized_incomplete_beta(1, 10, 0.2), 1 - std::pow(0.8, 10), 1e-14);
  EXPECT_NEAR(regularized_incomplete_beta(7, 1, 0.9), std::pow(0.9, 7), 1e-14);
  EXPECT_NEAR(regularized_incomplete_beta(2, 2, 0.3), 3 * 0.09 - 2 * 0.027, 1e-14);  // 0.216
  EXPECT_NEAR(regularized_incomplete_beta(2, 2, 0.8), 3 * 0.64 - 2 * 0.512, 1e-14);  // other branch
  EXPECT_NEAR(regularized_incomplete_beta(12.5, 12.5, 0.5), 0.5, 1e-13);
  EXPECT_EQ(regularized_incomplete_beta(3, 4, 0), 0);
  EXPECT_EQ(regularized_incomplete_beta(3, 4, 1), 1);
  EXPECT_THROW(regularized_incomplete_beta(0, 1, 0.5), Error);
  EXPECT_THROW(regularized_incomplete_beta(1, 1, 1.5), Error);
}

TEST(StudyInference, ClopperPearsonAtTheEdgesByHand) {
  // x = 0: lo = 0, and P(X = 0 | p) = (1 - p)^n = 0.025 gives hi = 1 - 0.025^(1/n);
  // n = 10: 1 - exp(ln 0.025 / 10) = 1 - exp(-0.368888) = 0.308497 (published: 0.3085).
  const BinomialInterval none = exact_binomial_interval(0, 10);
  EXPECT_EQ(none.lo, 0);
  EXPECT_NEAR(none.hi, 0.30849710781876, 1e-10);
  EXPECT_EQ(none.estimate, 0);
  // x = n: hi = 1, and p^n = 0.025 gives lo = 0.025^(1/n): n = 10 -> 0.691503, n = 9 ->
  // exp(ln 0.025 / 9) = exp(-0.409876) = 0.663733.
  const BinomialInterval all10 = exact_binomial_interval(10, 10),
                         all9 = exact_binomial_interval(9, 9);
  EXPECT_NEAR(all10.lo, 0.69150289218124, 1e-10);
  EXPECT_EQ(all10.hi, 1);
  EXPECT_NEAR(all9.lo, 0.66373288312006, 1e-10);
  EXPECT_EQ(all9.hi, 1);
  // x = 1 goes through the incomplete beta: lo solves P(X >= 1) = 1 - (1 - p)^10 = 0.025,
  // p = 1 - 0.975^(1/10) = 0.0025286; x = 9 mirrors it: hi = 0.975^(1/10) = 0.9974714.
  EXPECT_NEAR(exact_binomial_interval(1, 10).lo, 0.00252857854446, 1e-10);
  EXPECT_NEAR(exact_binomial_interval(9, 10).hi, 0.99747142145554, 1e-10);
  // n = 1: 0/1 is [0, 0.975], 1/1 is [0.025, 1].
  EXPECT_NEAR(exact_binomial_interval(0, 1).hi, 0.975, 1e-12);
  EXPECT_NEAR(exact_binomial_interval(1, 1).lo, 0.025, 1e-12);
}

TEST(StudyInference, ClopperPearsonFiveOfTenMatchesPublished) {
  // R's binom.test(5, 10): 0.1870860 0.8129140; the interval is symmetric about 1/2.
  const BinomialInterval half = exact_binomial_interval(5, 10);
  EXPECT_NEAR(half.lo, 0.1870860, 1e-7);
  EXPECT_NEAR(half.hi, 0.8129140, 1e-7);
  EXPECT_NEAR(half.lo + half.hi, 1, 1e-12);
  EXPECT_EQ(half.estimate, 0.5);
  // A wider level gives a wider interval: 99% contains 95%.
  const BinomialInterval wide = exact_binomial_interval(5, 10, 0.99);
  EXPECT_LT(wide.lo, half.lo);
  EXPECT_GT(wide.hi, half.hi);
}

TEST(StudyInference, ClopperPearsonRejectsBadCounts) {
  EXPECT_THROW(exact_binomial_interval(0, 0), Error);
  EXPECT_THROW(exact_binomial_interval(-1, 10), Error);
  EXPECT_THROW(exact_binomial_interval(11, 10), Error);
  EXPECT_THROW(exact_binomial_interval(5, 10, 1.0), Error);
  EXPECT_THROW(exact_binomial_interval(5, 10, kNaN), Error);
}

// ---- Fisher's exact test ------------------------------------------------------------

TEST(StudyInference, FisherExactByHand) {
  // 5 of 5 against 0 of 5: only the observed table and its mirror are as
  // unlikely, each 1 / C(10, 5) = 1 / 252.
  EXPECT_NEAR(fisher_exact_p(5, 5, 0, 5), 2.0 / 252, 1e-12);
  EXPECT_NEAR(fisher_exact_p(0, 5, 5, 5), 2.0 / 252, 1e-12);
  // 3 of 5 against 1 of 5: K = 4 hits of 10, arm a's hits k = 0..4 have
  // probabilities 6, 60, 120, 60, 6 (/ 252); k = 3 (60) and every table no
  // likelier: (6 + 60 + 60 + 6) / 252.
  EXPECT_NEAR(fisher_exact_p(3, 5, 1, 5), 132.0 / 252, 1e-12);
  // Equal counts: every table counts, p = 1.
  EXPECT_NEAR(fisher_exact_p(2, 4, 2, 4), 1.0, 1e-12);
  // Unequal sizes: 3 of 3 against 0 of 4, K = 3 of 7: P(k = 3) = 1 / C(7, 3) = 1 / 35;
  // k = 0 has C(4, 3) / 35 = 4 / 35, likelier, so p = 1 / 35.
  EXPECT_NEAR(fisher_exact_p(3, 3, 0, 4), 1.0 / 35, 1e-12);
  EXPECT_THROW(fisher_exact_p(6, 5, 0, 5), Error);
  EXPECT_THROW(fisher_exact_p(0, 0, 0, 5), Error);
}

// ---- Holm -------------------------------------------------------------------------

TEST(StudyInference, HolmByHand) {
  // Sorted: 0.005 x 4 = 0.02, 0.01 x 3 = 0.03, 0.03 x 2 = 0.06, 0.04 x 1 = 0.04 -> max 0.06.
  // Back in input order {0.01, 0.04, 0.03, 0.005}: {0.03, 0.06, 0.06, 0.02}.
  const std::vector<double> adjusted = holm(std::vector<double>{0.01, 0.04, 0.03, 0.005});
  const std::vector<double> expected = {0.03, 0.06, 0.06, 0.02};
  ASSERT_EQ(adjusted.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(adjusted[i], expected[i], 1e-15) << i;
  // Capped at 1: 0.5 x 3 = 1.5 -> 1; then 0.5 x 2 = 1, 0.9 x 1 = 0.9 -> max 1.
  EXPECT_EQ(holm(std::vector<double>{0.5, 0.9, 0.5}), (std::vector<double>{1, 1, 1}));
  // One p-value is its own adjustment; none gives none.
  EXPECT_EQ(holm(std::vector<double>{0.2}), (std::vector<double>{0.2}));
  EXPECT_TRUE(holm(std::vector<double>{}).empty());
  EXPECT_THROW(holm(std::vector<double>{0.1, kNaN}), Error);
  EXPECT_THROW(holm(std::vector<double>{1.5}), Error);
}

// ---- sign-flip permutation test ---------------------------------------------------

TEST(StudyInference, PermutationTestOnFourDifferencesByHand) {
  // d = {3, -1, 2, 4}: T = |3 - 1 + 2 + 4| = 8. Every pattern is +-3 +-1 +-2 +-4 = 10 - 2S,
  // S the sum of the magnitudes given a minus sign. |10 - 2S| >= 8 iff S <= 1 or S >= 9:
  // S = 0 ({}), 1 ({1}), 9 ({3, 2, 4}), 10 (all). 4 of 16 patterns: p = 0.25.
  const PermutationTest test = paired_permutation_test(std::vector<double>{3, -1, 2, 4});
  EXPECT_DOUBLE_EQ(test.p_value, 4.0 / 16);
  EXPECT_DOUBLE_EQ(test.mean_difference, 2);
  EXPECT_TRUE(test.exact);
  EXPECT_EQ(test.draws, 16);
  EXPECT_EQ(test.n, 4);
  // A zero flips to itself: 8 of 32, the same p.
  EXPECT_DOUBLE_EQ(paired_permutation_test(std::vector<double>{3, -1, 0, 2, 4}).p_value, 0.25);
  // Six differences of one sign: only all-plus and all-minus reach T, 2 / 64.
  EXPECT_DOUBLE_EQ(paired_permutation_test(std::vector<double>{1, 2, 3, 4, 5, 6}).p_value,
                   2.0 / 64);
}

TEST(StudyInference, PermutationTestEdgeCases) {
  // n = 1: both signs give |d|, p = 1; all zeros tie everywhere, p = 1.
  EXPECT_EQ(paired_permutation_test(std::vector<double>{5}).p_value, 1);
  EXPECT_EQ(paired_permutation_test(std::vector<double>{0, 0, 0}).p_value, 1);
  // Ties up to rounding count as extreme. d = {0.1, 0.2, 0.3, -0.3}: T = 0.3; patterns are
  // 0.9 - 2S, and |0.9 - 2S| >= 0.3 iff S <= 0.3 ({}, {0.1}, {0.2}, {0.3}, {0.3'}, {0.1, 0.2})
  // or S >= 0.6 (their 6 complements): 12 of 16 = 0.75. Compared exactly in floating point,
  // some of those sums land a few ulps below T and p would come out 0.5.
  EXPECT_DOUBLE_EQ(paired_permutation_test(std::vector<double>{0.1, 0.2, 0.3, -0.3}).p_value, 0.75);
  EXPECT_THROW(paired_permutation_test(std::vector<double>{}), Error);
  EXPECT_THROW(paired_permutation_test(std::vector<double>{1, kNaN}), Error);
  EXPECT_THROW(paired_permutation_test(std::vector<double>{1, 2}, 0), Error);
}

TEST(StudyInference, PermutationTestMonteCarloAboveSixteenPairs) {
  std::vector<double> d;
  for (int i = -8; i <= 11; ++i) d.push_back(i);  // n = 20, sum 30
  // The exact p by enumerating all 2^20 patterns here (297632 of 1048576 = 0.28384).
  int64_t extreme = 0;
  for (uint64_t s = 0; s < (uint64_t{1} << 20); ++s) {
    double sum = 0;
    for (int i = 0; i < 20; ++i) sum += (s >> i & 1) ? -d[i] : d[i];
    extreme += std::fabs(sum) >= 30 - 1e-9;
  }
  EXPECT_EQ(extreme, 297632);
  const double exact = extreme / 1048576.0;
  const PermutationTest mc = paired_permutation_test(d, 20000, /*seed=*/7);
  EXPECT_FALSE(mc.exact);
  EXPECT_EQ(mc.draws, 20000);
  // Monte Carlo sd sqrt(0.284 * 0.716 / 20000) = 0.0032: 5 sd.
  EXPECT_NEAR(mc.p_value, exact, 0.016);
  // The seed fixes the draws: the same call gives the same p, and p = (k + 1) / 20001.
  EXPECT_EQ(paired_permutation_test(d, 20000, 7).p_value, mc.p_value);
  const double k = mc.p_value * 20001 - 1;
  EXPECT_NEAR(k, std::round(k), 1e-6);
}

// ---- TOST ---------------------------------------------------------------------------

TEST(StudyInference, TostByHandFromTheNormalCdf) {
  // mean 10.2, se 0.1, target 10, margin 0.5: z_lower = (10.2 - 9.5) / 0.1 = 7,
  // z_upper = (10.5 - 10.2) / 0.1 = 3; p = 1 - Phi(z): 1.2798e-12 and 0.0013499 < 0.05.
  const EquivalenceTest in = tost_equivalence(10.2, 0.1, 10, 0.5);
  EXPECT_NEAR(in.p_lower, 1.279812543885835e-12, 1e-20);
  EXPECT_NEAR(in.p_upper, 0.0013498980316301, 1e-13);
  EXPECT_EQ(in.p_value, in.p_upper);
  EXPECT_TRUE(in.equivalent);
  // mean 10.4: z_upper = 1, p_upper = 1 - Phi(1) = 0.1586553 > 0.05: not shown equivalent.
  const EquivalenceTest out = tost_equivalence(10.4, 0.1, 10, 0.5);
  EXPECT_NEAR(out.p_upper, 0.15865525393146, 1e-12);
  EXPECT_FALSE(out.equivalent);
  // Below the target it is the lower test that decides: mean 9.6 mirrors 10.4.
  EXPECT_NEAR(tost_equivalence(9.6, 0.1, 10, 0.5).p_lower, 0.15865525393146, 1e-12);
  // A relative margin of 5% of 10 is 0.5.
  const EquivalenceTest rel = tost_relative(10.2, 0.1, 10, 0.05);
  EXPECT_DOUBLE_EQ(rel.margin, 0.5);
  EXPECT_DOUBLE_EQ(rel.p_upper, in.p_upper);
  EXPECT_THROW(tost_equivalence(10, 0, 10, 0.5), Error);
  EXPECT_THROW(tost_equivalence(10, 0.1, 10, -0.5), Error);
  EXPECT_THROW(tost_equivalence(kNaN, 0.1, 10, 0.5), Error);
  EXPECT_THROW(tost_equivalence(10, 0.1, 10, 0.5, 0.5), Error);
  EXPECT_THROW(tost_relative(1, 0.1, 0, 0.05), Error);
}

TEST(StudyInference, TostDrawsNeededByHand) {
  // z_0.95 + z_0.995 = 1.6448536 + 2.5758293 = 4.2206829; sd 2, margin 0.1:
  // (2 x 4.2206829 / 0.1)^2 = 84.413659^2 = 7125.67 -> 7126 draws.
  EXPECT_NEAR(normal_quantile(0.95), 1.6448536269514722, 1e-12);
  EXPECT_NEAR(normal_quantile(0.995), 2.5758293035489004, 1e-12);
  EXPECT_NEAR(normal_quantile(0.025), -1.959963984540054, 1e-12);
  EXPECT_EQ(tost_draws_needed(2, 0.1), 7126);
  // At that n a true identity fails 2 (1 - Phi(margin / se - z_0.95)) of the time: just
  // under 1%; one draw fewer is just over.
  auto miss = [](double n) {
    return 2 * normal_cdf(-(0.1 / (2 / std::sqrt(n)) - normal_quantile(0.95)));
  };
  EXPECT_LT(miss(7126), 0.01);
  EXPECT_GT(miss(7125), 0.01);
  EXPECT_THROW(tost_draws_needed(0, 0.1), Error);
  EXPECT_THROW(tost_draws_needed(1, 0.1, 0.05, 0), Error);
  EXPECT_THROW(normal_quantile(1), Error);
}

// ---- seed bootstrap -------------------------------------------------------------------

TEST(StudyInference, SeedBootstrapResamplesWholeSeeds) {
  // Seed 0 has rows {1, 3} (mean 2), seed 1 rows {5, 7} (mean 6). A resample draws two
  // seeds: {0, 0} -> 2, {0, 1} -> 4, {1, 1} -> 6, with chances 1/4, 1/2, 1/4. So every
  // resampled mean is 2, 4 or 6, and with 1/4 of the mass at each end the 2.5% and 97.5%
  // quantiles are exactly 2 and 6. (Resampling rows would give means like 1 or 7.)
  const std::vector<double> value = {1, 5, 3, 7};
  const std::vector<int64_t> seed_of = {0, 1, 0, 1};
  auto mean_of = [&](std::span<const size_t> rows) {
    double sum = 0;
    for (size_t r : rows) sum += value[r];
    return sum / static_cast<double>(rows.size());
  };
  const BootstrapInterval b = seed_bootstrap(seed_of, mean_of, 2000, /*seed=*/3);
  EXPECT_EQ(b.estimate, 4);
  EXPECT_EQ(b.lo, 2);
  EXPECT_EQ(b.hi, 6);
  EXPECT_EQ(b.clusters, 2);
  EXPECT_EQ(b.resamples, 2000);
  // A NaN statistic (here: whenever seed 1 is missing) drops that resample.
  auto needs_seed_1 = [&](std::span<const size_t> rows) {
    for (size_t r : rows)
      if (seed_of[r] == 1) return mean_of(rows);
    return kNaN;
  };
  const BootstrapInterval dropped = seed_bootstrap(seed_of, needs_seed_1, 2000, 3);
  EXPECT_LT(dropped.resamples, 2000);
  EXPECT_GT(dropped.resamples, 1000);  // about 3/4 of 2000 keep seed 1
  EXPECT_EQ(dropped.lo, 4);
  EXPECT_THROW(seed_bootstrap(std::vector<int64_t>{}, mean_of, 10, 0), Error);
  EXPECT_THROW(seed_bootstrap(seed_of, mean_of, 0, 0), Error);
}

TEST(StudyInference, SeedBootstrapSpearman) {
  // y rises with x in every row, so every resample (repeated seeds make tied pairs,
  // tied alike in x and y) has rho = 1.
  const std::vector<double> x = {1, 2, 3, 4, 5, 6}, y = {10, 20, 35, 40, 52, 70};
  const std::vector<int64_t> seed_of = {0, 0, 1, 1, 2, 2};
  const BootstrapInterval b = seed_bootstrap_spearman(x, y, seed_of, 500, 1);
  EXPECT_NEAR(b.estimate, 1, 1e-12);
  EXPECT_NEAR(b.lo, 1, 1e-12);
  EXPECT_NEAR(b.hi, 1, 1e-12);
  EXPECT_THROW(seed_bootstrap_spearman(x, std::vector<double>{1, 2}, seed_of, 10, 0), Error);
}

// ---- censored outcomes ----------------------------------------------------------------

CensoredTime event(double t) { return {t, false}; }
CensoredTime censored(double t) { return {t, true}; }

TEST(StudyInference, PairedCensoredTestByHand) {
  // Pair by pair, h = the smaller censoring time of the censored runs, d = min(a, h) - min(b, h):
  //   a 10,  b 20:            both seen                         d = -10
  //   a 30,  b 15:            both seen                         d = 15
  //   a 50+, b 40:            h = 50, a took longer than 50     d = 50 - 40 = 10
  //   a 50+, b 50+:           h = 50, cannot be ordered         d = 0
  //   a 60+, b 70:            h = 60, b seen after a's budget   d = 60 - 60 = 0
  // Nonzero d: +-10 +-15 +-10 against T = |15|: 35, 15, 5, -15, 15, -5, -15, -35, so 6 of 8
  // reach 15 (the zeros flip to themselves): p = 0.75. Median of {-10, 0, 0, 10, 15} = 0,
  // mean 15 / 5 = 3.
  const std::vector<CensoredTime> a = {event(10), event(30), censored(50), censored(50),
                                       censored(60)};
  const std::vector<CensoredTime> b = {event(20), event(15), event(40), censored(50), event(70)};
  const CensoredPairedTest test = paired_censored_test(a, b);
  EXPECT_DOUBLE_EQ(test.p_value, 0.75);
  EXPECT_EQ(test.median_difference, 0);
  EXPECT_DOUBLE_EQ(test.mean_difference, 3);
  EXPECT_EQ(test.n, 5);
  EXPECT_EQ(test.one_censored, 2);
  EXPECT_EQ(test.both_censored, 1);
  EXPECT_TRUE(test.exact);
  // Swapping a and b negates every d: same p, opposite median and mean.
  const CensoredPairedTest swapped = paired_censored_test(b, a);
  EXPECT_DOUBLE_EQ(swapped.p_value, 0.75);
  EXPECT_DOUBLE_EQ(swapped.mean_difference, -3);
}

TEST(StudyInference, PairedCensoredTestWhenOneArmNeverSolves) {
  // a solves at 10..60, b never does within 100: d = t_a - 100 = -90, -80, ..., -40, all
  // negative, so only the all-plus and all-minus patterns reach T: p = 2 / 64 = 0.03125;
  // median of {-90, -80, -70, -60, -50, -40} = (-70 - 60) / 2 = -65.
  std::vector<CensoredTime> a, b;
  for (int i = 1; i <= 6; ++i) a.push_back(event(10.0 * i)), b.push_back(censored(100));
  const CensoredPairedTest test = paired_censored_test(a, b);
  EXPECT_DOUBLE_EQ(test.p_value, 2.0 / 64);
  EXPECT_DOUBLE_EQ(test.median_difference, -65);
  EXPECT_EQ(test.one_censored, 6);
  EXPECT_THROW(paired_censored_test(a, std::vector<CensoredTime>{censored(100)}), Error);
  EXPECT_THROW(paired_censored_test(std::vector<CensoredTime>{}, std::vector<CensoredTime>{}),
               Error);
  EXPECT_THROW(paired_censored_test(std::vector<CensoredTime>{event(-1)},
                                    std::vector<CensoredTime>{event(1)}),
               Error);
}

TEST(StudyInference, KaplanMeierMedianWithCensoringByHand) {
  // Times 2, 3+, 4, 5, 5, 7+, 8 (+ = censored), n = 7. At each event time (at risk n_j,
  // events d_j): S, Greenwood sum g = sum d / (n (n - d)), se = S sqrt(g), z = 1.959964:
  //   t = 2: n 7, d 1: S = 6/7 = 0.857143, g = 1/42 = 0.023810, se = 0.132260,
  //          S - z se = 0.597920 (> 0.5)
  //   t = 4: n 5, d 1: S = 24/35 = 0.685714, g = 0.073810, se = 0.186294,
  //          S - z se = 0.320585 (<= 0.5: lo = 4), S + z se = 1.050844
  //   t = 5: n 4, d 2: S = 12/35 = 0.342857 (<= 0.5: median 5), g = 0.323810, se = 0.195100,
  //          S + z se = 0.725246 (> 0.5)
  //   t = 8: n 1, d 1: S = 0 with no spread: S + z se = 0 (hi = 8)
  const std::vector<CensoredTime> times = {event(5),    event(2), censored(7), event(4),
                                           censored(3), event(8), event(5)};
  const KaplanMeierMedian km = kaplan_meier_median(times);
  EXPECT_TRUE(km.reached);
  EXPECT_EQ(km.median, 5);
  EXPECT_EQ(km.lo, 4);
  EXPECT_EQ(km.hi, 8);
  EXPECT_EQ(km.n, 7);
  EXPECT_EQ(km.events, 5);
}

TEST(StudyInference, KaplanMeierMedianWithoutCensoringAndNotReached) {
  // Times 1..10, no censoring: S(t) = 1 - t/10 and Greenwood reduces to se = sqrt(S (1 - S) / 10).
  // The median is the first t with S <= 0.5: t = 5 (S = 0.5 exactly; R would report 5.5).
  //   lo: t = 2: 0.8 - 1.96 x 0.126491 = 0.552 > 0.5; t = 3: 0.7 - 1.96 x 0.144914 = 0.416 -> 3
  //   hi: t = 7: 0.3 + 1.96 x 0.144914 = 0.584 > 0.5; t = 8: 0.2 + 1.96 x 0.126491 = 0.448 -> 8
  std::vector<CensoredTime> times;
  for (int t = 1; t <= 10; ++t) times.push_back(event(t));
  const KaplanMeierMedian km = kaplan_meier_median(times);
  EXPECT_EQ(km.median, 5);
  EXPECT_EQ(km.lo, 3);
  EXPECT_EQ(km.hi, 8);
  // 3, 5+, 6+, 7+: S = 3/4 after t = 3 and never lower: not reached, median +inf.
  // lo: se = 0.75 sqrt(1 / (4 x 3)) = 0.216506, 0.75 - 1.96 x 0.216506 = 0.3257 -> 3; hi never.
  const KaplanMeierMedian open = kaplan_meier_median(
      std::vector<CensoredTime>{event(3), censored(5), censored(6), censored(7)});
  EXPECT_FALSE(open.reached);
  EXPECT_EQ(open.median, kInf);
  EXPECT_EQ(open.lo, 3);
  EXPECT_EQ(open.hi, kInf);
  // One run: solved at 4 gives S = 0 at 4; censored gives nothing.
  EXPECT_EQ(kaplan_meier_median(std::vector<CensoredTime>{event(4)}).median, 4);
  EXPECT_FALSE(kaplan_meier_median(std::vector<CensoredTime>{censored(4)}).reached);
  // A censoring at an event's time counts as still at risk there: 2, 2+ gives S(2) = 1/2.
  EXPECT_EQ(kaplan_meier_median(std::vector<CensoredTime>{censored(2), event(2)}).median, 2);
  EXPECT_THROW(kaplan_meier_median(std::vector<CensoredTime>{}), Error);
  EXPECT_THROW(kaplan_meier_median(std::vector<CensoredTime>{event(kNaN)}), Error);
}

}  // namespace
}  // namespace gradflow::stats
