// The train part's second look: what the optimiser made of the gradient.
//
// Every run trains with AdamW, whose step divides each gradient by its own
// running size: a small gradient at W_Q is not, by itself, a small update.
// So beside each attention layer's gradient the runs log the update the step
// applied (||delta W|| / ||W||) and how far it moved the logits
// (training_run.cpp). Here, for the layer where each task looks its answer
// up: the gradient (at W_Q and at the scores) and the update of unscaled
// attention against 1/sqrt(d_k)'s, seed by seed; why the gap opens is
// mechanism.cpp's and factorial.cpp's.
//
// This file holds that table and its figure, gradient_and_update.svg;
// attention_maps.cpp draws what the layer attends to, and
// the claims' criteria (claims.h) judge what the part shows.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <tuple>

#include "examples/study/parts.h"

namespace gradflow::study {

namespace {

// Per seed, a key-layer figure averaged over the last 10% of the run's
// evaluations (at least one), as the final figures are.
std::map<int64_t, double> late_mean(const std::vector<LayerRow>& layers, const std::string& task,
                                    int64_t d_k, const std::string& mode, double LayerRow::*field) {
  std::map<int64_t, std::vector<double>> by_seed;
  for (const LayerRow& r : layers)
    if (r.run.task == task && r.run.d_k == d_k && r.run.mode == mode && r.layer == key_layer(task))
      by_seed[r.run.seed].push_back(r.*field);
  std::map<int64_t, double> out;
  for (const auto& [seed, values] : by_seed) {
    const size_t last = std::max<size_t>(1, (values.size() + 5) / 10);
    double total = 0;
    for (size_t i = values.size() - last; i < values.size(); ++i) total += values[i];
    out[seed] = total / static_cast<double>(last);
  }
  return out;
}

// `none`'s figure over 1/sqrt(d_k)'s, the geometric mean over seeds of the
// ratio seed by seed, with the number of seeds where it is below 1.
struct SeedRatio {
  double ratio = kNaN;
  int below = 0, n = 0;
};
SeedRatio seed_ratio(const TrainResult& b, const std::string& task, int64_t d_k,
                     double LayerRow::*field) {
  const auto none = late_mean(b.layers, task, d_k, "none", field);
  const auto ref = late_mean(b.layers, task, d_k, kDefaultMode, field);
  double log_sum = 0;
  SeedRatio r;
  for (const auto& [seed, v] : none) {
    auto it = ref.find(seed);
    if (it == ref.end() || !(v > 0) || !(it->second > 0)) continue;
    log_sum += std::log(v / it->second), ++r.n, r.below += v < it->second;
  }
  if (r.n > 0) r.ratio = std::exp(log_sum / r.n);
  return r;
}

std::string ratio_text(const TrainResult& b, const std::string& task, int64_t d_k,
                       double LayerRow::*field) {
  const SeedRatio r = seed_ratio(b, task, d_k, field);
  if (r.n == 0) return "-";
  return significant(r.ratio, 2) + "x (lower in " + std::to_string(r.below) + " of " +
         std::to_string(r.n) + ")";
}

}  // namespace

std::string update_table(const TrainResult& b) {
  const auto settings = settings_of(b);
  std::ostringstream md;
  md << "### The gradient and the update\n\n"
     << "For the layer where each task looks its answer up (reverse: cross-attention; recall: "
        "the second layer), averaged over the last 10% of evaluations: unscaled attention's "
        "figure over 1/sqrt(d_k)'s, seed by seed (geometric mean; how many seeds are lower). "
        "The gradient at W_Q carries the scale's factor once more than the gradient at the "
        "scores S; the update AdamW applied to W_Q (||delta W_Q|| / ||W_Q||) is near the "
        "learning rate whatever the gradient, so what differs is how far it moved the logits "
        "(mean |delta scaled logit| per step, on the step's batch).\n\n"
     << "| task | d_k | gradient at W_Q | gradient at S | update of W_Q | logit change |\n"
        "|---|---|---|---|---|---|\n";
  int rows = 0;
  for (const auto& [task, d_k] : settings) {
    const std::string grad = ratio_text(b, task, d_k, &LayerRow::grad_norm_wq);
    if (grad == "-") continue;  // `none` or 1/sqrt(d_k) did not train here
    ++rows;
    md << "| " << task << " | " << d_k << " | " << grad << " | "
       << ratio_text(b, task, d_k, &LayerRow::grad_norm_logits) << " | "
       << ratio_text(b, task, d_k, &LayerRow::update_wq) << " | "
       << ratio_text(b, task, d_k, &LayerRow::logit_change) << " |\n";
  }
  return rows > 0 ? md.str() + "\n" : "";
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The setting where unscaled attention's W_Q gradient falls furthest below
// 1/sqrt(d_k)'s (their smallest values over every seed and step, as a
// ratio), so the figure can open with it; none without both modes.
std::optional<std::pair<std::string, int64_t>> lead_setting(const TrainResult& b) {
  std::optional<std::pair<std::string, int64_t>> lead;
  double lowest = kInf;
  for (const auto& [task, d_k] : settings_of(b)) {
    std::map<std::string, double> smallest;  // per mode
    for (const LayerRow& r : b.layers) {
      if (r.run.task != task || r.run.d_k != d_k || r.layer != key_layer(task)) continue;
      if (!(r.grad_norm_wq > 0)) continue;
      auto [it, added] = smallest.try_emplace(r.run.mode, kInf);
      it->second = std::min(it->second, r.grad_norm_wq);
    }
    const double none = smallest.count("none") ? smallest["none"] : kInf,
                 ref = smallest.count(kDefaultMode) ? smallest[kDefaultMode] : kInf;
    if (none == kInf || ref == kInf || !(none / ref < lowest)) continue;
    lowest = none / ref;
    lead = std::pair{task, d_k};
  }
  return lead;
}

}  // namespace

PlotFile update_figure(const TrainResult& b, const std::vector<std::string>& trained) {
  const std::vector<std::tuple<std::string, std::string, double LayerRow::*>> columns = {
      {"W_Q gradient", "gradient norm ||dL/dW_Q||_F", &LayerRow::grad_norm_wq},
      {"W_Q update", "relative update ||delta W_Q|| / ||W_Q||", &LayerRow::update_wq},
      {"logit change", "mean |delta scaled logit| per step", &LayerRow::logit_change}};
  // In the study's order, as every figure draws them.
  const auto groups = mode_panels(in_drawing_order(trained));
  std::vector<plot::Figure> panels;
  // The first row, where the eye lands: the vanishing gradient, unscaled
  // against 1/sqrt(d_k) alone; every mode and setting follows.
  const auto lead = lead_setting(b);
  if (lead)
    for (const auto& [what, y, field] : columns)
      panels.push_back(key_layer_panel(b, lead->first, lead->second,
                                       lead->first + ", d_k " + std::to_string(lead->second) +
                                           ": " + what + ", none vs 1/sqrt(d_k)",
                                       y, field, {"none", kDefaultMode}));
  for (const auto& [task, d_k] : settings_of(b))
    for (size_t g = 0; g < groups.size(); ++g)
      for (const auto& [what, y, field] : columns)
        panels.push_back(key_layer_panel(
            b, task, d_k,
            task + ", d_k " + std::to_string(d_k) + ": " + what + panel_suffix(g, groups.size()), y,
            field, groups[g]));
  return {"gradient_and_update.svg", plot::render_svg_grid(panels, 3, {.legend_once = true}),
          std::string(lead ? "The first row: where unscaled attention's W_Q gradient falls "
                             "furthest below 1/sqrt(d_k)'s (" +
                                 lead->first + ", d_k " + std::to_string(lead->second) +
                                 "), the two modes alone. Then every mode, one row per task "
                                 "and d_k. "
                           : "") +
              "The gradient and the update for the layer where each task looks its answer up, "
              "against training step (log y; reverse: the mean over seeds with its 95% "
              "interval; recall: every seed's run): the gradient's norm at W_Q, the update AdamW "
              "applied to W_Q relative to W_Q, and how far that update moved the layer's scaled "
              "logits on the step's batch. Under AdamW the second column does not follow the "
              "first."};
}

}  // namespace gradflow::study
