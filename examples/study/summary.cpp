#include "examples/study/summary.h"

#include <cmath>
#include <limits>
#include <map>

namespace gradflow::study {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Paired by seed: the differences a_i - b_i over the seeds both have finite.
Interval paired(const std::vector<const FinalRow*>& a, const std::vector<const FinalRow*>& b,
                double FinalRow::*field) {
  std::map<int64_t, double> by_seed;
  for (const FinalRow* r : b)
    if (std::isfinite(r->*field)) by_seed[r->run.seed] = r->*field;
  std::vector<double> x, y;
  for (const FinalRow* r : a) {
    auto it = by_seed.find(r->run.seed);
    if (it == by_seed.end() || !std::isfinite(r->*field)) continue;
    x.push_back(r->*field);
    y.push_back(it->second);
  }
  if (x.empty()) return Interval{kNaN, kNaN, kNaN, kNaN, 0};
  return paired_difference(x, y);
}

template <class Row>
Band band_of(const std::vector<const Row*>& rows, double Row::*field) {
  std::map<int64_t, std::vector<double>> at;
  for (const Row* r : rows) at[r->step].push_back(r->*field);
  Band band;
  for (const auto& [step, values] : at) {
    Interval i = interval_of_finite(values);
    if (i.n == 0) continue;
    band.step.push_back(static_cast<double>(step));
    band.mean.push_back(i.mean);
    // One seed has no interval: the band is the line itself.
    band.lo.push_back(std::isfinite(i.lo) ? i.lo : i.mean);
    band.hi.push_back(std::isfinite(i.hi) ? i.hi : i.mean);
  }
  return band;
}

}  // namespace

const std::vector<MetricSpec>& compared_metrics() {
  static const std::vector<MetricSpec> metrics = {
      {"accuracy", &FinalRow::final_accuracy, true, 0.01, 100, "points", 1},
      {"loss_auc", &FinalRow::loss_auc, false, 0.05, 1, "nats", 2},
      {"steps_to_90", &FinalRow::steps_to_90, false, 20, 1, "steps", 0},
  };
  return metrics;
}

Interval interval_of_finite(const std::vector<double>& values) {
  std::vector<double> finite;
  for (double v : values)
    if (std::isfinite(v)) finite.push_back(v);
  if (finite.empty()) return Interval{kNaN, kNaN, kNaN, kNaN, 0};
  return t_interval(finite);
}

std::vector<SettingSummary> summarise_training(const std::vector<FinalRow>& finals) {
  // Runs grouped by setting, settings in the order they first appear.
  std::vector<std::tuple<std::string, int64_t, std::string>> order;
  std::map<std::tuple<std::string, int64_t, std::string>, std::vector<const FinalRow*>> runs;
  for (const FinalRow& f : finals) {
    auto key = std::make_tuple(f.run.task, f.run.d_k, f.run.mode);
    if (runs.find(key) == runs.end()) order.push_back(key);
    runs[key].push_back(&f);
  }
  std::vector<SettingSummary> out;
  for (const auto& key : order) {
    const auto& [task, d_k, mode] = key;
    const std::vector<const FinalRow*>& rows = runs[key];
    SettingSummary s;
    s.task = task, s.d_k = d_k, s.mode = mode;
    s.runs = static_cast<int64_t>(rows.size());
    std::vector<double> logits, seq, ratios;
    for (const FinalRow* r : rows) {
      s.reached_90 += r->reached_90;
      s.reached_99 += r->reached_99;
      s.diverged += r->diverged;
      logits.push_back(r->max_logit);
      ratios.push_back(std::log10(r->grad_ratio_qv));
      if (r->seq_accuracy >= 0) seq.push_back(r->seq_accuracy);
    }
    s.max_logit = interval_of_finite(logits);
    s.seq_accuracy = interval_of_finite(seq);
    s.log_grad_ratio = interval_of_finite(ratios);
    const auto reference = runs.find(std::make_tuple(task, d_k, std::string(kDefaultMode)));
    for (const MetricSpec& m : compared_metrics()) {
      std::vector<double> values;
      for (const FinalRow* r : rows) values.push_back(r->*m.field);
      s.metric.push_back(interval_of_finite(values));
      if (mode == kDefaultMode || reference == runs.end()) {
        s.vs_default.push_back(Interval{kNaN, kNaN, kNaN, kNaN, 0});
        s.verdict.push_back(Comparison::NoDetectableDifference);
      } else {
        s.vs_default.push_back(paired(rows, reference->second, m.field));
        s.verdict.push_back(s.vs_default.back().n == 0
                                ? Comparison::NoDetectableDifference
                                : compare(s.vs_default.back(), m.margin, m.higher_is_better));
      }
    }
    out.push_back(s);
  }
  return out;
}

const SettingSummary* find_setting(const std::vector<SettingSummary>& summaries,
                                   const std::string& task, int64_t d_k, const std::string& mode) {
  for (const SettingSummary& s : summaries)
    if (s.task == task && s.d_k == d_k && s.mode == mode) return &s;
  return nullptr;
}

Band curve_band(const std::vector<CurveRow>& curves, const std::string& task, int64_t d_k,
                const std::string& mode, double CurveRow::*field) {
  std::vector<const CurveRow*> rows;
  for (const CurveRow& r : curves)
    if (r.run.task == task && r.run.d_k == d_k && r.run.mode == mode) rows.push_back(&r);
  return band_of(rows, field);
}

Band layer_band(const std::vector<LayerRow>& layers, const std::string& task, int64_t d_k,
                const std::string& mode, const std::string& layer, double LayerRow::*field) {
  std::vector<const LayerRow*> rows;
  for (const LayerRow& r : layers)
    if (r.run.task == task && r.run.d_k == d_k && r.run.mode == mode && r.layer == layer)
      rows.push_back(&r);
  return band_of(rows, field);
}

}  // namespace gradflow::study
