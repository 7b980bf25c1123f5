// Exact binomial intervals, Holm, the sign-flip permutation test, TOST and
// the seed bootstrap. The formulas are on the declarations in inference.h.
#include "examples/study/stats/inference.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>

#include "examples/study/stats/stats.h"
#include "tensor/error.h"

namespace gradflow::stats {

namespace {

void check_level(const char* fn, const char* name, double level) {
  if (!(level > 0 && level < 1)) fail(fn, ": ", name, " must be in (0, 1), got ", level);
}

void check_finite(const char* fn, std::span<const double> xs, const char* name) {
  if (xs.empty()) fail(fn, ": ", name, " is empty");
  for (size_t i = 0; i < xs.size(); ++i)
    if (!std::isfinite(xs[i])) fail(fn, ": ", name, "[", i, "] is ", xs[i]);
}

// The continued fraction of I_x(a, b) (Numerical Recipes' betacf), evaluated
// by the modified Lentz method; converges fast for x < (a + 1) / (a + b + 2).
double beta_continued_fraction(double a, double b, double x) {
  const double tiny = 1e-300, eps = 1e-16;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  if (std::fabs(d) < tiny) d = tiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 10000; ++m) {
    const double m2 = 2.0 * m;
    // Even step: d_{2m} = m (b - m) x / ((a + 2m - 1)(a + 2m)).
    double aa = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    h *= d * c;
    // Odd step: d_{2m+1} = -(a + m)(a + b + m) x / ((a + 2m)(a + 2m + 1)).
    aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
    d = 1 + aa * d;
    if (std::fabs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (std::fabs(c) < tiny) c = tiny;
    d = 1 / d;
    const double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1) < eps) break;
  }
  return h;
}

