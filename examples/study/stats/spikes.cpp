// Loss spikes: a value above a multiple of the running median of the
// values before it (stats.h).
#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

#include "examples/study/stats/stats.h"
#include "tensor/error.h"

namespace gradflow::stats {

namespace {

// The middle value of v, or the mean of the two middle values; reorders v.
double median_of(std::vector<double>& v) {
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  if (v.size() % 2 == 1) return v[mid];
  const double below = *std::max_element(v.begin(), v.begin() + mid);
  return below + (v[mid] - below) / 2;
}

}  // namespace

std::vector<bool> loss_spikes(std::span<const double> loss, int window, double factor,
                              int min_history, double noise_multiple) {
  if (!(noise_multiple >= 0))
    fail("loss_spikes: noise_multiple must be >= 0, got ", noise_multiple);
  if (window < 1) fail("loss_spikes: window must be >= 1, got ", window);
  if (min_history < 1) fail("loss_spikes: min_history must be >= 1, got ", min_history);
  if (!(factor > 0)) fail("loss_spikes: factor must be > 0, got ", factor);
  std::vector<bool> flags(loss.size(), false);
  std::vector<double> recent;
  for (size_t i = static_cast<size_t>(min_history); i < loss.size(); ++i) {
    recent.clear();
    for (size_t j = i - std::min(i, static_cast<size_t>(window)); j < i; ++j)
      if (std::isfinite(loss[j])) recent.push_back(loss[j]);
    if (recent.empty()) continue;
    const double median = median_of(recent);
    if (!std::isfinite(loss[i])) {
      flags[i] = true;
      continue;
    }
    if (!(loss[i] > factor * median)) continue;
    if (noise_multiple > 0) {
      for (double& v : recent) v = std::abs(v - median);
      const double noise = 1.4826 * median_of(recent);
      if (!(loss[i] - median > noise_multiple * noise)) continue;
    }
    flags[i] = true;
  }
  return flags;
}

}  // namespace gradflow::stats
