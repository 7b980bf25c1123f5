// A run summarised from its evaluations (study.h, FinalRow), and runs
// summarised over seeds (parts.h, "train"): each figure as a mean with
// its 95% interval, and each mode against 1/sqrt(d_k) as a paired
// difference (same seed, same initial weights, same batches) with the
// verdict of stats.h's compare at a margin stated in advance. The train
// part's tables and C7 read these, and so do C3 to C5's training criteria.
// Figures drawn over seeds from the same rows are seed_series.cpp's.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "examples/study/parts.h"
#include "examples/study/stats/inference.h"

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

// Runs of a and b on the same seed, matched (a's order).
std::vector<std::pair<const FinalRow*, const FinalRow*>> pairs_of(
    const std::vector<const FinalRow*>& a, const std::vector<const FinalRow*>& b) {
  std::map<int64_t, const FinalRow*> by_seed;
  for (const FinalRow* r : b) by_seed[r->run.seed] = r;
  std::vector<std::pair<const FinalRow*, const FinalRow*>> out;
  for (const FinalRow* r : a)
    if (auto it = by_seed.find(r->run.seed); it != by_seed.end()) out.emplace_back(r, it->second);
  return out;
}

CensoredTime censored_time(const FinalRow& r, const MetricSpec& m) {
  return {r.*m.field, !(r.*m.reached)};
}

// A setting's figure for metric m over its runs (SettingSummary::metric).
Interval summarise_metric(const std::vector<const FinalRow*>& rows, const MetricSpec& m) {
  if (m.kind == MetricKind::Mean) {
    std::vector<double> values;
    for (const FinalRow* r : rows) values.push_back(r->*m.field);
    return interval_of_finite(values);
  }
  if (rows.empty()) return no_interval();
  if (m.kind == MetricKind::Solved) {
    int64_t hits = 0;
    for (const FinalRow* r : rows) hits += r->*m.reached;
    const auto n = static_cast<int64_t>(rows.size());
    const BinomialInterval b = exact_binomial_interval(hits, n);
    Interval i{b.estimate, (b.hi - b.lo) / 2, b.lo, b.hi, n};
    return i;
  }
  std::vector<CensoredTime> times;
  for (const FinalRow* r : rows) times.push_back(censored_time(*r, m));
  const KaplanMeierMedian km = kaplan_meier_median(times);
  return Interval{km.median, (km.hi - km.lo) / 2, km.lo, km.hi, km.n};
}

// Mode against the reference for metric m: the difference shown and the
// comparison's p-value (SettingSummary::vs_default, p_value).
std::pair<Interval, double> compare_metric(const std::vector<const FinalRow*>& rows,
                                           const std::vector<const FinalRow*>& reference,
                                           const MetricSpec& m) {
  if (m.kind == MetricKind::Mean) {
    const Interval d = paired(rows, reference, m.field);
    return {d, d.n == 0 ? 1.0 : margin_p_value(d, m.margin)};
  }
  const auto pairs = pairs_of(rows, reference);
  if (pairs.empty()) return {no_interval(), 1.0};
  if (m.kind == MetricKind::Solved) {
    int64_t a = 0, b = 0;
    for (const auto& [x, y] : pairs) a += x->*m.reached, b += y->*m.reached;
    const auto n = static_cast<int64_t>(pairs.size());
    return {proportion_difference(a, n, b, n), fisher_exact_p(a, n, b, n)};
  }
  std::vector<CensoredTime> a, b;
  for (const auto& [x, y] : pairs)
    a.push_back(censored_time(*x, m)), b.push_back(censored_time(*y, m));
  const CensoredPairedTest t = paired_censored_test(a, b);
  Interval d{t.median_difference, kNaN, kNaN, kNaN, t.n};
  return {d, std::abs(t.median_difference) > m.margin ? t.p_value : 1.0};
}

constexpr double kSpikeFloor = 0.1;  // nats
// A spike must stand this many batch-noise sds (stats.h, loss_spikes) above
// the running median: near convergence twice the median is often noise.
constexpr double kSpikeNoise = 6;

}  // namespace

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
  // A run that stopped solved keeps its last held-out loss for the steps it did not run.
  const double rest = static_cast<double>(steps - c.back().step);
  f.loss_auc_budget =
      f.diverged || c.size() < 2 || rest < 0
          ? NAN
          : (area + rest * c.back().eval_loss) / static_cast<double>(steps - c.front().step);
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
  const std::vector<bool> spikes = loss_spikes(train_losses, 20, 2.0, 5, kSpikeNoise);
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

