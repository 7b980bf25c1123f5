#include "examples/study/stats/stats.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <numbers>
#include <numeric>
#include <sstream>

#include "tensor/error.h"

namespace gradflow::stats {

namespace {

// Past this many degrees of freedom the incomplete beta's continued fraction
// loses digits (quantiles off by 6e-11 relative at df = 1e7, 1.5e-7 at 1e10),
// so the t tail comes from its expansion about the normal instead.
const double kLargeDf = 1e7;

void check_samples(const char* fn, std::span<const double> xs, const char* name = "xs") {
  if (xs.empty()) fail(fn, ": ", name, " is empty");
  for (size_t i = 0; i < xs.size(); ++i)
    if (!std::isfinite(xs[i]))
      fail(fn, ": ", name, "[", i, "] is ", xs[i],
           " (drop or count non-finite values before taking statistics)");
}

void check_confidence(const char* fn, double confidence) {
  if (!(confidence > 0 && confidence < 1))
    fail(fn, ": confidence must be in (0, 1), got ", confidence);
}

void check_digits(const char* fn, int digits) {
  if (digits < 0 || digits > 17) fail(fn, ": digits must be in [0, 17], got ", digits);
}

// x_0 + (1/n) sum (x_i - x_0): exact for equal values, and the shift keeps
// the sum small when the values sit far from zero.
double mean_of(std::span<const double> xs) {
  double sum = 0;
  for (double x : xs) sum += x - xs[0];
  return xs[0] + sum / static_cast<double>(xs.size());
}

// sqrt(sum (x_i - m)^2 / (n - 1)), NaN for n == 1.
double sd_of(std::span<const double> xs) {
  if (xs.size() < 2) return kNaN;
  const double m = mean_of(xs);
  double ss = 0;
  for (double x : xs) ss += (x - m) * (x - m);
  return std::sqrt(ss / static_cast<double>(xs.size() - 1));
}

// ln Γ(a + b) - ln Γ(a). For large a the two lgamma values are ~a ln a and
// their difference would lose digits, so take the difference of Stirling's
// series term by term: (a - 1/2) ln(1 + b/a) + b ln(a + b) - b + 1/(12z) - 1/(360z^3) | z=a..a+b.
double log_gamma_ratio(double a, double b) {
  if (a < 1e3) return std::lgamma(a + b) - std::lgamma(a);
  const double z = a + b;
  return (a - 0.5) * std::log1p(b / a) + b * std::log(z) - b + 1 / (12 * z) - 1 / (12 * a) -
         1 / (360 * z * z * z) + 1 / (360 * a * a * a);
}

// v, or 1e-300 where v would divide by (nearly) zero in Lentz's method.
double guard(double v) { return std::abs(v) < 1e-300 ? 1e-300 : v; }

// The continued fraction of I_x(a, b) (modified Lentz, as in Numerical
// Recipes' betacf); converges fast for x < (a + 1) / (a + b + 2).
double beta_fraction(double a, double b, double x) {
  double c = 1, d = 1 / guard(1 - (a + b) * x / (a + 1));
  double h = d;
  for (int m = 1; m <= 1000000; ++m) {
    const double m2 = 2.0 * m;
    double step = m * (b - m) * x / ((a - 1 + m2) * (a + m2));
    d = 1 / guard(1 + step * d);
    c = guard(1 + step / c);
    h *= d * c;
    step = -(a + m) * (a + b + m) * x / ((a + m2) * (a + 1 + m2));
    d = 1 / guard(1 + step * d);
    c = guard(1 + step / c);
    const double delta = d * c;
    h *= delta;
    if (std::abs(delta - 1) < 1e-15) return h;
  }
  fail("student_t_cdf: incomplete beta did not converge for a = ", a, ", b = ", b, ", x = ", x);
}

// P(T > t) for t >= 0: I_x(df/2, 1/2) / 2 with x = df / (df + t^2) = 1 / (1 + u),
// u = t^2 / df; x, 1 - x and their logs come from u to avoid cancellation.
double t_upper_tail(double t, double df) {
  if (t == 0) return 0.5;
  if (std::isinf(t)) return 0;
  if (df > kLargeDf) {
    if (t > 40) return 0;  // below 1e-340 (no double), and the series would overflow
    // Q(t) + phi(t) [(t^3 + t) / (4 df) + (3t^7 - 7t^5 - 5t^3 - 3t) / (96 df^2)], error O(df^-3).
    const double t2 = t * t, phi = std::exp(-t2 / 2) / std::sqrt(2 * std::numbers::pi);
    const double first = (t2 + 1) * t / 4, second = (((3 * t2 - 7) * t2 - 5) * t2 - 3) * t / 96;
    return 0.5 * std::erfc(t / std::sqrt(2.0)) + phi * (first + second / df) / df;
  }
  const double a = df / 2, b = 0.5;
  const double u = (t / std::sqrt(df)) * (t / std::sqrt(df));
  const double x = 1 / (1 + u), y = 1 / (1 + 1 / u);  // y = 1 - x
  // ln(1 + u), also where u overflows (t > 1e154 sqrt(df)).
  const double log_1pu = std::isinf(u) ? 2 * std::log(t / std::sqrt(df)) : std::log1p(u);
  // x^a (1 - x)^b / B(a, b), with ln B(a, b) = ln Γ(b) - (ln Γ(a + b) - ln Γ(a)).
  const double log_beta = std::lgamma(b) - log_gamma_ratio(a, b);
  const double front = std::exp(-a * log_1pu - b * std::log1p(1 / u) - log_beta);
  const double ibeta = x < (a + 1) / (a + b + 2) ? front * beta_fraction(a, b, x) / a
                                                 : 1 - front * beta_fraction(b, a, y) / b;
  return ibeta / 2;
}

// The mean of xs with its bounds left NaN, as they stay when n == 1.
Interval interval_without_bounds(std::span<const double> xs, double confidence,
                                 IntervalMethod method) {
  return {.mean = mean_of(xs),
          .half_width = kNaN,
          .lo = kNaN,
          .hi = kNaN,
          .n = static_cast<int64_t>(xs.size()),
          .confidence = confidence,
          .method = method};
}

// m +- t_{1-a/2, n-1} s / sqrt(n).
Interval t_interval_of(std::span<const double> xs, double confidence) {
  Interval out = interval_without_bounds(xs, confidence, IntervalMethod::StudentT);
  if (xs.size() < 2) return out;
  const double t = student_t_quantile(1 - (1 - confidence) / 2, static_cast<double>(xs.size() - 1));
  out.se = sd_of(xs) / std::sqrt(static_cast<double>(xs.size()));
  out.half_width = t * out.se;
  out.lo = out.mean - out.half_width;
  out.hi = out.mean + out.half_width;
  return out;
}

// splitmix64 (Steele, Lea, Flood 2014): one add and two multiply-xorshifts.
uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Uniform in [0, n): rejects the 2^64 mod n lowest draws so r % n is unbiased.
uint64_t uniform_below(uint64_t& state, uint64_t n) {
  const uint64_t threshold = (0 - n) % n;
  for (;;) {
    const uint64_t r = splitmix64(state);
    if (r >= threshold) return r % n;
  }
}

// The p-quantile of sorted values, interpolating between order statistics.
double sorted_quantile(const std::vector<double>& sorted, double p) {
  const double h = p * static_cast<double>(sorted.size() - 1);
  const size_t i = std::min(static_cast<size_t>(h), sorted.size() - 1);
  if (i + 1 == sorted.size()) return sorted[i];
  return sorted[i] + (h - static_cast<double>(i)) * (sorted[i + 1] - sorted[i]);
}

// v with `digits` decimals; "nan", "inf", "-inf" for the rest.
std::string fixed(double v, int digits) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::ostringstream out;
  out << std::fixed << std::setprecision(digits) << v;
  return out.str();
}

// Ranks 1..n, ties sharing the mean of the ranks they span.
std::vector<double> ranks(std::span<const double> v) {
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&v](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    const double shared = (static_cast<double>(i + j) / 2) + 1;
    for (size_t k = i; k <= j; ++k) r[order[k]] = shared;
    i = j + 1;
  }
  return r;
}

