#include "examples/study/full_analysis.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

namespace gradflow::study {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace

double capped_loss(const FinalRow& r) {
  if (r.diverged || !std::isfinite(r.final_loss)) return r.initial_loss;
  return std::min(r.final_loss, r.initial_loss);
}

std::vector<Sensitivity> lr_sensitivity(const std::vector<FinalRow>& sweep) {
  // (mode, d_k, seed) -> capped losses over the grid; (mode, d_k, lr) -> over seeds.
  std::map<std::tuple<std::string, int64_t, int64_t>, std::vector<double>> by_seed;
  std::map<std::tuple<std::string, int64_t>, std::map<double, std::vector<double>>> by_lr;
  std::vector<std::pair<std::string, int64_t>> order;
  for (const FinalRow& r : sweep) {
    by_seed[{r.run.mode, r.run.d_k, r.run.seed}].push_back(capped_loss(r));
    by_lr[{r.run.mode, r.run.d_k}][r.lr].push_back(capped_loss(r));
    std::pair<std::string, int64_t> key{r.run.mode, r.run.d_k};
    if (std::find(order.begin(), order.end(), key) == order.end()) order.push_back(key);
  }
  // Per seed: mean over lrs of (capped - the best capped).
  std::map<std::pair<std::string, int64_t>, std::map<int64_t, double>> sens;
  for (const auto& [key, losses] : by_seed) {
    const double best = *std::min_element(losses.begin(), losses.end());
    double total = 0;
    for (double l : losses) total += l - best;
    sens[{std::get<0>(key), std::get<1>(key)}][std::get<2>(key)] =
        total / static_cast<double>(losses.size());
  }
  std::vector<Sensitivity> out;
  for (const auto& [mode, d_k] : order) {
    Sensitivity s;
    s.mode = mode, s.d_k = d_k;
    std::vector<double> values;
    for (const auto& [seed, v] : sens[{mode, d_k}]) values.push_back(v);
    s.sensitivity = interval_of_finite(values);
    s.best_loss = std::numeric_limits<double>::infinity();
    for (const auto& [lr, losses] : by_lr[{mode, d_k}]) {
      double mean = 0;
      for (double l : losses) mean += l / static_cast<double>(losses.size());
      if (mean < s.best_loss) s.best_loss = mean, s.best_lr = lr;
    }
    s.vs_default = Interval{kNaN, kNaN, kNaN, kNaN, 0};
    auto ref = sens.find({kDefaultMode, d_k});
    if (mode != kDefaultMode && ref != sens.end()) {
      std::vector<double> a, b;
      for (const auto& [seed, v] : sens[{mode, d_k}])
        if (ref->second.count(seed)) a.push_back(v), b.push_back(ref->second.at(seed));
      if (!a.empty()) {
        s.vs_default = paired_difference(a, b);
        s.verdict = compare(s.vs_default, kSensitivityMargin, false);
      }
    }
    out.push_back(s);
  }
  return out;
}

std::vector<BestLr> best_lr_by_width(const std::vector<WidthRow>& rows) {
  struct Cell {
    std::vector<double> loss, qk_init, qk;
    std::map<int64_t, double> by_seed;
  };
  std::map<std::pair<std::string, int64_t>, std::map<double, Cell>> cells;
  std::vector<std::pair<std::string, int64_t>> order;
  for (const WidthRow& w : rows) {
    std::pair<std::string, int64_t> key{w.parametrization, w.d_model};
    if (std::find(order.begin(), order.end(), key) == order.end()) order.push_back(key);
    Cell& c = cells[key][w.run.lr];
    c.loss.push_back(capped_loss(w.run));
    c.qk_init.push_back(w.run.qk_std_init);
    c.qk.push_back(w.run.qk_std);
    c.by_seed[w.run.run.seed] = capped_loss(w.run);
  }
  auto mean = [](const std::vector<double>& v) {
    double s = 0, n = 0;
    for (double x : v)
      if (std::isfinite(x)) s += x, ++n;
    return n ? s / n : kNaN;
  };
  std::vector<BestLr> out;
  for (const auto& key : order) {
    BestLr b;
    b.parametrization = key.first, b.d_model = key.second;
    b.best_loss = std::numeric_limits<double>::infinity();
    std::map<int64_t, std::pair<double, double>> seed_best;  // seed -> (loss, lr)
    for (const auto& [lr, c] : cells[key]) {
      if (mean(c.loss) < b.best_loss) {
        b.best_loss = mean(c.loss), b.best_lr = lr;
        b.qk_std_init = mean(c.qk_init), b.qk_std = mean(c.qk);
      }
      for (const auto& [seed, loss] : c.by_seed) {
        auto [it, fresh] = seed_best.try_emplace(seed, loss, lr);
        if (!fresh && loss < it->second.first) it->second = {loss, lr};
      }
    }
    for (const auto& [seed, best] : seed_best) b.per_seed.push_back(best.second);
    out.push_back(b);
  }
  return out;
}

int best_lr_spread(const std::vector<BestLr>& best, const std::string& p,
                   const std::vector<double>& grid) {
  int lo = static_cast<int>(grid.size()), hi = -1;
  for (const BestLr& b : best) {
    if (b.parametrization != p) continue;
    const int at = static_cast<int>(std::find(grid.begin(), grid.end(), b.best_lr) - grid.begin());
    lo = std::min(lo, at), hi = std::max(hi, at);
  }
  return hi < 0 ? 0 : hi - lo;
}

double log_log_slope(const std::vector<double>& x, const std::vector<double>& y) {
  double sx = 0, sy = 0, sxx = 0, sxy = 0, n = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!(x[i] > 0) || !(y[i] > 0)) continue;
    const double a = std::log(x[i]), b = std::log(y[i]);
    sx += a, sy += b, sxx += a * a, sxy += a * b, ++n;
  }
  const double den = n * sxx - sx * sx;
  return n >= 2 && den > 0 ? (n * sxy - sx * sy) / den : kNaN;
}

