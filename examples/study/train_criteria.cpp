// The train part's criteria computed from their declaration alone
// (criteria.h, Measure): which column of which file, which arms contrasted
// with which weights, over which steps, at which d_k, on which seeds. A test
// recomputes every such criterion from the CSV files the run writes
// (StudyCriteria, tests/examples/study_criteria_test.cpp), so the numbers a
// finding quotes are the files' numbers.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "examples/study/claims.h"
#include "examples/study/parts.h"
#include "tensor/error.h"

namespace gradflow::study {

namespace {

// The columns a Measure may name, as the CSV files write them.
double LayerRow::*layer_column(const std::string& name) {
  static const std::map<std::string, double LayerRow::*> columns = {
      {"max_logit", &LayerRow::max_logit},
      {"entropy_norm", &LayerRow::entropy_norm},
      {"grad_norm_wq", &LayerRow::grad_norm_wq},
      {"grad_norm_wk", &LayerRow::grad_norm_wk},
      {"grad_norm_wv", &LayerRow::grad_norm_wv},
      {"grad_ratio_qv", &LayerRow::grad_ratio_qv},
      {"grad_norm_logits", &LayerRow::grad_norm_logits},
      {"update_wq", &LayerRow::update_wq},
      {"logit_change", &LayerRow::logit_change},
      {"grad_norm_q", &LayerRow::grad_norm_q},
      {"grad_norm_weights", &LayerRow::grad_norm_weights},
      {"transmission", &LayerRow::transmission},
      {"correct_key_weight", &LayerRow::correct_key_weight},
  };
  auto it = columns.find(name);
  if (it == columns.end()) fail("study criteria: train_layers.csv has no column '", name, "'");
  return it->second;
}

double FinalRow::*final_column(const std::string& name) {
  static const std::map<std::string, double FinalRow::*> columns = {
      {"accuracy", &FinalRow::final_accuracy},
      {"final_loss", &FinalRow::final_loss},
      {"loss_auc", &FinalRow::loss_auc},
      {"loss_auc_budget", &FinalRow::loss_auc_budget},
      {"max_logit", &FinalRow::max_logit},
      {"min_entropy", &FinalRow::min_entropy},
      {"qk_std_init", &FinalRow::qk_std_init},
      {"grad_ratio_qv", &FinalRow::grad_ratio_qv},
      {"clipped_fraction", &FinalRow::clipped_fraction},
  };
  auto it = columns.find(name);
  if (it == columns.end()) fail("study criteria: final_metrics.csv has no column '", name, "'");
  return it->second;
}

// Runs of a setting: arm -> seed -> the run's rows.
struct SettingRuns {
  std::map<std::string, std::map<int64_t, const FinalRow*>> finals;
  std::map<std::string, std::map<int64_t, std::map<int64_t, const LayerRow*>>> layers;  // -> step
};

SettingRuns runs_of(const TrainResult& r, const std::string& task, int64_t d_k, int64_t seeds) {
  SettingRuns out;
  auto keep = [&](const RunKey& k) {
    return k.task == task && k.d_k == d_k && (seeds <= 0 || k.seed < seeds);
  };
  for (const auto* finals : {&r.finals, &r.extra_finals})
    for (const FinalRow& f : *finals)
      if (keep(f.run)) out.finals[f.run.mode][f.run.seed] = &f;
  for (const auto* layers : {&r.layers, &r.extra_layers})
    for (const LayerRow& l : *layers)
      if (keep(l.run) && l.layer == key_layer(task))
        out.layers[l.run.mode][l.run.seed][l.step] = &l;
  return out;
}

// One seed's value of the measure, NaN when a run lacks it. A window's value
// is the mean of the run's values over the steps every contrasted run
// logged, then its log for a ratio: the log of a mean, not a mean of logs,
// so a step whose gradient is exactly 0 lowers the value instead of making
// it minus infinity.
double seed_value(const Measure& m, const SettingRuns& runs, int64_t seed) {
  auto f = [&](double v) { return m.log ? std::log(v) : v; };
  double total = 0;
  if (m.file == "final_metrics.csv") {
    for (const Term& t : m.contrast)
      total += t.weight * f(runs.finals.at(t.arm).at(seed)->*final_column(m.column));
    return total;
  }
  double LayerRow::*field = layer_column(m.column);
  std::vector<const std::map<int64_t, const LayerRow*>*> steps;
  for (const Term& t : m.contrast) {
    const auto arm = runs.layers.find(t.arm);
    if (arm == runs.layers.end() || !arm->second.count(seed)) return kNaN;
    steps.push_back(&arm->second.at(seed));
    if (m.from_start && !steps.back()->count(0)) return kNaN;
  }
  int64_t last = m.last;
  if (last < 0) {
    last = std::numeric_limits<int64_t>::max();
    for (const auto* s : steps) last = std::min(last, s->rbegin()->first);
  }
  std::vector<int64_t> common;
  for (const auto& [step, row] : *steps.front()) {
    if (step < m.first || step > last) continue;
    bool everywhere = true;
    for (const auto* s : steps) everywhere = everywhere && s->count(step);
    if (everywhere) common.push_back(step);
  }
  if (common.empty()) return kNaN;
  for (size_t i = 0; i < steps.size(); ++i) {
    double sum = 0;
    for (int64_t step : common) sum += steps[i]->at(step)->*field;
    const double window = f(sum / static_cast<double>(common.size()));
    total += m.contrast[i].weight * (window - (m.from_start ? f(steps[i]->at(0)->*field) : 0.0));
  }
  return total;
}

}  // namespace

std::vector<std::pair<std::string, int64_t>> criterion_settings(const Measure& m,
                                                                const TrainResult& r) {
  std::map<std::string, std::set<int64_t>> trained;  // task -> d_k with every arm
  std::vector<std::string> order;
  for (const auto& [task, d_k] : settings_of(r)) {
    if (!m.task.empty() && task != m.task) continue;
    bool all = true;
    for (const Term& t : m.contrast) {
      bool found = false;
      for (const FinalRow& f : r.finals)
        found = found || (f.run.task == task && f.run.d_k == d_k && f.run.mode == t.arm);
      all = all && found;
    }
    if (!all) continue;
    if (!trained.count(task)) order.push_back(task);
    trained[task].insert(d_k);
  }
  std::vector<std::pair<std::string, int64_t>> out;
  for (const std::string& task : order) {
    if (m.d_k > 0) {
      if (trained[task].count(m.d_k)) out.emplace_back(task, m.d_k);
    } else if (m.largest)
      out.emplace_back(task, *trained[task].rbegin());
    else
      for (int64_t d_k : trained[task]) out.emplace_back(task, d_k);
  }
  return out;
}

std::vector<SettingEstimate> estimate_all(const Measure& m, const TrainResult& r, int64_t seeds,
                                          double confidence) {
  std::vector<SettingEstimate> out;
  for (const auto& [task, d_k] : criterion_settings(m, r)) {
    const SettingRuns runs = runs_of(r, task, d_k, seeds);
    SettingEstimate e{.task = task, .d_k = d_k};
    if (m.column == "solved") {
      // Two arms' shares of solved runs (reached_99), each over its own runs:
      // Newcombe's interval of the difference.
      if (m.contrast.size() != 2 || m.contrast[0].weight != 1 || m.contrast[1].weight != -1)
        fail("study criteria: 'solved' compares two arms, a - b");
      int64_t hits[2] = {0, 0}, n[2] = {0, 0};
      for (int i = 0; i < 2; ++i)
        if (runs.finals.count(m.contrast[i].arm))
          for (const auto& [seed, f] : runs.finals.at(m.contrast[i].arm))
            hits[i] += f->reached_99, ++n[i];
      if (n[0] > 0 && n[1] > 0)
        e.estimate = proportion_difference(hits[0], n[0], hits[1], n[1], confidence);
    } else {
      std::vector<double> values;
      for (const auto& [seed, f] : runs.finals.at(m.contrast.front().arm)) {
        bool all = true;
        for (const Term& t : m.contrast)
          all = all && runs.finals.count(t.arm) && runs.finals.at(t.arm).count(seed);
        if (!all) continue;
        const double v = seed_value(m, runs, seed);
        if (std::isfinite(v)) values.push_back(v);
      }
      if (!values.empty()) e.estimate = t_interval(values, confidence);
    }
    out.push_back(e);
  }
  return out;
}

std::vector<CriterionResult> evaluate(const std::string& claim_id, const Criterion& c,
                                      const TrainResult& r) {
  if (c.measure.file.empty()) fail("study criteria: ", claim_id, c.id, " has no measure");
  std::vector<CriterionResult> out;
  // An equivalence test at level 0.05 reads the 90% interval.
  for (const SettingEstimate& e : estimate_all(c.measure, r, c.seeds > 0 ? c.seeds : r.seeds,
                                               c.test == Test::Within ? 0.90 : 0.95)) {
    CriterionResult res{.claim_id = claim_id,
                        .criterion = c.id,
                        .role = c.role,
                        .task = e.task,
                        .d_k = e.d_k,
                        .estimate = e.estimate};
    res.missing = c.test != Test::ExactZero && !has_interval(e.estimate);
    res.passed = passes(c.test, c.margin, e.estimate);
    out.push_back(res);
  }
  return out;
}

CsvFile criteria_csv(const std::vector<Verdict>& verdicts) {
  CsvFile out{.name = "criteria.csv",
              .columns = {"claim",      "criterion",    "role",
                          "task",       "d_k",          "file",
                          "column",     "contrast",     "log",
                          "first_step", "last_step",    "from_start",
                          "test",       "margin",       "seeds",
                          "n",          "estimate",     "lo",
                          "hi",         "shown_margin", "shown_estimate",
                          "shown_lo",   "shown_hi",     "passed",
                          "missing",    "measured"},
              .rows = {}};
  auto test_name = [](Test t) {
    return t == Test::Above    ? "above"
           : t == Test::Below  ? "below"
           : t == Test::Within ? "within"
                               : "exactly_zero";
  };
  for (const Verdict& v : verdicts)
    for (const CriterionResult& r : v.results) {
      const Criterion& c = criterion(v.id, r.criterion, v.identity);
      const Measure& m = c.measure;
      CsvRow row = {v.id + (v.identity ? " (identity)" : ""), r.criterion,
                    c.role == Role::Check ? "check" : "evidence", r.task};
      row.push_back(r.d_k > 0 ? cli::CsvCell(r.d_k) : cli::CsvCell(""));
      row.insert(row.end(), {m.file, m.column, contrast_words(m.contrast), m.log});
      row.push_back(m.file == "train_layers.csv" ? cli::CsvCell(m.first) : cli::CsvCell(""));
      row.push_back(m.file == "train_layers.csv" && m.last >= 0 ? cli::CsvCell(m.last)
                                                                : cli::CsvCell(""));
      row.insert(row.end(),
                 {m.from_start, test_name(c.test), csv_number(c.margin), c.seeds, r.estimate.n,
                  csv_number(r.estimate.mean), csv_number(r.estimate.lo), csv_number(r.estimate.hi),
                  csv_number(shown(c, c.margin)), csv_number(shown(c, r.estimate.mean)),
                  csv_number(shown(c, r.estimate.lo)), csv_number(shown(c, r.estimate.hi)),
                  r.passed, r.missing, r.text});
      out.rows.push_back(row);
    }
  return out;
}

}  // namespace gradflow::study