double pearson(const std::vector<double>& a, const std::vector<double>& b) {
  const double n = static_cast<double>(a.size());
  const double ma = std::accumulate(a.begin(), a.end(), 0.0) / n,
               mb = std::accumulate(b.begin(), b.end(), 0.0) / n;
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    sab += (a[i] - ma) * (b[i] - mb);
    saa += (a[i] - ma) * (a[i] - ma);
    sbb += (b[i] - mb) * (b[i] - mb);
  }
  return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : kNaN;
}

void check_pairs(const char* fn, std::span<const double> x, std::span<const double> y) {
  if (x.size() != y.size() || x.size() < 2)
    fail(fn, ": needs two equally long samples of at least 2, got ", x.size(), " and ", y.size());
  for (size_t i = 0; i < x.size(); ++i)
    if (!std::isfinite(x[i]) || !std::isfinite(y[i])) fail(fn, ": pair ", i, " is not finite");
}

// The Wilson score interval of hits / n.
std::pair<double, double> wilson(int64_t hits, int64_t n, double z) {
  const double p = static_cast<double>(hits) / static_cast<double>(n), nn = static_cast<double>(n);
  const double centre = (p + z * z / (2 * nn)) / (1 + z * z / nn);
  const double half = z / (1 + z * z / nn) * std::sqrt(p * (1 - p) / nn + z * z / (4 * nn * nn));
  return {centre - half, centre + half};
}

}  // namespace