// The p in [0, 1] with I_p(a, b) = target: I is increasing in p, so bisect
// until the bracket is below 1e-14 (well inside the documented 1e-12).
double beta_quantile(double a, double b, double target) {
  double lo = 0, hi = 1;
  while (hi - lo > 1e-14) {
    const double mid = 0.5 * (lo + hi);
    (regularized_incomplete_beta(a, b, mid) < target ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

// |sum_i s_i d_i| for the signs in the low n bits of `signs` (bit set: flip).
double flipped_sum(std::span<const double> d, uint64_t signs) {
  double sum = 0;
  for (size_t i = 0; i < d.size(); ++i) sum += (signs >> i & 1) ? -d[i] : d[i];
  return std::fabs(sum);
}

// An index in [0, k) from the engine's raw output, by rejection so every
// index is equally likely (std::uniform_int_distribution differs across
// standard libraries).
uint64_t uniform_index(std::mt19937_64& rng, uint64_t k) {
  const uint64_t limit = std::numeric_limits<uint64_t>::max() -
                         std::numeric_limits<uint64_t>::max() % k;  // a multiple of k
  uint64_t r;
  do r = rng();
  while (r >= limit);
  return r % k;
}

// The q-quantile of sorted xs, interpolated linearly between order statistics
// (R's type 7).
double quantile_sorted(const std::vector<double>& xs, double q) {
  const double pos = q * static_cast<double>(xs.size() - 1);
  const size_t i = static_cast<size_t>(std::floor(pos));
  if (i + 1 >= xs.size()) return xs.back();
  return xs[i] + (pos - static_cast<double>(i)) * (xs[i + 1] - xs[i]);
}

}  // namespace

// ---- exact binomial interval ---------------------------------------------------

double regularized_incomplete_beta(double a, double b, double x) {
  if (!(a > 0 && b > 0 && std::isfinite(a) && std::isfinite(b)))
    fail("regularized_incomplete_beta: a and b must be finite and > 0, got ", a, ", ", b);
  if (!(x >= 0 && x <= 1)) fail("regularized_incomplete_beta: x must be in [0, 1], got ", x);
  if (x == 0 || x == 1) return x;
  // x^a (1 - x)^b / (a B(a, b)), in logs.
  const double log_front =
      std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
  // The fraction converges for x below the mean-ish point; above it use
  // I_x(a, b) = 1 - I_{1-x}(b, a).
  if (x < (a + 1) / (a + b + 2)) return std::exp(log_front) * beta_continued_fraction(a, b, x) / a;
  return 1 - std::exp(log_front) * beta_continued_fraction(b, a, 1 - x) / b;
}

BinomialInterval exact_binomial_interval(int64_t successes, int64_t trials, double level) {
  const char* fn = "exact_binomial_interval";
  if (trials < 1) fail(fn, ": trials must be >= 1, got ", trials);
  if (successes < 0 || successes > trials)
    fail(fn, ": successes must be in [0, trials = ", trials, "], got ", successes);
  check_level(fn, "level", level);
  const double x = static_cast<double>(successes), n = static_cast<double>(trials);
  const double tail = (1 - level) / 2;
  BinomialInterval out;
  out.successes = successes;
  out.trials = trials;
  out.level = level;
  out.estimate = x / n;
  out.lo = successes == 0 ? 0.0 : beta_quantile(x, n - x + 1, tail);
  out.hi = successes == trials ? 1.0 : beta_quantile(x + 1, n - x, 1 - tail);
  return out;
}

// ---- Holm ---------------------------------------------------------------------

double fisher_exact_p(int64_t hits_a, int64_t n_a, int64_t hits_b, int64_t n_b) {
  if (n_a < 1 || n_b < 1) fail("fisher_exact_p: n_a and n_b must be >= 1, got ", n_a, ", ", n_b);
  if (hits_a < 0 || hits_a > n_a || hits_b < 0 || hits_b > n_b)
    fail("fisher_exact_p: hits must be in [0, n], got ", hits_a, " of ", n_a, " and ", hits_b,
         " of ", n_b);
  const int64_t hits = hits_a + hits_b, total = n_a + n_b;
  // log C(n, k) from lgamma: exact enough for the study's few dozen runs.
  auto log_choose = [](int64_t n, int64_t k) {
    return std::lgamma(static_cast<double>(n + 1)) - std::lgamma(static_cast<double>(k + 1)) -
           std::lgamma(static_cast<double>(n - k + 1));
  };
  auto probability = [&](int64_t k) {
    return std::exp(log_choose(hits, k) + log_choose(total - hits, n_a - k) -
                    log_choose(total, n_a));
  };
  const double observed = probability(hits_a);
  double p = 0;
  for (int64_t k = std::max<int64_t>(0, n_a - (total - hits)); k <= std::min(hits, n_a); ++k) {
    const double q = probability(k);
    if (q <= observed * (1 + 1e-7)) p += q;
  }
  return std::min(1.0, p);
}

std::vector<double> holm(std::span<const double> p_values) {
  for (size_t i = 0; i < p_values.size(); ++i)
    if (!(p_values[i] >= 0 && p_values[i] <= 1))
      fail("holm: p_values[", i, "] must be in [0, 1], got ", p_values[i]);
  const size_t m = p_values.size();
  std::vector<size_t> order(m);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t i, size_t j) { return p_values[i] < p_values[j]; });
  std::vector<double> adjusted(m);
  double running_max = 0;
  for (size_t rank = 0; rank < m; ++rank) {
    const double scaled = static_cast<double>(m - rank) * p_values[order[rank]];
    running_max = std::max(running_max, std::min(1.0, scaled));
    adjusted[order[rank]] = running_max;
  }
  return adjusted;
}

// ---- sign-flip permutation test -------------------------------------------------

