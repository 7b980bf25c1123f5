#include "examples/study/correlation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "tensor/error.h"

namespace gradflow::study {

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();

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

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// The Wilson score interval of hits / n.
std::pair<double, double> wilson(int64_t hits, int64_t n, double z) {
  const double p = static_cast<double>(hits) / static_cast<double>(n), nn = static_cast<double>(n);
  const double centre = (p + z * z / (2 * nn)) / (1 + z * z / nn);
  const double half = z / (1 + z * z / nn) * std::sqrt(p * (1 - p) / nn + z * z / (4 * nn * nn));
  return {centre - half, centre + half};
}

}  // namespace

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
  auto quantile = [&rhos](double p) {
    const double at = p * static_cast<double>(rhos.size() - 1);
    const size_t i = static_cast<size_t>(at);
    return i + 1 < rhos.size() ? rhos[i] + (at - static_cast<double>(i)) * (rhos[i + 1] - rhos[i])
                               : rhos.back();
  };
  out.lo = quantile((1 - confidence) / 2);
  out.hi = quantile(1 - (1 - confidence) / 2);
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

}  // namespace gradflow::study
