// What the qk-rate part's claims read (qk_rate.h): the best W_Q/W_K
// multiplier at each width, the exponent alpha it follows across d_k, the
// failure boundary against the measured logit step, each with a percentile
// bootstrap over seeds; and the verdicts of C28, C29 and C30.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "examples/study/claims.h"
#include "examples/study/qk_rate.h"
#include "tensor/random.h"

namespace gradflow::study {

namespace {

constexpr int kResamples = 2000;

// A run's loss AUC; a diverged run's counts as its loss before any update
// (it learned nothing that lasted).
double auc_of(const QkRateRow& r) {
  return std::isfinite(r.run.loss_auc_budget) ? r.run.loss_auc_budget : r.run.initial_loss;
}

// sigma0 = 1's unscaled runs of a task at one width: seed -> power -> AUC.
using SeedGrid = std::map<int64_t, std::map<int, double>>;
std::map<int64_t, SeedGrid> grids(const std::vector<QkRateRow>& rows, const std::string& task) {
  std::map<int64_t, SeedGrid> out;
  for (const QkRateRow& r : rows)
    if (r.task == task && r.arm == "none" && r.sigma0 == 1)
      out[r.d_model][r.seed][r.power] = auc_of(r);
  return out;
}

// The best power at a width from the seeds `picked` (indices into its seeds).
BestPower best_of(const SeedGrid& grid, const std::vector<int64_t>& picked) {
  std::map<int, std::pair<double, double>> sums;  // power -> (sum, n)
  for (int64_t seed : picked)
    for (const auto& [power, auc] : grid.at(seed)) sums[power].first += auc, ++sums[power].second;
  std::vector<int> powers;
  std::vector<double> means;
  for (const auto& [power, s] : sums) powers.push_back(power), means.push_back(s.first / s.second);
  return best_power(powers, means);
}

std::vector<int64_t> seeds_of(const SeedGrid& grid) {
  std::vector<int64_t> out;
  for (const auto& [seed, cells] : grid) out.push_back(seed);
  return out;
}

Interval percentile(std::vector<double> draws, double point, double confidence, int64_t n) {
  std::vector<double> finite;
  for (double d : draws)
    if (std::isfinite(d)) finite.push_back(d);
  // A resample without an estimate (no boundary reached) is a miss: with
  // more than 5% of them the interval would not be the bootstrap's.
  if (!std::isfinite(point) || finite.size() < 0.95 * static_cast<double>(draws.size()))
    return no_interval();
  std::sort(finite.begin(), finite.end());
  const double tail = (1 - confidence) / 2;
  auto at = [&finite](double q) {
    const size_t i = static_cast<size_t>(std::floor(q * static_cast<double>(finite.size() - 1)));
    return finite[std::min(i, finite.size() - 1)];
  };
  Interval out{
      point, 0, at(tail), at(1 - tail), n, confidence, IntervalMethod::PercentileBootstrap};
  out.half_width = (out.hi - out.lo) / 2;
  return out;
}

std::vector<int64_t> resample(const std::vector<int64_t>& seeds, Generator& gen) {
  std::vector<int64_t> out;
  for (size_t i = 0; i < seeds.size(); ++i)
    out.push_back(seeds[gen.below(static_cast<uint64_t>(seeds.size()))]);
  return out;
}

}  // namespace

BestPower best_power(const std::vector<int>& powers, const std::vector<double>& mean_auc) {
  if (powers.empty() || powers.size() != mean_auc.size())
    fail("best_power: ", powers.size(), " powers and ", mean_auc.size(), " losses");
  const size_t i =
      static_cast<size_t>(std::min_element(mean_auc.begin(), mean_auc.end()) - mean_auc.begin());
  if (i == 0 || i + 1 == powers.size()) return {static_cast<double>(powers[i]), true};
  // The parabola through the lowest point and its neighbours (powers one
  // apart): its vertex, within the neighbours.
  const double below = mean_auc[i - 1], at = mean_auc[i], above = mean_auc[i + 1];
  const double curve = below - 2 * at + above;
  const double shift = curve > 0 ? 0.5 * (below - above) / curve : 0.0;
  return {static_cast<double>(powers[i]) + std::clamp(shift, -1.0, 1.0), false};
}

double fitted_alpha(const std::vector<double>& d_ks, const std::vector<double>& best_powers) {
  // log m* = power log 4: the slope of power against log d_k, times log 4.
  double sx = 0, sy = 0, sxx = 0, sxy = 0, n = 0;
  for (size_t i = 0; i < d_ks.size(); ++i) {
    const double x = std::log(d_ks[i]), y = best_powers[i] * std::log(4.0);
    sx += x, sy += y, sxx += x * x, sxy += x * y, ++n;
  }
  const double den = n * sxx - sx * sx;
  return n >= 2 && den > 0 ? (n * sxy - sx * sy) / den : kNaN;
}

AlphaFit fit_alpha(const std::vector<QkRateRow>& rows, const std::string& task, double confidence,
                   uint64_t seed) {
  AlphaFit fit;
  const std::map<int64_t, SeedGrid> by_width = grids(rows, task);
  if (by_width.size() < 2) return fit;
  int64_t n = 0;
  for (const auto& [d_model, grid] : by_width) {
    const BestPower b = best_of(grid, seeds_of(grid));
    fit.d_ks.push_back(static_cast<double>(d_model / 4));
    fit.best_powers.push_back(b.power), fit.at_edge.push_back(b.at_edge);
    n = n == 0 ? static_cast<int64_t>(grid.size()) : std::min<int64_t>(n, grid.size());
  }
  if (n < 2) {
    fit.alpha = {fitted_alpha(fit.d_ks, fit.best_powers), kNaN, kNaN, kNaN, n};
    return fit;
  }
  Generator gen(seed ^ 0x51A7E5ULL);
  std::vector<double> draws;
  for (int r = 0; r < kResamples; ++r) {
    std::vector<double> powers;
    for (const auto& [d_model, grid] : by_width)
      powers.push_back(best_of(grid, resample(seeds_of(grid), gen)).power);
    draws.push_back(fitted_alpha(fit.d_ks, powers));
  }
  fit.alpha = percentile(draws, fitted_alpha(fit.d_ks, fit.best_powers), confidence, n);
  return fit;
}

namespace {

// The boundary from the unscaled recall runs at one width, seeds `picked`.
double boundary_of(const std::vector<const QkRateRow*>& runs, const std::vector<int64_t>& picked) {
  // The best cell: the highest share solved, then the lowest mean AUC; its
  // median logit step is where the upper side starts.
  std::map<std::pair<double, int>, std::vector<const QkRateRow*>> by_cell;
  std::vector<const QkRateRow*> chosen;
  for (int64_t seed : picked)
    for (const QkRateRow* r : runs)
      if (r->seed == seed && std::isfinite(r->logit_step))
        by_cell[{r->sigma0, r->power}].push_back(r), chosen.push_back(r);
  double best_share = -1, best_auc = 0, start = kNaN;
  for (const auto& [cell, members] : by_cell) {
    double solved = 0, auc = 0;
    std::vector<double> steps;
    for (const QkRateRow* r : members)
      solved += r->solved, auc += auc_of(*r), steps.push_back(r->logit_step);
    const double share = solved / static_cast<double>(members.size());
    auc /= static_cast<double>(members.size());
    std::sort(steps.begin(), steps.end());
    if (share > best_share || (share == best_share && auc < best_auc))
      best_share = share, best_auc = auc, start = steps[steps.size() / 2];
  }
  std::vector<std::pair<double, bool>> upper;  // (logit step, solved)
  for (const QkRateRow* r : chosen)
    if (r->logit_step >= start) upper.push_back({r->logit_step, r->solved});
  std::sort(upper.begin(), upper.end());
  // k runs below the threshold: errors are the unsolved below and the
  // solved above; the lowest count wins, the middle one of a tie.
  std::vector<int64_t> errors(upper.size() + 1, 0);
  for (size_t k = 0; k <= upper.size(); ++k)
    for (size_t j = 0; j < upper.size(); ++j)
      errors[k] += j < k ? !upper[j].second : upper[j].second;
  const int64_t least = *std::min_element(errors.begin(), errors.end());
  std::vector<size_t> ties;
  for (size_t k = 0; k < errors.size(); ++k)
    if (errors[k] == least) ties.push_back(k);
  const size_t k = ties[ties.size() / 2];
  if (k == upper.size()) return kNaN;  // nothing above it failed: no boundary in the grid
  if (k == 0) return upper.front().first;
  return std::sqrt(upper[k - 1].first * upper[k].first);
}

std::map<int64_t, std::vector<const QkRateRow*>> recall_runs(const std::vector<QkRateRow>& rows) {
  std::map<int64_t, std::vector<const QkRateRow*>> out;
  for (const QkRateRow& r : rows)
    if (r.task == "recall" && r.arm == "none") out[r.d_model].push_back(&r);
  return out;
}

std::vector<int64_t> seeds_in(const std::vector<const QkRateRow*>& runs) {
  std::set<int64_t> s;
  for (const QkRateRow* r : runs) s.insert(r->seed);
  return {s.begin(), s.end()};
}

double ratio_of(const std::vector<double>& boundaries) {
  if (boundaries.size() < 2) return kNaN;
  for (double b : boundaries)
    if (!std::isfinite(b) || !(b > 0)) return kNaN;
  return *std::max_element(boundaries.begin(), boundaries.end()) /
         *std::min_element(boundaries.begin(), boundaries.end());
}

}  // namespace

double failure_boundary(const std::vector<QkRateRow>& rows, int64_t d_model) {
  const auto runs = recall_runs(rows);
  const auto it = runs.find(d_model);
  return it == runs.end() ? kNaN : boundary_of(it->second, seeds_in(it->second));
}

Interval boundary_ratio(const std::vector<QkRateRow>& rows, double confidence, uint64_t seed) {
  const auto runs = recall_runs(rows);
  std::vector<double> point;
  int64_t n = 0;
  for (const auto& [d_model, members] : runs) {
    point.push_back(boundary_of(members, seeds_in(members)));
    const int64_t seeds = static_cast<int64_t>(seeds_in(members).size());
    n = n == 0 ? seeds : std::min(n, seeds);
  }
  if (n < 2) return {ratio_of(point), kNaN, kNaN, kNaN, n};
  Generator gen(seed ^ 0xB0DA7ULL);
  std::vector<double> draws;
  for (int r = 0; r < kResamples / 2; ++r) {
    std::vector<double> b;
    for (const auto& [d_model, members] : runs)
      b.push_back(boundary_of(members, resample(seeds_in(members), gen)));
    draws.push_back(ratio_of(b));
  }
  return percentile(draws, ratio_of(point), confidence, n);
}

}  // namespace gradflow::study