PermutationTest paired_permutation_test(std::span<const double> differences, int64_t draws,
                                        uint64_t seed) {
  const char* fn = "paired_permutation_test";
  check_finite(fn, differences, "differences");
  if (draws < 1) fail(fn, ": draws must be >= 1, got ", draws);
  const size_t n = differences.size();
  double sum = 0, abs_sum = 0;
  for (double d : differences) sum += d, abs_sum += std::fabs(d);
  // Patterns within rounding of the observed |sum| count as ties, hence extreme.
  const double threshold = std::fabs(sum) - 1e-12 * abs_sum;

  PermutationTest out;
  out.n = static_cast<int64_t>(n);
  out.mean_difference = sum / static_cast<double>(n);
  int64_t extreme = 0;
  if (n <= 16) {
    const uint64_t patterns = uint64_t{1} << n;
    for (uint64_t s = 0; s < patterns; ++s) extreme += flipped_sum(differences, s) >= threshold;
    out.exact = true;
    out.draws = static_cast<int64_t>(patterns);
    out.p_value = static_cast<double>(extreme) / static_cast<double>(patterns);
    return out;
  }
  std::mt19937_64 rng(seed);
  for (int64_t k = 0; k < draws; ++k) {
    // One draw's signs: 64 bits per engine output.
    double flipped = 0;
    for (size_t start = 0; start < n; start += 64) {
      const uint64_t bits = rng();
      const size_t end = std::min(n, start + 64);
      for (size_t i = start; i < end; ++i)
        flipped += (bits >> (i - start) & 1) ? -differences[i] : differences[i];
    }
    extreme += std::fabs(flipped) >= threshold;
  }
  out.exact = false;
  out.draws = draws;
  out.p_value = static_cast<double>(extreme + 1) / static_cast<double>(draws + 1);
  return out;
}

// ---- TOST --------------------------------------------------------------------

double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