double mean(std::span<const double> xs) {
  check_samples("mean", xs);
  return mean_of(xs);
}

double sample_sd(std::span<const double> xs) {
  check_samples("sample_sd", xs);
  return sd_of(xs);
}

double standard_error(std::span<const double> xs) {
  check_samples("standard_error", xs);
  return sd_of(xs) / std::sqrt(static_cast<double>(xs.size()));
}

double student_t_cdf(double t, double df) {
  if (!(df > 0)) fail("student_t_cdf: df must be > 0, got ", df);
  if (std::isnan(t)) fail("student_t_cdf: t is nan");
  const double tail = t_upper_tail(std::abs(t), df);
  return t >= 0 ? 1 - tail : tail;
}

double student_t_quantile(double p, double df) {
  if (!(p > 0 && p < 1)) fail("student_t_quantile: p must be in (0, 1), got ", p);
  if (!(df > 0)) fail("student_t_quantile: df must be > 0, got ", df);
  if (p == 0.5) return 0;
  // Solve P(T > t) = q for t > 0 on the smaller tail; 1 - p is exact for p > 0.5.
  const double q = p < 0.5 ? p : 1 - p;
  double lo = 0, hi = 1;
  while (t_upper_tail(hi, df) > q) {
    lo = hi;
    hi *= 2;
  }
  for (int i = 0; i < 300 && hi - lo > 1e-15 * hi; ++i) {
    const double mid = lo + (hi - lo) / 2;
    if (t_upper_tail(mid, df) > q)
      lo = mid;
    else
      hi = mid;
  }
  const double t = lo + (hi - lo) / 2;
  return p < 0.5 ? -t : t;
}

Interval t_interval(std::span<const double> xs, double confidence) {
  check_samples("t_interval", xs);
  check_confidence("t_interval", confidence);
  return t_interval_of(xs, confidence);
}

Interval paired_difference(std::span<const double> a, std::span<const double> b,
                           double confidence) {
  if (a.size() != b.size())
    fail("paired_difference: a has ", a.size(), " values, b has ", b.size(),
         " (pairs must share seeds)");
  check_samples("paired_difference", a, "a");
  check_samples("paired_difference", b, "b");
  check_confidence("paired_difference", confidence);
  std::vector<double> d(a.size());
  for (size_t i = 0; i < a.size(); ++i) d[i] = a[i] - b[i];
  check_samples("paired_difference", d, "(a - b)");
  return t_interval_of(d, confidence);
}

