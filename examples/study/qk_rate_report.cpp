// The qk-rate part's verdicts (C28 to C30) and its share of the report:
// the best multiplier per width, alpha, recall's failure boundary, a table
// of every cell's measures, qk_rate.csv and qk_rate.svg.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "examples/study/claims.h"
#include "examples/study/qk_rate.h"
#include "examples/study/stats/inference.h"

namespace gradflow::study {

namespace {

Interval value(double v, int64_t n) { return {v, kNaN, kNaN, kNaN, n}; }

std::vector<std::string> tasks_of(const std::vector<QkRateRow>& rows) {
  std::vector<std::string> out;
  for (const QkRateRow& r : rows)
    if (std::find(out.begin(), out.end(), r.task) == out.end()) out.push_back(r.task);
  return out;
}

double geometric_mean(const std::vector<double>& xs) {
  double s = 0, n = 0;
  for (double x : xs)
    if (x > 0 && std::isfinite(x)) s += std::log(x), ++n;
  return n > 0 ? std::exp(s / n) : kNaN;
}

// The checks every claim of the part carries (claims_qk_rate.cpp).
std::vector<Outcome> check_outcomes(const std::vector<QkRateRow>& rows, const std::string& id) {
  double worst = 0;
  int64_t set = 0;
  for (const QkRateRow& r : rows)
    if (r.sigma0 > 0 && std::isfinite(r.run.qk_std_init))
      worst = std::max(worst, std::abs(r.run.qk_std_init / r.sigma0 - 1)), ++set;
  std::vector<Outcome> out = {
      {.criterion = "start",
       .passed = set > 0 && worst < criterion(id, "start").margin,
       .missing = set == 0,
       .estimate = value(worst, set),
       .text = "largest gap " + significant(worst, 2) + " over " + std::to_string(set) + " runs"}};
  int lowest = 0, highest = 0;
  for (const QkRateRow& r : rows)
    if (r.arm == "none") lowest = std::min(lowest, r.power), highest = std::max(highest, r.power);
  std::map<std::pair<std::string, int64_t>, std::pair<std::vector<double>, std::vector<double>>>
      steps;
  for (const QkRateRow& r : rows)
    if (r.arm == "none" && r.sigma0 == 1 && (r.power == lowest || r.power == highest))
      (r.power == highest ? steps[{r.task, r.d_model}].first : steps[{r.task, r.d_model}].second)
          .push_back(r.logit_step);
  for (const auto& [at, pair] : steps) {
    const double ratio = geometric_mean(pair.first) / geometric_mean(pair.second);
    out.push_back({.criterion = "rate",
                   .passed = ratio > criterion(id, "rate").margin,
                   .missing = !std::isfinite(ratio),
                   .setting = at.first + " d_model " + std::to_string(at.second),
                   .estimate = value(ratio, static_cast<int64_t>(pair.first.size())),
                   .text = significant(ratio, 2) + "x"});
  }
  return out;
}

std::string powers_text(const AlphaFit& fit) {
  std::string out;
  for (size_t i = 0; i < fit.d_ks.size(); ++i)
    out += (out.empty() ? "" : ", ") + std::string("d_k ") +
           std::to_string(static_cast<int64_t>(fit.d_ks[i])) + " 4^" +
           significant(fit.best_powers[i], 2) + (fit.at_edge[i] ? " (grid's end)" : "");
  return out;
}

Interval shifted(Interval e, double by) {
  e.mean += by, e.lo += by, e.hi += by;
  return e;
}

}  // namespace

Verdict qk_rate_alpha_claim(const std::vector<QkRateRow>& rows, uint64_t seed) {
  std::vector<Outcome> outcomes = check_outcomes(rows, "C28");
  std::string measured;
  for (const std::string& task : tasks_of(rows)) {
    const AlphaFit fit = fit_alpha(rows, task, 0.90, seed);
    outcomes.push_back({.criterion = "a",
                        .passed = passes(Test::Within, criterion("C28", "a").margin, fit.alpha),
                        .missing = !std::isfinite(fit.alpha.lo),
                        .setting = task,
                        .estimate = fit.alpha,
                        .text = "alpha " + format_estimate(fit.alpha, 2)});
    measured += (measured.empty() ? "" : "; ") + task + ": m* " + powers_text(fit) + ", alpha " +
                format_estimate(fit.alpha, 2) + " (90%)";
  }
  return judge("C28", outcomes, {}, measured);
}

Verdict qk_rate_muP_claim(const std::vector<QkRateRow>& rows, uint64_t seed) {
  std::vector<Outcome> outcomes = check_outcomes(rows, "C29");
  std::string measured;
  for (const std::string& task : tasks_of(rows)) {
    const AlphaFit fit95 = fit_alpha(rows, task, 0.95, seed),
                   fit90 = fit_alpha(rows, task, 0.90, seed);
    const Interval distance = shifted(fit90.alpha, 0.25);
    outcomes.push_back({.criterion = "a",
                        .passed = passes(Test::Below, criterion("C29", "a").margin, fit95.alpha),
                        .missing = !std::isfinite(fit95.alpha.lo),
                        .setting = task,
                        .estimate = fit95.alpha,
                        .text = "alpha " + format_estimate(fit95.alpha, 2)});
    outcomes.push_back({.criterion = "b",
                        .passed = passes(Test::Within, criterion("C29", "b").margin, distance),
                        .missing = !std::isfinite(distance.lo),
                        .setting = task,
                        .estimate = distance,
                        .text = "alpha + 1/4 " + format_estimate(distance, 2)});
    measured += (measured.empty() ? "" : "; ") + task + ": alpha " +
                format_estimate(fit95.alpha, 2) + " (95%)";
  }
  return judge("C29", outcomes, {}, measured);
}

Verdict qk_rate_boundary_claim(const std::vector<QkRateRow>& rows, uint64_t seed) {
  std::vector<Outcome> outcomes = check_outcomes(rows, "C30");
  const Interval ratio = boundary_ratio(rows, 0.90, seed);
  const Interval log_ratio{std::log(ratio.mean),
                           kNaN,
                           std::log(ratio.lo),
                           std::log(ratio.hi),
                           ratio.n,
                           0.90,
                           IntervalMethod::PercentileBootstrap};
  std::string measured = "recall's failure boundary (mean |change of a logit| per update):";
  std::set<int64_t> widths;
  for (const QkRateRow& r : rows)
    if (r.task == "recall") widths.insert(r.d_model);
  for (int64_t w : widths)
    measured += " d_k " + std::to_string(w / 4) + " " + significant(failure_boundary(rows, w), 2);
  measured += "; largest over smallest " + format_estimate(ratio, 2) + " (90%)";
  outcomes.push_back({.criterion = "a",
                      .passed = passes(Test::Within, criterion("C30", "a").margin, log_ratio),
                      .missing = !std::isfinite(log_ratio.lo) || !std::isfinite(log_ratio.hi),
                      .setting = "recall",
                      .estimate = log_ratio,
                      .text = "ratio " + format_estimate(ratio, 2)});
  return judge("C30", outcomes, {}, measured);
}

}  // namespace gradflow::study
