// Tests and intervals fitted to the study's outcomes, as the standards of
// evidence ask for them: exact binomial intervals for solve counts, Holm's
// correction inside a claim, paired sign-flip permutation tests for gridded
// outcomes, a paired test and Kaplan-Meier medians for censored steps to a
// threshold, equivalence tests (TOST) for the identities, and a bootstrap
// that resamples seeds rather than runs.
//
// Each function returns a plain struct of its own with named fields, so the
// study's interval type can adopt them later. Bad arguments (empty samples,
// NaN, counts out of range, levels outside (0, 1)) throw gradflow::Error
// naming the function. Random draws use std::mt19937_64's raw output only
// (no std:: distributions, whose algorithms differ between standard
// libraries), so a seed gives the same numbers on every platform.
//
// inference.cpp holds the first four sections; survival.cpp the censored ones.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <vector>

namespace gradflow::stats {

// ---- solve counts: exact binomial interval ----------------------------------

struct BinomialInterval {
  double lo = 0, hi = 1;  // the Clopper-Pearson bounds on the success probability
  double estimate = 0;    // successes / trials
  int64_t successes = 0, trials = 0;
  double level = 0.95;
};

// Clopper-Pearson, a = 1 - level, x = successes, n = trials:
//   lo = the a/2 quantile of Beta(x, n - x + 1)      (lo = 0 when x = 0)
//   hi = the 1 - a/2 quantile of Beta(x + 1, n - x)  (hi = 1 when x = n)
// i.e. the p where P(X >= x | p) = a/2, and where P(X <= x | p) = a/2. At
// x = 0 or n the bound on the empty side is exact (0 or 1) and the other keeps
// a/2 (0/10 gives [0, 1 - 0.025^(1/10)] = [0, 0.3085], as published).
// Quantiles invert the regularised incomplete beta I_p(a, b) (continued
// fraction, Lentz) by bisection, to 1e-12 absolute.
// Why: a two-valued outcome (solved or not) is a count with an exact interval.
// REQUIRES: 0 <= successes <= trials, trials >= 1, 0 < level < 1.
BinomialInterval exact_binomial_interval(int64_t successes, int64_t trials, double level = 0.95);

// I_x(a, b) = B(x; a, b) / B(a, b), the Beta(a, b) CDF at x (exposed for tests).
// REQUIRES: a > 0, b > 0, 0 <= x <= 1.
double regularized_incomplete_beta(double a, double b, double x);

// Fisher's exact test of "both arms solve with the same probability", from
// hits_a of n_a and hits_b of n_b runs. With the margins fixed the hits of
// arm a are hypergeometric, P(k) = C(K, k) C(N - K, n_a - k) / C(N, n_a)
// (K = hits_a + hits_b, N = n_a + n_b); the two-sided p sums P(k) over the
// tables no more likely than the one observed (within a relative 1e-7, as
// R's fisher.test does). 5 of 5 against 0 of 5 gives 2 / 252.
// Why: paired runs of two arms are positively correlated, which only makes
// this unpaired test conservative; with few seeds it is the exact one.
// REQUIRES: 0 <= hits <= n, n_a, n_b >= 1.
double fisher_exact_p(int64_t hits_a, int64_t n_a, int64_t hits_b, int64_t n_b);

// ---- multiplicity: Holm -------------------------------------------------------

// Holm-Bonferroni adjusted p-values, in the input order. With p_(1) <= ... <=
// p_(m) sorted ascending,
//   adj_(i) = min(1, max_{j <= i} (m - j + 1) p_(j)),
// so the adjusted values keep the order of the raw ones. Rejecting adj < a
// controls the family-wise error at a. An empty list gives an empty list.
// Why: a claim resting on many comparisons corrects for multiplicity (Holm).
// REQUIRES: every p in [0, 1] (NaN throws).
std::vector<double> holm(std::span<const double> p_values);

// ---- paired differences: sign-flip permutation test ----------------------------

struct PermutationTest {
  double p_value = 1;          // two-sided
  double mean_difference = 0;  // mean of the differences tested
  int64_t n = 0;               // pairs
  bool exact = true;           // all 2^n sign patterns enumerated (else Monte Carlo)
  int64_t draws = 0;           // patterns counted: 2^n, or the Monte Carlo draws
};

// Two-sided sign-flip test of "the paired differences d_i are symmetric about
// 0" with statistic T = |sum d_i| (the same test as |mean|):
//   p = #{signs s : |sum s_i d_i| >= T} / 2^n          for n <= 16 (exact)
//   p = (#{extreme draws} + 1) / (draws + 1)           for n > 16 (Monte Carlo,
//       signs from std::mt19937_64(seed); never 0, valid at any draw count)
// ">=" is judged with a tolerance of 1e-12 * sum |d_i|, so patterns whose sum
// ties T up to rounding count as extreme. Zeros stay in: they flip to
// themselves, doubling extreme and total counts alike, so they change
// nothing. n = 1 gives p = 1, as do all-zero differences.
// Why: gridded or censored outcomes take a paired permutation test, not a t.
// REQUIRES: differences non-empty and finite, draws >= 1.
PermutationTest paired_permutation_test(std::span<const double> differences, int64_t draws = 100000,
                                        uint64_t seed = 0);

// ---- identities: equivalence test (TOST) --------------------------------------

struct EquivalenceTest {
  double p_lower = 1;       // H0: mean <= target - margin, z = (mean - (target - margin)) / se
  double p_upper = 1;       // H0: mean >= target + margin, z = ((target + margin) - mean) / se
  double p_value = 1;       // max(p_lower, p_upper)
  double margin = 0;        // the absolute margin used
  bool equivalent = false;  // p_value < alpha: |mean - target| < margin shown at level alpha
};

// Two one-sided tests with normal critical values (estimates over many
// draws, so se is known to a few percent): p_lower = 1 - Phi(z_lower),
// p_upper = 1 - Phi(z_upper). Equivalent iff both are below alpha, that is
// iff the 1 - 2 alpha interval mean +- z_{1-alpha} se lies inside
// target +- margin.
// Why: identities (Var(q.k) = d_k) are judged by equivalence, not by failing
// to reject a difference.
// REQUIRES: se > 0, margin > 0, all finite, 0 < alpha < 0.5.
EquivalenceTest tost_equivalence(double sample_mean, double standard_error, double target,
                                 double margin, double alpha = 0.05);

// tost_equivalence with margin = relative_margin * |target|.
// REQUIRES: relative_margin > 0, target != 0, and as above.
EquivalenceTest tost_relative(double sample_mean, double standard_error, double target,
                              double relative_margin, double alpha = 0.05);

// Draws n so that a true identity (mean exactly target) fails TOST at most
// `miss_rate` of the time. The estimate is mean ~ N(target, sd^2 / n); TOST
// fails iff |mean - target| >= margin - z_{1-alpha} se, which has probability
// 2 (1 - Phi(margin / se - z_{1-alpha})). Setting that to miss_rate:
//   n = ceil((sd (z_{1-alpha} + z_{1-miss_rate/2}) / margin)^2).
// alpha 0.05, miss_rate 0.01: n = ceil((4.2207 sd / margin)^2).
// Why: an identity must fail less than 1% of the time when it is true.
// REQUIRES: sd > 0, margin > 0, finite; alpha, miss_rate in (0, 0.5).
int64_t tost_draws_needed(double sd_per_draw, double margin, double alpha = 0.05,
                          double miss_rate = 0.01);

// Phi(z), the standard normal CDF, and its inverse (bisection to 1e-15).
double normal_cdf(double z);
double normal_quantile(double p);  // REQUIRES: 0 < p < 1

// ---- clustered data: seed bootstrap --------------------------------------------

struct BootstrapInterval {
  double estimate = 0;    // the statistic on all rows
  double lo = 0, hi = 0;  // percentile interval over the resamples (NaN if none usable)
  int64_t clusters = 0;   // distinct clusters (seeds)
  int64_t resamples = 0;  // resamples whose statistic was finite (the others are dropped)
  double level = 0.95;
};

// Rows are grouped by cluster_of_row (row r belongs to cluster
// cluster_of_row[r], e.g. its seed). One resample draws K clusters with
// replacement, K the number of distinct clusters, and pools all their rows
// (a cluster drawn twice brings its rows twice); statistic(rows) gets those
// row indices. lo and hi are the (1 - level)/2 and (1 + level)/2 quantiles of
// the finite resampled statistics, interpolated linearly between order
// statistics. Clusters are drawn with std::mt19937_64(seed).
// Why: runs that share a seed are not independent; resample seeds, not runs.
// REQUIRES: cluster_of_row non-empty, resamples >= 1, 0 < level < 1.
BootstrapInterval seed_bootstrap(std::span<const int64_t> cluster_of_row,
                                 const std::function<double(std::span<const size_t>)>& statistic,
                                 int resamples, uint64_t seed, double level = 0.95);

// seed_bootstrap of Spearman's rho of (x[r], y[r]) (correlation.h's spearman;
// a resample with fewer than two distinct values gives NaN and is dropped).
// REQUIRES: x, y, cluster_of_row of one size >= 2, finite.
BootstrapInterval seed_bootstrap_spearman(std::span<const double> x, std::span<const double> y,
                                          std::span<const int64_t> cluster_of_row, int resamples,
                                          uint64_t seed, double level = 0.95);

// ---- censored outcomes (survival.cpp) ------------------------------------------

// A time to an event (steps to a threshold). censored: the run stopped at
// `time` (its budget) without the event, so the true time is > time.
struct CensoredTime {
  double time = 0;
  bool censored = false;
};

struct CensoredPairedTest {
  double p_value = 1;            // two-sided, paired_permutation_test on the d_i below
  double median_difference = 0;  // median of d_i (a bound when censored pairs dominate)
  double mean_difference = 0;
  int64_t n = 0;              // pairs
  int64_t one_censored = 0;   // pairs with one run censored
  int64_t both_censored = 0;  // pairs with both censored (d_i = 0)
  bool exact = true;
};

// Paired test for censored times, a against b, pair i run on the same seed.
// Each pair is compared up to its common follow-up h_i, the smaller
// censoring time of its censored members (+inf if neither is censored):
//   d_i = min(a_i, h_i) - min(b_i, h_i)
// Both observed: the plain difference. One censored at c, the other observed
// at t <= c: c - t, a lower bound on the true difference in the right
// direction. Both censored, or the observed one later than the other's
// censoring: 0, the pair cannot be ordered (Gehan's score for such pairs).
// h_i is symmetric in a and b, so swapping a pair's labels negates d_i, and
// the sign-flip permutation test is exact under "a and b exchangeable within
// a pair". Positive d: a takes longer.
// Why: steps to a threshold within a budget are censored; a t-interval on
// them has zero width at the budget.
// REQUIRES: a.size() == b.size() >= 1, times finite and >= 0, draws >= 1.
CensoredPairedTest paired_censored_test(std::span<const CensoredTime> a,
                                        std::span<const CensoredTime> b, int64_t draws = 100000,
                                        uint64_t seed = 0);

struct KaplanMeierMedian {
  double median = std::numeric_limits<double>::infinity();  // +inf when not reached
  bool reached = false;
  // Brookmeyer-Crowley interval with Greenwood's variance (plain scale,
  // z = z_{(1+level)/2}): the event times where S(t) = 0.5 is not rejected.
  // lo is the first event time where S(t) - z se(t) <= 0.5, hi the first
  // where S(t) + z se(t) <= 0.5; +inf when that never happens in the data.
  double lo = std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  int64_t n = 0, events = 0;
  double level = 0.95;
};

// Product-limit estimate S(t) = prod_{event times t_j <= t} (1 - d_j / n_j),
// d_j events at t_j, n_j runs still at risk (time >= t_j; a run censored at
// t_j counts as at risk at t_j). The median is the smallest event time with
// S(t) <= 0.5, up to 1e-12 of rounding (R's survfit instead averages two
// times when S stays exactly at 0.5 between them). Greenwood's variance:
// Var S(t) = S(t)^2 sum_{t_j <= t} d_j / (n_j (n_j - d_j)); once S reaches 0
// (every run at risk had the event) its se is taken as 0.
// Why: censored steps to a threshold take Kaplan-Meier medians, not means.
// REQUIRES: times non-empty, finite, >= 0; 0 < level < 1.
KaplanMeierMedian kaplan_meier_median(std::span<const CensoredTime> times, double level = 0.95);

}  // namespace gradflow::stats