Interval bootstrap_interval(std::span<const double> xs, int resamples, uint64_t seed,
                            double confidence) {
  check_samples("bootstrap_interval", xs);
  check_confidence("bootstrap_interval", confidence);
  if (resamples < 1) fail("bootstrap_interval: resamples must be >= 1, got ", resamples);
  Interval out = interval_without_bounds(xs, confidence, IntervalMethod::PercentileBootstrap);
  if (xs.size() < 2) return out;
  uint64_t state = seed;
  std::vector<double> draw(xs.size()), means(static_cast<size_t>(resamples));
  for (double& m : means) {
    for (double& v : draw) v = xs[uniform_below(state, xs.size())];
    m = mean_of(draw);
  }
  std::sort(means.begin(), means.end());
  const double alpha = 1 - confidence;
  out.lo = sorted_quantile(means, alpha / 2);
  out.hi = sorted_quantile(means, 1 - alpha / 2);
  out.half_width = (out.hi - out.lo) / 2;
  return out;
}

Comparison compare(const Interval& diff, double margin, bool higher_is_better) {
  if (!(margin >= 0)) fail("compare: margin must be >= 0, got ", margin);
  if (diff.n < 2) return Comparison::NoDetectableDifference;
  const bool higher = diff.lo > margin;
  const bool lower = diff.hi < -margin;
  if (higher) return higher_is_better ? Comparison::Better : Comparison::Worse;
  if (lower) return higher_is_better ? Comparison::Worse : Comparison::Better;
  return Comparison::NoDetectableDifference;
}

double margin_p_value(const Interval& diff, double margin) {
  if (!(margin >= 0)) fail("margin_p_value: margin must be >= 0, got ", margin);
  if (diff.n < 2 || diff.method != IntervalMethod::StudentT) return 1;
  const double se = std::isfinite(diff.se)
                        ? diff.se
                        : diff.half_width / student_t_quantile(1 - (1 - diff.confidence) / 2,
                                                               static_cast<double>(diff.n - 1));
  const double excess = std::abs(diff.mean) - margin;
  if (!(excess > 0)) return 1;
  if (!(se > 0)) return 0;  // identical differences past the margin: no doubt left
  const double t = excess / se;
  return std::min(1.0, 2 * (1 - student_t_cdf(t, static_cast<double>(diff.n - 1))));
}

std::string describe(const Interval& diff, double margin, bool higher_is_better,
                     const std::string& unit, int digits) {
  if (!(margin >= 0)) fail("describe: margin must be >= 0, got ", margin);
  check_digits("describe", digits);
  const std::string u = unit.empty() ? "" : " " + unit;
  const std::string seeds = std::to_string(diff.n) + (diff.n == 1 ? " seed" : " seeds");
  if (diff.n < 2 || std::isnan(diff.half_width))
    return "no detectable difference with " + seeds + " (difference " + fixed(diff.mean, digits) +
           u + ", no interval)";
  const std::string interval =
      significant(100 * diff.confidence, 6) + "% " +
      (diff.method == IntervalMethod::StudentT              ? "t-interval"
       : diff.method == IntervalMethod::PercentileBootstrap ? "bootstrap interval"
                                                            : "score interval");
  const std::string plus_minus = " +- " + fixed(diff.half_width, digits) + u;
  const bool excludes_zero = diff.lo > 0 || diff.hi < 0;
  const Comparison c = compare(diff, margin, higher_is_better);
  if (c != Comparison::NoDetectableDifference)
    return std::string(c == Comparison::Better ? "better" : "worse") + " by " +
           fixed(std::abs(diff.mean), digits) + plus_minus + " (n = " + std::to_string(diff.n) +
           ", the whole " + interval + " past the margin " + significant(margin, 6) + ")";
  const std::string detail = " (difference " + fixed(diff.mean, digits) + plus_minus + ", " +
                             interval + (excludes_zero ? " excludes 0)" : " includes 0)");
  if (excludes_zero)
    return "no difference past the margin " + significant(margin, 6) + " with " + seeds + detail;
  return "no detectable difference with " + seeds + detail;
}

std::string significant(double v, int digits) {
  if (!std::isfinite(v)) return "-";
  std::ostringstream out;
  out.precision(digits);
  out << v;
  return out.str();
}

std::string format_interval(const Interval& interval, int digits, bool show_n) {
  check_digits("format_interval", digits);
  const std::string m = fixed(interval.mean, digits);
  if (std::isnan(interval.half_width))
    return m + " (n = " + std::to_string(interval.n) + ", no interval)";
  std::string out = m + " +- " + fixed(interval.half_width, digits);
  if (show_n) out += " (n = " + std::to_string(interval.n) + ")";
  return out;
}