const std::vector<MetricSpec>& compared_metrics(const std::string& task) {
  static const std::vector<MetricSpec> reverse = {
      {"accuracy", &FinalRow::final_accuracy, true, 0.01, 100, "points", 1},
      {"loss_auc", &FinalRow::loss_auc, false, 0.05, 1, "nats", 2},
      {"steps_to_90", &FinalRow::steps_to_90, false, 20, 1, "steps", 0, MetricKind::Censored,
       &FinalRow::reached_90},
  };
  static const std::vector<MetricSpec> recall = {
      {"solved", &FinalRow::steps_to_99, true, 0, 100, "points", 0, MetricKind::Solved,
       &FinalRow::reached_99},
      {"steps_to_99", &FinalRow::steps_to_99, false, 20, 1, "steps", 0, MetricKind::Censored,
       &FinalRow::reached_99},
  };
  return task == "recall" ? recall : reverse;
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
      s.budget = std::max(s.budget, r->steps);
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
    s.log_grad_ratio_vs_default = no_interval();
    const auto reference = runs.find(std::make_tuple(task, d_k, std::string(kDefaultMode)));
    const bool compared = !is_reference(mode) && reference != runs.end();
    if (compared) {
      std::vector<double> a, b;
      for (const auto& [x, y] : pairs_of(rows, reference->second)) {
        const double la = std::log10(x->grad_ratio_qv), lb = std::log10(y->grad_ratio_qv);
        if (std::isfinite(la) && std::isfinite(lb)) a.push_back(la), b.push_back(lb);
      }
      if (!a.empty()) s.log_grad_ratio_vs_default = paired_difference(a, b);
    }
    for (const MetricSpec& m : compared_metrics(task)) {
      s.metric.push_back(summarise_metric(rows, m));
      auto [diff, p] = compared ? compare_metric(rows, reference->second, m)
                                : std::make_pair(no_interval(), 1.0);
      s.vs_default.push_back(diff);
      s.p_value.push_back(p);
      s.verdict.push_back(Comparison::NoDetectableDifference);
    }
    out.push_back(s);
  }
  // Holm over the modes compared at each (task, d_k, metric): the family a
  // table row's verdicts belong to. Direction from the difference's sign.
  std::map<std::tuple<std::string, int64_t, size_t>,
           std::vector<std::pair<SettingSummary*, size_t>>>
      families;
  for (SettingSummary& s : out)
    for (size_t m = 0; m < s.p_value.size(); ++m)
      if (s.vs_default[m].n > 0) families[{s.task, s.d_k, m}].emplace_back(&s, m);
  for (auto& [key, members] : families) {
    std::vector<double> p;
    for (const auto& [s, m] : members) p.push_back(s->p_value[m]);
    const std::vector<double> adjusted = holm(p);
    for (size_t i = 0; i < members.size(); ++i) {
      auto [s, m] = members[i];
      if (!(adjusted[i] < kFamilyLevel)) continue;
      const MetricSpec& spec = compared_metrics(s->task)[m];
      const bool higher = s->vs_default[m].mean > 0;
      s->verdict[m] = higher == spec.higher_is_better ? Comparison::Better : Comparison::Worse;
    }
  }
  return out;
}

const SettingSummary* find_setting(const std::vector<SettingSummary>& summaries,
                                   const std::string& task, int64_t d_k, const std::string& mode) {
  for (const SettingSummary& s : summaries)
    if (s.task == task && s.d_k == d_k && s.mode == mode) return &s;
  return nullptr;
}

std::vector<const SettingSummary*> settings_for(const std::vector<SettingSummary>& summaries,
                                                const std::string& mode) {
  std::vector<const SettingSummary*> out;
  for (const SettingSummary& s : summaries)
    if (s.mode == mode) out.push_back(&s);
  return out;
}

std::string comparison_text(const SettingSummary& s, size_t m) {
  const MetricSpec& spec = compared_metrics(s.task)[m];
  const Interval& d = s.vs_default[m];
  if (d.n == 0) return "-";
  const double x = d.mean * spec.scale;
  std::string text =
      (x > 0 ? "+" : "") +
      format_interval(Interval{x, d.half_width * spec.scale, 0, 0, d.n}, spec.digits);
  if (spec.kind == MetricKind::Censored)
    text = (x > 0 ? "+" : "") + significant(x, 3) + " (median)";
  return text + " " + spec.unit + ", p " + significant(s.p_value[m], 2);
}

TrainingCount count_training(const std::vector<SettingSummary>& training, const std::string& mode) {
  TrainingCount c;
  for (const SettingSummary& s : training) {
    if (s.mode != mode) continue;
    const std::vector<MetricSpec>& metrics = compared_metrics(s.task);
    ++c.settings;
    std::string worse, better;
    for (size_t m = 0; m < metrics.size(); ++m) {
      const std::string text = metrics[m].name + " " + comparison_text(s, m);
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

}  // namespace gradflow::study
