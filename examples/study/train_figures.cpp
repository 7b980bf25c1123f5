// The train part's files: its CSV files (every evaluation, every attention
// layer at every evaluation, every run's end) and its figures (learning
// curves, the key layer over training, every setting's outcome). train.cpp
// holds the part's runs, claims and section.
#include <algorithm>
#include <cmath>
#include <map>

#include "examples/study/claims.h"
#include "examples/study/parts.h"

namespace gradflow::study {

namespace {

std::vector<std::string> run_columns() { return {"task", "d_k", "mode", "seed"}; }
void add_run(CsvRow& row, const RunKey& k) {
  row.insert(row.end(), {k.task, k.d_k, k.mode, k.seed});
}

// The part's own seeds first, then a criterion's extra seeds (TrainResult).
template <typename Row>
std::vector<const Row*> all_rows(const std::vector<Row>& own, const std::vector<Row>& extra) {
  std::vector<const Row*> out;
  for (const auto* rows : {&own, &extra})
    for (const Row& r : *rows) out.push_back(&r);
  return out;
}

}  // namespace

std::vector<CsvFile> train_csvs(const TrainResult& b) {
  std::vector<CsvFile> out;
  {
    std::vector<std::string> columns = run_columns();
    for (const char* c : {"step", "train_loss", "eval_loss", "accuracy", "spike"})
      columns.push_back(c);
    std::vector<CsvRow> rows;
    for (const CurveRow* p : all_rows(b.curves, b.extra_curves)) {
      const CurveRow& r = *p;
      CsvRow row;
      add_run(row, r.run);
      row.insert(row.end(), {r.step, csv_number(r.train_loss), csv_number(r.eval_loss),
                             csv_number(r.eval_accuracy), r.spike});
      rows.push_back(row);
    }
    out.push_back({"train_metrics.csv", columns, rows});
  }
  {
    std::vector<std::string> columns = run_columns();
    for (const char* c : {"step", "layer", "layer_d_k", "max_logit", "entropy_norm", "grad_norm_wq",
                          "grad_norm_wk", "grad_norm_wv", "grad_ratio_qv", "grad_norm_logits",
                          "update_wq", "update_wk", "update_wv", "logit_change", "grad_norm_q",
                          "grad_norm_k", "grad_norm_weights", "transmission", "correct_key_weight"})
      columns.push_back(c);
    std::vector<CsvRow> rows;
    for (const LayerRow* p : all_rows(b.layers, b.extra_layers)) {
      const LayerRow& r = *p;
      CsvRow row;
      add_run(row, r.run);
      row.insert(
          row.end(),
          {r.step, r.layer, r.layer_d_k, csv_number(r.max_logit), csv_number(r.entropy_norm),
           csv_number(r.grad_norm_wq), csv_number(r.grad_norm_wk), csv_number(r.grad_norm_wv),
           csv_number(r.grad_ratio_qv), csv_number(r.grad_norm_logits), csv_number(r.update_wq),
           csv_number(r.update_wk), csv_number(r.update_wv), csv_number(r.logit_change),
           csv_number(r.grad_norm_q), csv_number(r.grad_norm_k), csv_number(r.grad_norm_weights),
           csv_number(r.transmission), csv_number(r.correct_key_weight)});
      rows.push_back(row);
    }
    out.push_back({"train_layers.csv", columns, rows});
  }
  {
    std::vector<std::string> columns = run_columns();
    for (const char* c :
         {"lr",           "steps",         "accuracy",         "final_loss",    "steps_to_90",
          "reached_90",   "steps_to_99",   "reached_99",       "loss_auc",      "loss_auc_budget",
          "seq_accuracy", "spikes",        "max_logit",        "min_entropy",   "qk_std_init",
          "qk_std",       "grad_ratio_qv", "clipped_fraction", "qk_grad_share", "diverged"})
      columns.push_back(c);
    // The optimizer right after the mode, as in sgd_sweep.csv.
    const auto optimizer_at =
        std::find(columns.begin(), columns.end(), "mode") - columns.begin() + 1;
    columns.insert(columns.begin() + optimizer_at, "optimizer");
    std::vector<CsvRow> rows;
    for (const FinalRow* p : all_rows(b.finals, b.extra_finals)) {
      const FinalRow& f = *p;
      CsvRow row;
      add_run(row, f.run);
      row.insert(row.begin() + optimizer_at, f.optimizer);
      row.insert(row.end(), {f.lr,
                             f.steps,
                             csv_number(f.final_accuracy),
                             csv_number(f.final_loss),
                             f.steps_to_90,
                             f.reached_90,
                             f.steps_to_99,
                             f.reached_99,
                             csv_number(f.loss_auc),
                             csv_number(f.loss_auc_budget),
                             f.seq_accuracy >= 0 ? csv_number(f.seq_accuracy) : "",
                             f.spikes,
                             csv_number(f.max_logit),
                             csv_number(f.min_entropy),
                             csv_number(f.qk_std_init),
                             csv_number(f.qk_std),
                             csv_number(f.grad_ratio_qv),
                             csv_number(f.clipped_fraction),
                             csv_number(f.qk_grad_share),
                             f.diverged});
      rows.push_back(row);
    }
    out.push_back({"final_metrics.csv", columns, rows});
  }
  out.push_back(gradient_flow_csv(b));
  return out;
}

namespace {

std::vector<std::string> modes_of(const TrainResult& b) {
  std::vector<std::string> out;
  for (const FinalRow& f : b.finals) out.push_back(f.run.mode);
  return in_drawing_order(out);
}

// A two-valued task's outcome, one dot per run: the steps to solve it, or
// above the budget for a run that never did. Modes side by side around each
// d_k, seeds a little apart within a mode; one series per mode whose dots a
// NaN keeps apart.
plot::Figure solve_dots(const TrainResult& b, const std::string& task,
                        const std::vector<std::string>& modes, const std::string& suffix) {
  plot::Figure f = figure(task + ": steps to solve, one dot per run" + suffix, "d_k (log scale)",
                          true, "steps to 99% held-out accuracy", false);
  double budget = 0;
  for (const FinalRow& r : b.finals)
    if (r.run.task == task) budget = std::max(budget, static_cast<double>(r.steps));
  for (size_t i = 0; i < modes.size(); ++i) {
    plot::Series s = mode_series(modes[i], true);
    const double middle = static_cast<double>(modes.size() - 1) / 2;
    for (const FinalRow& r : b.finals) {
      if (r.run.task != task || r.run.mode != modes[i]) continue;
      const double shift = 0.07 * (static_cast<double>(i) - middle) +
                           0.012 * static_cast<double>(r.run.seed % 5 - 2);
      s.x.insert(s.x.end(), {static_cast<double>(r.run.d_k) * std::exp(shift), kNaN});
      s.y.insert(s.y.end(),
                 {r.reached_99 ? r.steps_to_99
                               : budget * (1.06 + 0.01 * static_cast<double>(r.run.seed % 5)),
                  kNaN});
    }
    f.series.push_back(s);
  }
  plot::Series line{.label = "budget (above: not solved)", .reference = true};
  for (const FinalRow& r : b.finals)
    if (r.run.task == task) {
      line.x.push_back(static_cast<double>(r.run.d_k));
    }
  std::sort(line.x.begin(), line.x.end());
  if (!line.x.empty()) {
    line.x = {line.x.front() * 0.7, line.x.back() * 1.4};
    line.y = {budget, budget};
  }
  f.series.push_back(line);
  f.y.min = 0, f.y.max = budget * 1.15;
  return f;
}

}  // namespace

// The mechanism figure's numbers, as its claims' criteria measure them
// (claims_mechanism.cpp): a caption computed from the runs it draws, never
// fixed words about what they show.
std::string mechanism_caption(const TrainResult& b) {
  std::string out;
  auto say = [&](const std::string& claim_id, const std::string& name, const std::string& what) {
    const Criterion& c = criterion(claim_id, name);
    std::string values;
    for (const SettingEstimate& e : estimate_all(c.measure, b, c.seeds > 0 ? c.seeds : b.seeds))
      if (std::isfinite(e.estimate.mean))
        values += (values.empty() ? "" : ", ") + e.task + " " + shown_text(c, e.estimate.mean);
    if (!values.empty()) out += (out.empty() ? "" : " ") + what + ": " + values + ".";
  };
  say("C20", "a", "Unscaled attention's ||dL/dS|| from step 60 on over its own at step 0 (C20)");
  say("C23", "b", "The same growth, unscaled over 1/sqrt(d_k)'s (C23)");
  say("C23", "a", "The share passed on from step 60 on, unscaled over 1/sqrt(d_k)'s (C23)");
  say("C21", "c", "The control's entropy minus none_reparam's over steps 10 to 50 (C21)");
  say("C27", "a",
      "The control's weight on the right key minus none_reparam's from step 60 on (C27)");
  return out;
}

std::vector<PlotFile> train_figures(const TrainResult& b,
                                    const std::vector<SettingSummary>& summary) {
  std::vector<PlotFile> out;
  const auto settings = settings_of(b);
  const auto groups = mode_panels(modes_of(b));
  auto curve_panels = [&](const std::string& y, bool log_y, double CurveRow::*field) {
    const bool accuracy = field == &CurveRow::eval_accuracy;
    std::vector<plot::Figure> panels;
    for (const auto& [task, d_k] : settings)
      for (size_t g = 0; g < groups.size(); ++g) {
        plot::Figure f =
            figure(task + ", d_k = " + std::to_string(d_k) + panel_suffix(g, groups.size()),
                   "training step", false, y, log_y);
        if (accuracy) f.y.min = 0, f.y.max = 1;
        for (const std::string& mode : groups[g]) {
          plot::Series s = mode_series(mode);
          if (two_valued(task)) curve_paths(s, b.curves, task, d_k, mode, field);
          if (!two_valued(task)) curve_band(s, b.curves, task, d_k, mode, field, accuracy);
          f.series.push_back(s);
        }
        panels.push_back(f);
      }
    return panels;
  };
  out.push_back(
      {"accuracy_curves.svg",
       plot::render_svg_grid(
           curve_panels("held-out accuracy (0 to 1)", false, &CurveRow::eval_accuracy), 3,
           {.share_y = true, .legend_once = true}),
       "Held-out accuracy against training step, one panel per task and d_k. reverse: the "
       "mean over seeds with its 95% t-interval shaded (cut at 0 and 1; every mode of a seed "
       "starts from the same weights and sees the same batches). recall: every seed's own "
       "run, one line each, since a run either solves it (and stops at 99%) or stays near "
       "chance, and a mean of the two would draw a path no run followed."});
  out.push_back(
      {"loss_curves.svg",
       plot::render_svg_grid(
           curve_panels("held-out loss (cross-entropy, nats)", true, &CurveRow::eval_loss), 3,
           {.share_y = true, .legend_once = true}),
       "Held-out cross-entropy against training step (log y), one panel per task and d_k: "
       "reverse, the mean over seeds with its 95% interval shaded; recall, every seed's run."});
  auto layer_panels = [&](const std::string& y, double LayerRow::*field) {
    std::vector<plot::Figure> panels;
    for (const auto& [task, d_k] : settings)
      for (size_t g = 0; g < groups.size(); ++g)
        panels.push_back(key_layer_panel(b, task, d_k,
                                         task + " " + key_layer(task) + ", d_k = " +
                                             std::to_string(d_k) + panel_suffix(g, groups.size()),
                                         y, field, groups[g]));
    return panels;
  };
  out.push_back(
      {"max_logit.svg",
       plot::render_svg_grid(layer_panels("largest |scaled logit|", &LayerRow::max_logit), 3,
                             {.share_y = true, .legend_once = true}),
       "The largest |scaled logit| of the attention layer where each task looks its answer up "
       "(reverse: cross-attention; recall: the second layer) against training step, log y: "
       "reverse, the mean over seeds with its 95% interval shaded; recall, every seed's run. "
       "Growing logits mean sharpening, eventually saturated, attention."});
  out.push_back(
      {"grad_ratio.svg",
       plot::render_svg_grid(
           layer_panels("gradient norm ratio ||dL/dW_Q|| / ||dL/dW_V||", &LayerRow::grad_ratio_qv),
           3, {.share_y = true, .legend_once = true}),
       "The ratio of the gradient norms at W_Q and W_V in the same layers against training "
       "step, log y: reverse, the mean over seeds with its 95% interval; recall, every seed's "
       "run. A falling ratio is the query's gradient vanishing relative to the value's."});
  // The mechanism (C20, C21), a row per task at its largest d_k: accuracy,
  // the key layer's entropy and the gradient that reaches its logits, side
  // by side. The first row of each task holds the arms of the story (none,
  // 1/sqrt(d_k), the control, none_reparam), the next ones any other arm
  // beside the anchors, split as every figure splits arms (mode_panels: no
  // colour twice in a row, as --full's inv_dk and inv_2sqrt_dk share one).
  std::map<std::string, int64_t> largest;
  for (const auto& [task, d_k] : settings) largest[task] = std::max(largest[task], d_k);
  std::vector<std::string> told, anchors, others;
  for (const std::string& mode : modes_of(b)) {
    // The anchors, and the arms that change how W_Q and W_K start (the control, none_reparam).
    const bool anchor = arm(mode).anchor;
    (anchor || changes_qk_init(mode) ? told : others).push_back(mode);
    if (anchor) anchors.push_back(mode);
  }
  std::vector<std::vector<std::string>> story = {told};
  if (!others.empty()) {
    others.insert(others.begin(), anchors.begin(), anchors.end());
    for (const std::vector<std::string>& row : mode_panels(others)) story.push_back(row);
  }
  std::vector<plot::Figure> mechanism;
  for (const auto& [task, d_k] : settings)
    for (size_t g = 0; g < story.size() && d_k == largest[task]; ++g) {
      const std::string where =
          task + ", d_k = " + std::to_string(d_k) + panel_suffix(g, story.size());
      plot::Figure accuracy = figure(where, "training step", false, "held-out accuracy", false);
      accuracy.y.min = 0, accuracy.y.max = 1;
      for (const std::string& mode : story[g]) {
        plot::Series s = mode_series(mode);
        if (two_valued(task)) curve_paths(s, b.curves, task, d_k, mode, &CurveRow::eval_accuracy);
        if (!two_valued(task))
          curve_band(s, b.curves, task, d_k, mode, &CurveRow::eval_accuracy, true);
        accuracy.series.push_back(s);
      }
      mechanism.push_back(accuracy);
      plot::Figure entropy =
          key_layer_panel(b, task, d_k, key_layer(task) + " entropy", "entropy / log(keys)",
                          &LayerRow::entropy_norm, story[g], /*log_y=*/false);
      entropy.y.min = 0, entropy.y.max = 1;
      mechanism.push_back(entropy);
      mechanism.push_back(key_layer_panel(b, task, d_k, "at the softmax's input", "||dL/dS||",
                                          &LayerRow::grad_norm_logits, story[g]));
      mechanism.push_back(key_layer_panel(b, task, d_k, "softmax passes on",
                                          "||dL/dS|| / ||dL/dP||", &LayerRow::transmission,
                                          story[g]));
      plot::Figure key = key_layer_panel(b, task, d_k, "on the right key", "attention weight",
                                         &LayerRow::correct_key_weight, story[g], false);
      key.y.min = 0, key.y.max = 1;
      mechanism.push_back(key);
    }
  out.push_back({"entropy_and_logit_gradient.svg",
                 plot::render_svg_grid(mechanism, 5, {.legend_once = true}),
                 "What happens in the layer where each task looks its answer up, a row per task "
                 "at its largest d_k, against training step: held-out accuracy; the normalised "
                 "entropy of its attention (1: uniform, 0: one key); the norm of the gradient at "
                 "its scaled logits S, the softmax's input (log y; dL/dW_Q carries the scale's "
                 "factor once more, this does not); the share of the gradient at the softmax's "
                 "output P that it passes on to S, ||dL/dS|| / ||dL/dP|| (log y); and the "
                 "attention weight on the key that holds the answer. reverse: the mean over "
                 "seeds with its 95% interval; recall: every seed's run. The layer is probed "
                 "every 2 steps until step 50, then at every evaluation (10 steps). The first row "
                 "of a task holds unscaled attention, 1/sqrt(d_k), the control (unscaled, W_Q "
                 "and W_K started small) and none_reparam (the control learning W_Q and W_K "
                 "d_k^(-1/4) slower). " +
                     mechanism_caption(b)});
  std::vector<plot::Figure> finals;
  std::vector<std::string> tasks;
  for (const auto& [task, d_k] : settings)
    if (std::find(tasks.begin(), tasks.end(), task) == tasks.end()) tasks.push_back(task);
  for (const std::string& task : tasks)
    for (size_t g = 0; g < groups.size(); ++g) {
      const std::string suffix = panel_suffix(g, groups.size());
      if (two_valued(task)) {
        finals.push_back(solve_dots(b, task, groups[g], suffix));
        continue;
      }
      plot::Figure f =
          figure(task + suffix, "d_k (log scale)", true, "final held-out accuracy (0 to 1)", false);
      f.y.min = 0, f.y.max = 1;
      for (const std::string& mode : groups[g]) {
        plot::Series s = mode_series(mode);
        s.markers = true;
        for (const SettingSummary& r : summary) {
          if (r.task != task || r.mode != mode) continue;
          const Interval& a = r.metric[0];
          s.x.push_back(static_cast<double>(r.d_k));
          s.y.push_back(a.mean);
          s.lo.push_back(std::clamp(std::isfinite(a.lo) ? a.lo : a.mean, 0.0, 1.0));
          s.hi.push_back(std::clamp(std::isfinite(a.hi) ? a.hi : a.mean, 0.0, 1.0));
        }
        f.series.push_back(s);
      }
      finals.push_back(f);
    }
  out.push_back(
      {"final_accuracy.svg", plot::render_svg_grid(finals, 2, {.legend_once = true}),
       "The outcome of every trained setting against d_k (log x). reverse: final held-out "
       "accuracy (the mean of the last 10% of evaluations), the mean over seeds with its 95% "
       "t-interval. recall: one dot per run, at the step it first reached 99% held-out "
       "accuracy (and stopped), or above the dashed budget line when it never did; the "
       "modes sit side by side around each d_k."});
  return out;
}

std::vector<std::pair<std::string, int64_t>> settings_of(const TrainResult& b) {
  std::vector<std::pair<std::string, int64_t>> out;
  for (const FinalRow& f : b.finals) {
    std::pair<std::string, int64_t> key{f.run.task, f.run.d_k};
    if (std::find(out.begin(), out.end(), key) == out.end()) out.push_back(key);
  }
  return out;
}

plot::Figure key_layer_panel(const TrainResult& b, const std::string& task, int64_t d_k,
                             const std::string& title, const std::string& y,
                             double LayerRow::*field, const std::vector<std::string>& modes,
                             bool log_y) {
  plot::Figure f = figure(title, "training step", false, y, log_y);
  for (const std::string& mode : modes) {
    plot::Series s = mode_series(mode);
    if (two_valued(task)) layer_paths(s, b.layers, task, d_k, mode, key_layer(task), field);
    if (!two_valued(task)) layer_band(s, b.layers, task, d_k, mode, key_layer(task), field);
    f.series.push_back(s);
  }
  return f;
}

}  // namespace gradflow::study
