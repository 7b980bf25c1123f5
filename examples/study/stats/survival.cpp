// Censored outcomes (steps to a threshold within a budget): the paired test
// on differences up to each pair's common follow-up, and the Kaplan-Meier
// median with its Brookmeyer-Crowley interval. Formulas in inference.h.
#include <algorithm>
#include <cmath>
#include <vector>

#include "examples/study/stats/inference.h"
#include "tensor/error.h"

namespace gradflow::stats {

namespace {

const double kInf = std::numeric_limits<double>::infinity();

// 0.5 up to rounding: a product such as 9/10 x 8/9 x ... x 5/6 that is 1/2
// exactly may come out an ulp above it, and must still reach the median.
const double kHalf = 0.5 + 1e-12;

void check_times(const char* fn, std::span<const CensoredTime> times, const char* name) {
  if (times.empty()) fail(fn, ": ", name, " is empty");
  for (size_t i = 0; i < times.size(); ++i)
    if (!(times[i].time >= 0) || !std::isfinite(times[i].time))
      fail(fn, ": ", name, "[", i, "].time must be finite and >= 0, got ", times[i].time);
}

// The median of xs (the mean of the two middle values when n is even).
double median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  const size_t n = xs.size();
  return n % 2 ? xs[n / 2] : 0.5 * (xs[n / 2 - 1] + xs[n / 2]);
}

}  // namespace

CensoredPairedTest paired_censored_test(std::span<const CensoredTime> a,
                                        std::span<const CensoredTime> b, int64_t draws,
                                        uint64_t seed) {
  const char* fn = "paired_censored_test";
  check_times(fn, a, "a");
  check_times(fn, b, "b");
  if (a.size() != b.size())
    fail(fn, ": a and b must pair up run by run, got ", a.size(), " and ", b.size(), " runs");
  CensoredPairedTest out;
  out.n = static_cast<int64_t>(a.size());
  std::vector<double> d(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    // The common follow-up: past the earlier censoring, neither run is seen.
    double h = kInf;
    if (a[i].censored) h = std::min(h, a[i].time);
    if (b[i].censored) h = std::min(h, b[i].time);
    d[i] = std::min(a[i].time, h) - std::min(b[i].time, h);
    out.one_censored += a[i].censored != b[i].censored;
    out.both_censored += a[i].censored && b[i].censored;
  }
  const PermutationTest test = paired_permutation_test(d, draws, seed);
  out.p_value = test.p_value;
  out.mean_difference = test.mean_difference;
  out.exact = test.exact;
  out.median_difference = median(d);
  return out;
}

KaplanMeierMedian kaplan_meier_median(std::span<const CensoredTime> times, double level) {
  const char* fn = "kaplan_meier_median";
  check_times(fn, times, "times");
  if (!(level > 0 && level < 1)) fail(fn, ": level must be in (0, 1), got ", level);
  // Events before censorings at the same time: a run censored at t was still
  // at risk at t.
  std::vector<CensoredTime> sorted(times.begin(), times.end());
  std::sort(sorted.begin(), sorted.end(), [](const CensoredTime& x, const CensoredTime& y) {
    return x.time < y.time || (x.time == y.time && !x.censored && y.censored);
  });
  const double z = normal_quantile(0.5 + level / 2);
  KaplanMeierMedian out;
  out.n = static_cast<int64_t>(sorted.size());
  out.level = level;
  double survival = 1, greenwood_sum = 0;
  size_t i = 0;
  while (i < sorted.size()) {
    const double t = sorted[i].time;
    const double at_risk = static_cast<double>(sorted.size() - i);
    double deaths = 0;
    size_t j = i;
    for (; j < sorted.size() && sorted[j].time == t; ++j) deaths += !sorted[j].censored;
    i = j;
    if (deaths == 0) continue;  // censorings only: S does not step
    out.events += static_cast<int64_t>(deaths);
    survival *= 1 - deaths / at_risk;
    // Greenwood's term is infinite when everyone at risk dies; S is then 0
    // with no spread, which the checks below read as se = 0.
    const bool all_die = deaths == at_risk;
    if (!all_die) greenwood_sum += deaths / (at_risk * (at_risk - deaths));
    const double se = all_die ? 0 : survival * std::sqrt(greenwood_sum);
    if (!out.reached && survival <= kHalf) {
      out.reached = true;
      out.median = t;
    }
    // The lower band reaches 0.5 first: that is the interval's lower end.
    if (std::isinf(out.lo) && survival - z * se <= kHalf) out.lo = t;
    if (std::isinf(out.hi) && survival + z * se <= kHalf) out.hi = t;
  }
  return out;
}

}  // namespace gradflow::stats
