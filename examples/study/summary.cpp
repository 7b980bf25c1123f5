// A run summarised from its evaluations (study.h, FinalRow), and runs
// summarised over seeds (parts.h, "train"): each figure as a mean with
// its 95% interval, and each mode against 1/sqrt(d_k) as a paired
// difference (same seed, same initial weights, same batches) with the
// verdict of stats.h's compare at a margin stated in advance. The train
// part's tables and C7 read these, and so do C3 to C5's training criteria.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "examples/study/parts.h"

namespace gradflow::study {

namespace {

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
  if (x.empty()) return no_interval();
  return paired_difference(x, y);
}

constexpr double kSpikeFloor = 0.1;  // nats

// A curve over seeds: at each step the mean and 95% t-interval of the seeds
// whose run of (task, d_k, mode), and layer if named, has a finite value
// there; an accuracy's band is cut at 0 and 1, which no accuracy passes.
template <class Row>
void band_of(plot::Series& s, const std::vector<Row>& rows, const std::string& task, int64_t d_k,
             const std::string& mode, const std::string& layer, double Row::*field, bool accuracy) {
  std::map<int64_t, std::vector<double>> at;
  for (const Row& r : rows) {
    if (r.run.task != task || r.run.d_k != d_k || r.run.mode != mode) continue;
    if constexpr (requires { r.layer; })
      if (r.layer != layer) continue;
    at[r.step].push_back(r.*field);
  }
  for (const auto& [step, values] : at) {
    Interval i = interval_of_finite(values);
    if (i.n == 0) continue;
    if (accuracy) i.lo = std::clamp(i.lo, 0.0, 1.0), i.hi = std::clamp(i.hi, 0.0, 1.0);
    add_point(s, static_cast<double>(step), i);
  }
}

}  // namespace

void curve_band(plot::Series& s, const std::vector<CurveRow>& curves, const std::string& task,
                int64_t d_k, const std::string& mode, double CurveRow::*field, bool accuracy) {
  band_of(s, curves, task, d_k, mode, "", field, accuracy);
}

void layer_band(plot::Series& s, const std::vector<LayerRow>& layers, const std::string& task,
                int64_t d_k, const std::string& mode, const std::string& layer,
                double LayerRow::*field) {
  band_of(s, layers, task, d_k, mode, layer, field, false);
}

Interval paired_between(const std::vector<FinalRow>& finals, const std::string& task, int64_t d_k,
                        const std::string& a, const std::string& b, double FinalRow::*field) {
  std::vector<const FinalRow*> in_a, in_b;
  for (const FinalRow& f : finals) {
    if (f.run.task != task || f.run.d_k != d_k) continue;
    if (f.run.mode == a) in_a.push_back(&f);
    if (f.run.mode == b) in_b.push_back(&f);
  }
  return paired(in_a, in_b, field);
}

// The run's summary from its evaluations (see FinalRow).
void summarise_run(RunOutput& out, int64_t steps, const std::vector<double>& train_losses) {
  FinalRow& f = out.final;
  const std::vector<CurveRow>& c = out.curves;
  const size_t last = std::max<size_t>(1, (c.size() + 5) / 10);  // the last 10%, at least one
  double acc = 0, loss = 0;
  for (size_t i = c.size() - std::min(last, c.size()); i < c.size(); ++i)
    acc += c[i].eval_accuracy, loss += c[i].eval_loss;
  f.final_accuracy = acc / static_cast<double>(std::min(last, c.size()));
  f.final_loss = f.diverged ? NAN : loss / static_cast<double>(std::min(last, c.size()));
  f.steps_to_90 = f.steps_to_99 = static_cast<double>(steps);
  for (const CurveRow& r : c) {
    if (!f.reached_90 && r.eval_accuracy >= 0.90)
      f.reached_90 = true, f.steps_to_90 = static_cast<double>(r.step);
    if (!f.reached_99 && r.eval_accuracy >= 0.99)
      f.reached_99 = true, f.steps_to_99 = static_cast<double>(r.step);
  }
  double area = 0;  // trapezoids over the evaluation steps
  for (size_t i = 1; i < c.size(); ++i)
    area += 0.5 * (c[i].eval_loss + c[i - 1].eval_loss) *
            static_cast<double>(c[i].step - c[i - 1].step);
  f.loss_auc =
      f.diverged || c.size() < 2 ? NAN : area / static_cast<double>(c.back().step - c.front().step);
  // The smallest ratio among the layers at each of the last evaluations.
  std::map<int64_t, double> smallest;
  f.min_entropy = 1;
  for (const LayerRow& r : out.layers) {
    auto [it, fresh] = smallest.try_emplace(r.step, r.grad_ratio_qv);
    if (!fresh) it->second = std::min(it->second, r.grad_ratio_qv);
    f.max_logit = std::max(f.max_logit, r.max_logit);
    f.min_entropy = std::min(f.min_entropy, r.entropy_norm);
    if (f.collapse_step < 0 && r.entropy_norm < kCollapsedEntropy) f.collapse_step = r.step;
  }
  double ratio = 0;
  size_t counted = 0;
  for (auto it = smallest.rbegin(); it != smallest.rend() && counted < last; ++it, ++counted)
    ratio += it->second;
  f.grad_ratio_qv = counted ? ratio / static_cast<double>(counted) : NAN;
  const std::vector<bool> spikes = loss_spikes(train_losses);
  size_t row = 0;
  for (size_t step = 0; step < spikes.size(); ++step) {
    while (row < c.size() && static_cast<size_t>(c[row].step) < step) ++row;
    // Near zero loss, doubling is noise (0.002 -> 0.005): a spike must also
    // pass kSpikeFloor.
    if (!spikes[step] || train_losses[step] < kSpikeFloor) continue;
    ++f.spikes;
    if (f.first_spike_step < 0) f.first_spike_step = static_cast<int64_t>(step);
    if (row < c.size()) out.curves[row].spike = true;
  }
}

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
  if (finite.empty()) return no_interval();
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
        s.vs_default.push_back(no_interval());
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

