// Association between two measurements across runs, for the --full claims:
// Spearman's rank correlation with a bootstrap interval, and the difference
// of two proportions with Newcombe's interval.
#pragma once

#include <cstdint>
#include <span>

#include "examples/study/stats.h"

namespace gradflow::study {

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

}  // namespace gradflow::study