Interval mean_and_se(double mean, double se, int64_t n) {
  const double half = 1.96 * se;
  return {mean, half, mean - half, mean + half, n, 0.95, IntervalMethod::NormalMean, se};
}

Interval mean_and_se(const std::vector<double>& draws) {
  const double n = static_cast<double>(draws.size());
  if (draws.empty()) return mean_and_se(kNaN, kNaN, 0);
  double mean = 0;
  for (double x : draws) mean += x;
  mean /= n;
  if (draws.size() < 2) return mean_and_se(mean, kNaN, 1);
  double ss = 0;
  for (double x : draws) ss += (x - mean) * (x - mean);
  return mean_and_se(mean, std::sqrt(ss / (n - 1) / n), static_cast<int64_t>(draws.size()));
}

std::string format_estimate(const Interval& e, int digits) {
  if (!std::isfinite(e.mean)) return "-";
  return significant(e.mean, digits) + " +- " + significant(e.half_width, 2);
}

std::string format_bounds(const Interval& i, int digits) {
  if (i.n == 0) return "-";
  return significant(i.mean, digits + 1) + " [" + significant(i.lo, digits + 1) + ", " +
         significant(i.hi, digits + 1) + "] (n = " + std::to_string(i.n) + ")";
}

double spearman(std::span<const double> x, std::span<const double> y) {
  check_pairs("spearman", x, y);
  return pearson(ranks(x), ranks(y));
}

Interval spearman_interval(std::span<const double> x, std::span<const double> y, int resamples,
                           uint64_t seed, double confidence) {
  check_pairs("spearman_interval", x, y);
  if (resamples < 1) fail("spearman_interval: resamples must be >= 1, got ", resamples);
  Interval out{spearman(x, y),
               kNaN,
               kNaN,
               kNaN,
               static_cast<int64_t>(x.size()),
               confidence,
               IntervalMethod::PercentileBootstrap};
  std::vector<double> rhos, a(x.size()), b(x.size());
  uint64_t state = seed;
  for (int r = 0; r < resamples; ++r) {
    for (size_t i = 0; i < x.size(); ++i) {
      const size_t pick = static_cast<size_t>(splitmix64(state) % x.size());
      a[i] = x[pick], b[i] = y[pick];
    }
    const double rho = pearson(ranks(a), ranks(b));
    if (std::isfinite(rho)) rhos.push_back(rho);
  }
  if (rhos.size() < 2) return out;
  std::sort(rhos.begin(), rhos.end());
  out.lo = sorted_quantile(rhos, (1 - confidence) / 2);
  out.hi = sorted_quantile(rhos, 1 - (1 - confidence) / 2);
  out.half_width = (out.hi - out.lo) / 2;
  return out;
}

Interval proportion_difference(int64_t hits1, int64_t n1, int64_t hits2, int64_t n2,
                               double confidence) {
  if (n1 < 1 || n2 < 1 || hits1 < 0 || hits2 < 0 || hits1 > n1 || hits2 > n2)
    fail("proportion_difference: needs 0 <= hits <= n and n >= 1, got ", hits1, "/", n1, " and ",
         hits2, "/", n2);
  const double z =
      student_t_quantile(1 - (1 - confidence) / 2, std::numeric_limits<double>::infinity());
  const double p1 = static_cast<double>(hits1) / static_cast<double>(n1),
               p2 = static_cast<double>(hits2) / static_cast<double>(n2);
  const auto [l1, u1] = wilson(hits1, n1, z);
  const auto [l2, u2] = wilson(hits2, n2, z);
  const double d = p1 - p2;
  Interval out{d,
               kNaN,
               d - std::sqrt((p1 - l1) * (p1 - l1) + (u2 - p2) * (u2 - p2)),
               d + std::sqrt((u1 - p1) * (u1 - p1) + (p2 - l2) * (p2 - l2)),
               n1 + n2,
               confidence,
               IntervalMethod::NewcombeScore};
  out.lo = std::max(out.lo, -1.0), out.hi = std::min(out.hi, 1.0);  // rounding at the edges
  out.half_width = (out.hi - out.lo) / 2;
  return out;
}

}  // namespace gradflow::stats
