// Statistics for experiments over seeds and draws (the scaling study's):
// one Interval type and its constructors (a mean and
// its standard error over independent draws, Student-t over seeds, the
// percentile bootstrap), paired differences between two settings run on the
// same seeds, the decision rule that turns a difference into a verdict,
// association across runs (Spearman's rho, a difference of proportions),
// loss-spike flags for training curves, and the report's number formats.
//
// Notation: xs holds n values x_i (one per seed), m is their mean,
// s their sample standard deviation (divisor n - 1), t_{p, df} the p-quantile
// of Student's t with df degrees of freedom.
//
// Non-finite inputs: every function taking samples throws if a value is NaN
// or infinite (a diverged run must be counted or dropped by the caller, on
// purpose).
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

namespace gradflow::stats {

// Not a number: a figure with nothing to measure (no draws, no finite value).
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// How an interval was made: NormalMean is mean_and_se's (many draws),
// NewcombeScore proportion_difference's.
enum class IntervalMethod { StudentT, PercentileBootstrap, NewcombeScore, NormalMean };

// A mean with a two-sided interval at the given confidence.
// With n == 1 there is no interval: half_width, lo and hi are NaN.
// A t-interval is symmetric (lo = mean - half_width, hi = mean + half_width);
// a bootstrap interval need not be: half_width is (hi - lo) / 2.
struct Interval {
  double mean = 0;
  double half_width = 0;
  double lo = 0, hi = 0;
  int64_t n = 0;
  double confidence = 0.95;
  IntervalMethod method = IntervalMethod::StudentT;
  double se = kNaN;  // the standard error, where known
};

// No interval at all: NaN bounds over n = 0 values.
inline Interval no_interval() { return Interval{kNaN, kNaN, kNaN, kNaN, 0}; }

// An estimate over many independent draws: m = (1/n) sum x_i, its standard
// error sqrt(sum (x_i - m)^2 / (n - 1) / n), and m +- 1.96 se (normal: the
// draws are many). Empty: NaN with n = 0; one draw: se NaN.
Interval mean_and_se(const std::vector<double>& draws);
// The same from a mean and standard error already known (n draws).
Interval mean_and_se(double mean, double se, int64_t n);

// m = (1/n) sum x_i, computed as x_0 + mean of (x_i - x_0) so that equal
// values give exactly that value.
// REQUIRES: xs non-empty and finite.
double mean(std::span<const double> xs);

// s = sqrt(sum (x_i - m)^2 / (n - 1)); NaN when n == 1.
// REQUIRES: xs non-empty and finite.
double sample_sd(std::span<const double> xs);

// s / sqrt(n); NaN when n == 1.
// REQUIRES: xs non-empty and finite.
double standard_error(std::span<const double> xs);

// P(T <= t) for T ~ Student t with df degrees of freedom:
// 1 - I_x(df/2, 1/2) / 2 for t >= 0 with x = df / (df + t^2), I the
// regularised incomplete beta function; symmetric for t < 0.
// For df > 1e7: the normal CDF with its 1/df and 1/df^2 corrections;
// df = +inf gives the normal CDF.
// REQUIRES: df > 0 (need not be an integer), t not NaN.
double student_t_cdf(double t, double df);

// t_{p, df}: the t with student_t_cdf(t, df) = p, found by bisection on the
// smaller tail; within 1e-9 relative of 40-digit values for df from 0.5 to
// 1e15 and p from 1e-12 to 1 - 1e-12.
// REQUIRES: 0 < p < 1, df > 0; df = +inf gives the normal quantile.
double student_t_quantile(double p, double df);

// m +- t_{1-a/2, n-1} * s / sqrt(n), a = 1 - confidence.
// n == 1: half_width, lo and hi are NaN (no interval; format_interval shows it).
// REQUIRES: xs non-empty and finite, 0 < confidence < 1.
Interval t_interval(std::span<const double> xs, double confidence = 0.95);

// t_interval of d_i = a_i - b_i: a and b are two settings run on the same
// seeds, paired by index. A positive mean says a is higher than b.
// REQUIRES: a.size() == b.size() >= 1, all finite, 0 < confidence < 1.
Interval paired_difference(std::span<const double> a, std::span<const double> b,
                           double confidence = 0.95);

// Percentile bootstrap for the mean: `resamples` means of n values drawn
// with replacement (splitmix64 seeded with `seed`, the same on every
// platform); lo and hi are the a/2 and 1 - a/2 quantiles of those means
// (linear interpolation between order statistics), mean is m of xs.
// n == 1: no interval (NaN), as for t_interval. Use resamples >= 1000.
// REQUIRES: xs non-empty and finite, resamples >= 1, 0 < confidence < 1.
Interval bootstrap_interval(std::span<const double> xs, int resamples, uint64_t seed,
                            double confidence = 0.95);

enum class Comparison { Better, Worse, NoDetectableDifference };

// For diff = a - b (see paired_difference): Better when the whole interval
// lies past the margin (lo > margin, or hi < -margin) in the direction that
// is better for a; Worse likewise in the other direction; otherwise (and
// always when n == 1) NoDetectableDifference. The point estimate past the
// margin is not enough: with 3 seeds a t-interval is 2.5 sd wide each side.
// REQUIRES: margin >= 0.
Comparison compare(const Interval& diff, double margin, bool higher_is_better);

// The two-sided p-value of "the difference is not past the margin" for a
// t-interval diff (the shifted test t = (|mean| - margin) / se, df n - 1):
// p < 1 - confidence exactly when compare says Better or Worse, so Holm's
// correction (inference.h) can turn a family of comparisons into verdicts.
// 1 when |mean| <= margin, n < 2 or diff is not a t-interval.
// REQUIRES: margin >= 0.
double margin_p_value(const Interval& diff, double margin);

// The verdict of compare as one line for the report, n counting seeds, e.g.
//   "worse by 3.2 +- 1.1 points (n = 3, the whole 95% t-interval past the
//    margin 1)"
//   "no detectable difference with 3 seeds (difference -0.4 +- 2.0 points,
//    95% t-interval includes 0)"
//   "no difference past the margin 1 with 3 seeds (difference 0.4 +- 0.2
//    points, 95% t-interval excludes 0)"
//   "no detectable difference with 1 seed (difference -0.4 points, no interval)"
// Numbers have `digits` decimals; the margin is printed as given (%g).
// unit may be empty. REQUIRES: margin >= 0, 0 <= digits <= 17.
std::string describe(const Interval& diff, double margin, bool higher_is_better,
                     const std::string& unit, int digits = 1);

// v to `digits` significant figures as a stream prints it ("0.0123",
// "1.8e+09"); "-" for NaN and infinities, which a report shows as missing.
std::string significant(double v, int digits = 3);

// "0.886 +- 0.002": an estimate to `digits` significant figures and the
// half-width of its 95% interval to 2; "-" when the mean is not finite.
std::string format_estimate(const Interval& e, int digits = 3);

// "-0.84 [-0.90, -0.76] (n = 108)": to digits + 1 significant figures; "-" for n = 0.
std::string format_bounds(const Interval& i, int digits = 2);

// "0.912 +- 0.013", with show_n "0.912 +- 0.013 (n = 3)", `digits` decimals.
// n == 1 (NaN half-width): "0.912 (n = 1, no interval)" whatever show_n.
// NaN prints as "nan", infinities as "inf" and "-inf".
// REQUIRES: 0 <= digits <= 17.
std::string format_interval(const Interval& interval, int digits, bool show_n = false);

// flags[i] = loss[i] > factor * median(finite values of loss[i-window .. i-1]).
// Indices with fewer than min_history previous values, or whose window holds
// no finite value, are never flagged; a non-finite loss[i] past that point is
// always flagged and is left out of later windows.
// With noise_multiple k > 0 a finite loss must also exceed that median by k
// times the window's batch-to-batch noise, measured robustly as 1.4826 x the
// median absolute deviation from the median (the sd, for normal noise):
// near convergence a batch's loss can double by chance, which is no spike.
// REQUIRES: window >= 1, min_history >= 1, factor > 0, noise_multiple >= 0;
// meant for losses >= 0.
std::vector<bool> loss_spikes(std::span<const double> loss, int window = 20, double factor = 2.0,
                              int min_history = 5, double noise_multiple = 0);

// ---- Association across runs --------------------------------------------------
// Spearman's rho: Pearson's correlation of the ranks of x and of y (ties get
// their average rank). NaN when either has fewer than two distinct values.
// REQUIRES: x.size() == y.size() >= 2, all finite (else Error).
double spearman(std::span<const double> x, std::span<const double> y);

// rho with a percentile bootstrap interval over `resamples` resamplings of
// the pairs (splitmix64 from `seed`: the same everywhere); resamples whose
// rho is NaN are dropped. n is the number of pairs.
Interval spearman_interval(std::span<const double> x, std::span<const double> y, int resamples,
                           uint64_t seed, double confidence = 0.95);

// p1 - p2 for p1 = hits1 / n1 and p2 = hits2 / n2, with Newcombe's hybrid
// score interval (method 10 of Newcombe 1998, from two Wilson intervals),
// which stays inside [-1, 1] and behaves at 0 and n hits. n = n1 + n2.
// REQUIRES: 0 <= hits <= n, n1, n2 >= 1 (else Error).
Interval proportion_difference(int64_t hits1, int64_t n1, int64_t hits2, int64_t n2,
                               double confidence = 0.95);

}  // namespace gradflow::stats
