// The qk-rate part's runs (qk_rate.h): unscaled attention started at a
// chosen logit std, W_Q and W_K learning at m times the rate, at four
// widths, on recall and on a character-level language model; and the
// references as they are built.
#include "examples/study/qk_rate.h"

#include <algorithm>
#include <cmath>

#include "examples/study/parts.h"

namespace gradflow::study {

QkRateOptions qk_rate_options(const Settings& settings) {
  QkRateOptions o;
  if (settings.seeds > 0) {
    o.seeds = settings.seeds;
    o.other_seeds = std::min(o.other_seeds, settings.seeds);
    o.few_seeds = std::min(o.few_seeds, settings.seeds);
  }
  if (settings.steps > 0) o.recall_steps = o.charlm_steps = settings.steps;
  return o;
}

namespace {

// One cell of the grid: an arm at a start and a multiplier.
struct Cell {
  std::string arm;
  double sigma0 = 0;
  int power = 0;
};

std::vector<Cell> cells(const QkRateOptions& o) {
  std::vector<Cell> out;
  for (double sigma : o.sigmas)
    for (int power : o.powers) out.push_back({"none", sigma, power});
  for (const std::string& reference : o.references) out.push_back({reference, 0, 0});
  return out;
}

int64_t seeds_of(const QkRateOptions& o, const Cell& c, int64_t d_model) {
  const bool alpha_cell = c.arm == "none" && c.sigma0 == 1;
  if (d_model >= o.few_seeds_from) {
    const bool first_reference = !o.references.empty() && c.arm == o.references.front();
    return alpha_cell || first_reference ? o.few_seeds : 0;
  }
  return alpha_cell ? o.seeds : o.other_seeds;
}

TaskSetup task_at(const QkRateOptions& o, const std::string& task, int64_t d_model) {
  TaskSetup t = task == "charlm" ? charlm_setup() : recall_setup();
  // 4 heads of d_k = d_model / 4, d_ff = 2 d_model: every size grows with
  // the width, as in real models.
  t.model.d_model = d_model, t.model.heads = 4, t.model.layers = 2, t.model.d_ff = 2 * d_model;
  t.steps = task == "charlm" ? o.charlm_steps : o.recall_steps;
  return t;
}

// Where the runs' rows start in run order, so rows and runs stay in step.
template <typename Visit>
void for_each_run(const QkRateOptions& o, Visit visit) {
  for (const std::string& task : o.tasks)
    for (int64_t d_model : o.d_models)
      for (const Cell& c : cells(o))
        for (int64_t seed = 0; seed < seeds_of(o, c, d_model); ++seed)
          visit(task, d_model, c, seed);
}

}  // namespace

std::vector<RunSpec> qk_rate_runs(const Settings& settings, const QkRateOptions& o) {
  for (const std::string& task : o.tasks)
    if (task != "recall" && task != "charlm")
      fail("qk-rate: unknown task '", task, "' (expected recall or charlm)");
  for (int64_t d_model : o.d_models)
    if (d_model < 4 || d_model % 4 != 0)
      fail("qk-rate: d_model ", d_model, " is not a positive multiple of 4 heads");
  std::vector<RunSpec> runs;
  for_each_run(o, [&](const std::string& task, int64_t d_model, const Cell& c, int64_t seed) {
    RunSpec spec;
    spec.task = task_at(o, task, d_model);
    // Every cell of a (task, width, seed) starts from the same weights (before
    // its start is set) and sees the same batches: the cells are paired.
    spec.key = {task, c.arm, d_model / 4, seed};
    spec.batch = o.batch;
    spec.eval_every = 20;
    // The logit step is read over the first 50 updates: probed every 2 steps
    // until 20, then at each evaluation.
    spec.probe_densely_until = 20;
    spec.qk_logit_std = c.sigma0;
    spec.qk_lr_multiplier = std::pow(4.0, c.power);
    spec.seed = settings.seed;
    runs.push_back(spec);
  });
  return runs;
}

namespace {

// The key layer's mean over its rows with a step in [first, last).
double key_layer_mean(const RunOutput& out, const std::string& task, double LayerRow::*column,
                      double first, double last) {
  double sum = 0, n = 0;
  for (const LayerRow& r : out.layers)
    if (r.layer == key_layer(task) && r.step >= first && r.step < last && std::isfinite(r.*column))
      sum += r.*column, ++n;
  return n > 0 ? sum / n : kNaN;
}

}  // namespace

std::vector<QkRateRow> run_qk_rate(const Settings& settings, const QkRateOptions& o) {
  const std::vector<RunSpec> runs = qk_rate_runs(settings, o);
  std::vector<RunOutput> outputs = train_all(
      "qk-rate", runs, settings, settings.progress_for("qk-rate: the Q/K rate across d_k", "run"));
  std::vector<QkRateRow> rows;
  size_t i = 0;
  for_each_run(o, [&](const std::string& task, int64_t d_model, const Cell& c, int64_t seed) {
    const RunOutput& out = outputs[i++];
    QkRateRow row{.task = task,
                  .arm = c.arm,
                  .d_model = d_model,
                  .d_k = d_model / 4,
                  .seed = seed,
                  .sigma0 = c.sigma0,
                  .power = c.power,
                  .run = out.final};
    const double ran = static_cast<double>(std::max<int64_t>(out.final.steps_run, 1));
    row.logit_step = key_layer_mean(out, task, &LayerRow::logit_change, 0, 50);
    row.correct_key_weight =
        task == "charlm"
            ? kNaN
            : key_layer_mean(out, task, &LayerRow::correct_key_weight, 0.8 * ran, ran + 1);
    row.solved = task == "recall" && out.final.reached_99 && !out.final.diverged;
    rows.push_back(row);
  });
  return rows;
}

}  // namespace gradflow::study
