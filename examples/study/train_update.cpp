// The train part's second look: what the optimiser made of the gradient.
//
// Every run trains with AdamW, whose step divides each gradient by its own
// running size: a small gradient at W_Q is not, by itself, a small update.
// So beside each attention layer's gradient the runs log the update the step
// applied (||delta W|| / ||W||) and how far it moved the logits
// (training_run.cpp). Here, for the layer where each task looks its answer
// up: the gradient and the update of unscaled attention against
// 1/sqrt(d_k)'s, seed by seed, and the difference in accuracy split in two
// (docs/study.md, "Scale and learning rate"): `none` minus the control is
// what the saturated start costs, the control minus 1/sqrt(d_k) what is left
// once the start is the same, which under Adam is the learning rate of W_Q
// and W_K.
#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

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
std::string ratio_text(const TrainResult& b, const std::string& task, int64_t d_k,
                       double LayerRow::*field) {
  const auto none = late_mean(b.layers, task, d_k, "none", field);
  const auto ref = late_mean(b.layers, task, d_k, kDefaultMode, field);
  double log_sum = 0;
  int n = 0, below = 0;
  for (const auto& [seed, v] : none) {
    auto it = ref.find(seed);
    if (it == ref.end() || !(v > 0) || !(it->second > 0)) continue;
    log_sum += std::log(v / it->second), ++n, below += v < it->second;
  }
  if (n == 0) return "-";
  return significant(std::exp(log_sum / n), 2) + "x (lower in " + std::to_string(below) + " of " +
         std::to_string(n) + ")";
}

}  // namespace

std::string update_table(const TrainResult& b) {
  const auto settings = settings_of(b);
  std::ostringstream md;
  md << "### The gradient and the update\n\n"
     << "For the layer where each task looks its answer up (reverse: cross-attention; recall: "
        "the second layer), averaged over the last 10% of evaluations: unscaled attention's "
        "gradient at W_Q and the update AdamW applied to W_Q (||delta W_Q|| / ||W_Q||), each as "
        "`none` over 1/sqrt(d_k), seed by seed (geometric mean; how many seeds are lower). Then "
        "the accuracy difference `none` - 1/sqrt(d_k) (points, paired by seed, 95% interval) "
        "split in two: `none` - control, what starting saturated costs, and control - "
        "1/sqrt(d_k), what is left once the start is the same (under Adam, the learning rate of "
        "W_Q and W_K).\n\n"
     << "| task | d_k | gradient at W_Q | update of W_Q | none - 1/sqrt(d_k) | none - control | "
        "control - 1/sqrt(d_k) |\n|---|---|---|---|---|---|---|\n";
  int rows = 0;
  for (const auto& [task, d_k] : settings) {
    auto diff = [&](const std::string& a, const std::string& c) {
      return interval_text(paired_between(b.finals, task, d_k, a, c, &FinalRow::final_accuracy), 1,
                           100);
    };
    const std::string grad = ratio_text(b, task, d_k, &LayerRow::grad_norm_wq);
    if (grad == "-") continue;  // `none` or 1/sqrt(d_k) did not train here
    ++rows;
    md << "| " << task << " | " << d_k << " | " << grad << " | "
       << ratio_text(b, task, d_k, &LayerRow::update_wq) << " | " << diff("none", kDefaultMode)
       << " | " << diff("none", kControl) << " | " << diff(kControl, kDefaultMode) << " |\n";
  }
  return rows > 0 ? md.str() + "\n" : "";
}

PlotFile update_figure(const TrainResult& b, const std::vector<std::string>& modes) {
  const std::vector<std::pair<std::string, double LayerRow::*>> columns = {
      {"||dL/dW_Q||", &LayerRow::grad_norm_wq},
      {"||delta W_Q|| / ||W_Q||", &LayerRow::update_wq},
      {"mean |delta logit|", &LayerRow::logit_change}};
  std::vector<plot::Figure> panels;
  for (const auto& [task, d_k] : settings_of(b))
    for (const auto& [label, field] : columns)
      panels.push_back(key_layer_panel(b, task, d_k, task + ", d_k = " + std::to_string(d_k), label,
                                       field, modes));
  return {"gradient_and_update.svg", plot::render_svg_grid(panels, 3, {.legend_once = true}),
          "The gradient and the update, per mode, for the layer where each task looks its answer "
          "up, against training step (log y; mean over seeds with its 95% interval), one row per "
          "task and d_k: the gradient's norm at W_Q, the update AdamW applied to W_Q relative to "
          "W_Q, and how far that update moved the layer's scaled logits on the step's batch. "
          "Under AdamW the second column does not follow the first."};
}

}  // namespace gradflow::study