TrainingCount count_training(const std::vector<SettingSummary>& training, const std::string& mode) {
  TrainingCount c;
  const std::vector<MetricSpec>& metrics = compared_metrics();
  for (const SettingSummary& s : training) {
    if (s.mode != mode) continue;
    ++c.settings;
    std::string worse, better;
    for (size_t m = 0; m < metrics.size(); ++m) {
      const Interval& d = s.vs_default[m];
      const std::string text = metrics[m].name + " " + (d.mean * metrics[m].scale > 0 ? "+" : "") +
                               format_interval(Interval{d.mean * metrics[m].scale,
                                                        d.half_width * metrics[m].scale, 0, 0, d.n},
                                               metrics[m].digits) +
                               " " + metrics[m].unit;
      if (s.verdict[m] == Comparison::Worse) worse += (worse.empty() ? "" : ", ") + text;
      if (s.verdict[m] == Comparison::Better) better += (better.empty() ? "" : ", ") + text;
    }
    const std::string where = s.task + " d_k " + std::to_string(s.d_k) + ": ";
    if (!worse.empty())
      ++c.worse, c.worse_list += (c.worse_list.empty() ? "" : "; ") + where + worse;
    if (!better.empty())
      ++c.better, c.better_list += (c.better_list.empty() ? "" : "; ") + where + better;
  }
  return c;
}

std::string describe_training(const TrainingCount& c, int64_t seeds) {
  if (c.settings == 0) return "not trained in this run";
  std::string out = "detectably worse than 1/sqrt(d_k) in " + std::to_string(c.worse) + " of " +
                    std::to_string(c.settings) + " settings";
  if (!c.worse_list.empty()) out += " (" + c.worse_list + ")";
  out += ", better in " + std::to_string(c.better);
  if (!c.better_list.empty()) out += " (" + c.better_list + ")";
  out += ", no detectable difference in the others with " + std::to_string(seeds) + " seeds";
  return out;
}

int64_t seeds_of(const std::vector<SettingSummary>& training) {
  int64_t n = 0;
  for (const SettingSummary& s : training) n = std::max(n, s.runs);
  return n;
}

std::string interval_text(const Interval& i, int digits, double scale) {
  if (i.n == 0) return "-";
  return format_interval(
      Interval{i.mean * scale, i.half_width * scale, i.lo * scale, i.hi * scale, i.n}, digits);
}

const char* lower_higher(Comparison c) {
  return c == Comparison::Better ? "**lower**" : c == Comparison::Worse ? "**higher**" : "no det.";
}

// Mean over seeds with its 95% t-interval as error bars, one point per x.
plot::Series mean_series(const std::string& label, const std::map<double, std::vector<double>>& at,
                         bool emphasis) {
  plot::Series s{.label = label, .markers = true, .emphasis = emphasis};
  for (const auto& [x, values] : at) {
    Interval i = interval_of_finite(values);
    if (i.n == 0) continue;
    s.x.push_back(x);
    s.y.push_back(i.mean);
    s.lo.push_back(std::isfinite(i.lo) ? i.lo : i.mean);
    s.hi.push_back(std::isfinite(i.hi) ? i.hi : i.mean);
  }
  return s;
}

}  // namespace gradflow::study