double normal_quantile(double p) {
  if (!(p > 0 && p < 1)) fail("normal_quantile: p must be in (0, 1), got ", p);
  if (p > 0.5) return -normal_quantile(1 - p);  // bisect in the lower tail, where Phi is exact
  double lo = -40, hi = 0;
  for (int k = 0; k < 200 && hi - lo > 1e-15; ++k) {
    const double mid = 0.5 * (lo + hi);
    (normal_cdf(mid) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

EquivalenceTest tost_equivalence(double sample_mean, double standard_error, double target,
                                 double margin, double alpha) {
  const char* fn = "tost_equivalence";
  if (!std::isfinite(sample_mean) || !std::isfinite(target))
    fail(fn, ": sample_mean and target must be finite, got ", sample_mean, " and ", target);
  if (!(standard_error > 0) || !std::isfinite(standard_error))
    fail(fn, ": standard_error must be finite and > 0, got ", standard_error);
  if (!(margin > 0) || !std::isfinite(margin))
    fail(fn, ": margin must be finite and > 0, got ", margin);
  if (!(alpha > 0 && alpha < 0.5)) fail(fn, ": alpha must be in (0, 0.5), got ", alpha);
  EquivalenceTest out;
  out.margin = margin;
  // 1 - Phi(z) = Phi(-z), which keeps digits in the far tail.
  out.p_lower = normal_cdf(-(sample_mean - (target - margin)) / standard_error);
  out.p_upper = normal_cdf(-((target + margin) - sample_mean) / standard_error);
  out.p_value = std::max(out.p_lower, out.p_upper);
  out.equivalent = out.p_value < alpha;
  return out;
}

EquivalenceTest tost_relative(double sample_mean, double standard_error, double target,
                              double relative_margin, double alpha) {
  if (!(relative_margin > 0) || !std::isfinite(relative_margin))
    fail("tost_relative: relative_margin must be finite and > 0, got ", relative_margin);
  if (target == 0 || !std::isfinite(target))
    fail("tost_relative: target must be finite and nonzero, got ", target);
  return tost_equivalence(sample_mean, standard_error, target, relative_margin * std::fabs(target),
                          alpha);
}

int64_t tost_draws_needed(double sd_per_draw, double margin, double alpha, double miss_rate) {
  const char* fn = "tost_draws_needed";
  if (!(sd_per_draw > 0) || !std::isfinite(sd_per_draw))
    fail(fn, ": sd_per_draw must be finite and > 0, got ", sd_per_draw);
  if (!(margin > 0) || !std::isfinite(margin))
    fail(fn, ": margin must be finite and > 0, got ", margin);
  if (!(alpha > 0 && alpha < 0.5)) fail(fn, ": alpha must be in (0, 0.5), got ", alpha);
  if (!(miss_rate > 0 && miss_rate < 0.5))
    fail(fn, ": miss_rate must be in (0, 0.5), got ", miss_rate);
  const double z = normal_quantile(1 - alpha) + normal_quantile(1 - miss_rate / 2);
  const double root = sd_per_draw * z / margin;
  const double n = std::ceil(root * root);
  if (!(n < 9e18)) fail(fn, ": ", n, " draws needed; the margin is too small for this sd");
  return std::max<int64_t>(1, static_cast<int64_t>(n));
}

// ---- seed bootstrap -------------------------------------------------------------

BootstrapInterval seed_bootstrap(std::span<const int64_t> cluster_of_row,
                                 const std::function<double(std::span<const size_t>)>& statistic,
                                 int resamples, uint64_t seed, double level) {
  const char* fn = "seed_bootstrap";
  if (cluster_of_row.empty()) fail(fn, ": no rows");
  if (resamples < 1) fail(fn, ": resamples must be >= 1, got ", resamples);
  if (!statistic) fail(fn, ": no statistic given");
  check_level(fn, "level", level);
  // Rows of each cluster, clusters in increasing id (a fixed order, so the
  // draws do not depend on the order the rows came in).
  std::map<int64_t, std::vector<size_t>> by_id;
  for (size_t r = 0; r < cluster_of_row.size(); ++r) by_id[cluster_of_row[r]].push_back(r);
  std::vector<std::vector<size_t>> clusters;
  for (auto& [id, rows] : by_id) clusters.push_back(std::move(rows));

  std::vector<size_t> all(cluster_of_row.size());
  std::iota(all.begin(), all.end(), size_t{0});
  BootstrapInterval out;
  out.estimate = statistic(all);
  out.clusters = static_cast<int64_t>(clusters.size());
  out.level = level;

  std::mt19937_64 rng(seed);
  std::vector<double> stats;
  std::vector<size_t> rows;
  for (int k = 0; k < resamples; ++k) {
    rows.clear();
    for (size_t c = 0; c < clusters.size(); ++c) {
      const auto& drawn = clusters[uniform_index(rng, clusters.size())];
      rows.insert(rows.end(), drawn.begin(), drawn.end());
    }
    const double s = statistic(rows);
    if (std::isfinite(s)) stats.push_back(s);
  }
  out.resamples = static_cast<int64_t>(stats.size());
  if (stats.empty()) {
    out.lo = out.hi = kNaN;
    return out;
  }
  std::sort(stats.begin(), stats.end());
  out.lo = quantile_sorted(stats, (1 - level) / 2);
  out.hi = quantile_sorted(stats, (1 + level) / 2);
  return out;
}

BootstrapInterval seed_bootstrap_spearman(std::span<const double> x, std::span<const double> y,
                                          std::span<const int64_t> cluster_of_row, int resamples,
                                          uint64_t seed, double level) {
  const char* fn = "seed_bootstrap_spearman";
  check_finite(fn, x, "x");
  check_finite(fn, y, "y");
  if (x.size() != y.size() || x.size() != cluster_of_row.size() || x.size() < 2)
    fail(fn, ": x, y and cluster_of_row must have one size >= 2, got ", x.size(), ", ", y.size(),
         " and ", cluster_of_row.size());
  std::vector<double> xs, ys;
  auto rho = [&](std::span<const size_t> rows) {
    xs.clear();
    ys.clear();
    for (size_t r : rows) xs.push_back(x[r]), ys.push_back(y[r]);
    return spearman(xs, ys);  // NaN when a resample has no spread
  };
  return seed_bootstrap(cluster_of_row, rho, resamples, seed, level);
}

}  // namespace gradflow::stats