std::vector<WarmupEffect> warmup_effects(const DepthTrainResult& depth) {
  std::map<std::tuple<std::string, std::string, bool>, std::map<int64_t, double>> loss;
  std::vector<std::pair<std::string, std::string>> order;
  for (const DepthTrainRun& r : depth.runs) {
    loss[{r.norm_placement, r.run.run.mode, r.warmup}][r.run.run.seed] = capped_loss(r.run);
    std::pair<std::string, std::string> key{r.norm_placement, r.run.run.mode};
    if (std::find(order.begin(), order.end(), key) == order.end()) order.push_back(key);
  }
  std::vector<WarmupEffect> out;
  for (const auto& [placement, mode] : order) {
    WarmupEffect e{placement, mode, Interval{kNaN, kNaN, kNaN, kNaN, 0}};
    const auto& with = loss[{placement, mode, true}];
    std::vector<double> a, b;
    for (const auto& [seed, l] : loss[{placement, mode, false}])
      if (with.count(seed)) a.push_back(l), b.push_back(with.at(seed));
    if (!a.empty()) {
      e.no_warmup_minus_warmup = paired_difference(a, b);
      e.verdict = compare(e.no_warmup_minus_warmup, kSensitivityMargin, false);
    }
    out.push_back(e);
  }
  return out;
}

double output_to_input_gradient(const DepthTrainResult& depth, const std::string& placement) {
  // Per run (mode, warm-up, seed) at step 0: the last block's norm over the first's.
  std::map<std::tuple<std::string, bool, int64_t>, std::pair<double, double>> ends;
  for (const DepthTrainRow& r : depth.rows) {
    if (r.norm_placement != placement || r.step != 0) continue;
    auto& [first, last] = ends[{r.mode, r.warmup, r.seed}];
    if (r.layer == "enc0") first = r.grad_norm;
    last = r.grad_norm;  // rows run from the input side to the output side
  }
  double sum = 0, n = 0;
  for (const auto& [key, v] : ends)
    if (v.first > 0) sum += v.second / v.first, ++n;
  return n ? sum / n : kNaN;
}

}  // namespace gradflow::study
