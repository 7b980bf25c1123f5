// The train part's attention maps: what the layer where each task looks its
// answer up attends to, attention_maps.svg. The weights on one held-out
// example at initialisation and at the end, per arm, each with the
// gradient and the update (train_update.cpp) beside it.
#include <algorithm>

#include "examples/study/parts.h"
#include "examples/toolkit/plot/svg_heatmap.h"

namespace gradflow::study {

namespace {

// The key layer's rows of one run, first and last (null when it logged none).
std::pair<const LayerRow*, const LayerRow*> key_layer_rows(const TrainResult& b,
                                                           const RunKey& run) {
  const LayerRow *first = nullptr, *last = nullptr;
  for (const LayerRow& r : b.layers)
    if (r.run.task == run.task && r.run.mode == run.mode && r.run.d_k == run.d_k &&
        r.run.seed == run.seed && r.layer == key_layer(run.task)) {
      if (!first) first = &r;
      last = &r;
    }
  return {first, last};
}

// One arm's panel: its weights at initialisation or at the end, with the
// entropy of those weights and the gradient and update logged at the first
// (initialisation) or the last (end) evaluation step.
plot::Heatmap map_panel(const TrainResult& b, const RunKey& run, const AttentionMap& map,
                        bool at_end) {
  plot::Heatmap h{.title = run.mode};
  const std::vector<float>& weights = at_end ? map.end : map.init;
  if (weights.empty()) {
    h.missing = "diverged: no weights";
    return h;
  }
  h.rows = map.queries, h.columns = map.keys;
  // A softmax weight may round a hair outside [0, 1] in float32.
  for (float w : weights) h.values.push_back(std::clamp(static_cast<double>(w), 0.0, 1.0));
  h.notes.push_back("entropy " + significant(at_end ? map.entropy_end : map.entropy_init, 2));
  const auto [first, last] = key_layer_rows(b, run);
  if (const LayerRow* row = at_end ? last : first) {
    h.notes.push_back("||dL/dW_Q|| " + significant(row->grad_norm_wq, 2));
    h.notes.push_back("||dW_Q||/||W_Q|| " + significant(row->update_wq, 2));
  }
  return h;
}

}  // namespace

PlotFile attention_maps_figure(const TrainResult& b) {
  // The tasks in the order they ran, each with its smallest and largest d_k;
  // the arms in drawing order (in_drawing_order).
  std::vector<std::pair<std::string, std::vector<int64_t>>> tasks;
  std::vector<std::string> modes;
  for (const auto& [run, map] : b.maps) {
    auto t = std::find_if(tasks.begin(), tasks.end(),
                          [&](const auto& e) { return e.first == run.task; });
    if (t == tasks.end()) t = tasks.insert(tasks.end(), {run.task, {}});
    t->second.push_back(run.d_k);
  }
  for (const auto& [run, map] : b.maps) modes.push_back(run.mode);
  modes = in_drawing_order(modes);
  std::vector<plot::HeatmapRow> rows;
  for (auto& [task, d_ks] : tasks) {
    const auto [lo, hi] = std::minmax_element(d_ks.begin(), d_ks.end());
    for (const int64_t d_k :
         *lo == *hi ? std::vector<int64_t>{*lo} : std::vector<int64_t>{*lo, *hi})
      for (const bool at_end : {false, true}) {
        int64_t steps = 0;
        plot::HeatmapRow row;
        for (const std::string& mode : modes) {
          auto m = std::find_if(b.maps.begin(), b.maps.end(), [&](const auto& e) {
            return e.first.task == task && e.first.d_k == d_k && e.first.mode == mode;
          });
          if (m == b.maps.end()) {
            row.panels.push_back({.title = mode, .missing = "not trained here"});
            continue;
          }
          row.panels.push_back(map_panel(b, m->first, m->second, at_end));
          for (const FinalRow& f : b.finals)
            if (f.run.task == task && f.run.d_k == d_k && f.run.mode == mode &&
                f.run.seed == m->first.seed)
              steps = f.steps;
        }
        row.heading = task + ", " + key_layer(task) + ", d_k = " + std::to_string(d_k) + ": " +
                      (!at_end            ? std::string("at initialisation")
                       : two_valued(task) ? "at the end (at most " + std::to_string(steps) +
                                                " steps; a run that solves the task stops there)"
                                          : "after training (" + std::to_string(steps) + " steps)");
        rows.push_back(row);
      }
  }
  return {"attention_maps.svg", plot::render_heatmap_grid(rows, {.legend = "attention weight"}),
          "What the layer where each task looks its answer up (reverse: the decoder's "
          "cross-attention dec0.cross; recall: the second layer's self-attention dec1.self) "
          "attends to on one held-out example (the first of the evaluation set, the first "
          "seed, head 0; the same example for every arm of a row, another one at another "
          "d_k, whose runs draw their own evaluation set). One row of panels per task, d_k (the "
          "smallest and largest trained) "
          "and moment: before the first update, then after the last; one column per arm. In "
          "a panel each row is a query position (top to bottom) and each column a key "
          "position (left to right): the cell's darkness is the weight the query gives that "
          "key, white 0 to dark blue 1, and each row sums to 1 (reverse: target positions "
          "against the source's non-PAD symbols; recall: every position, keys after the "
          "query hidden, so white above the diagonal). How to read it: one dark cell per row "
          "(for reverse, an anti-diagonal: the i-th output reads the i-th symbol from the "
          "end) means the attention found its key; a uniformly pale row means it learned "
          "nothing; one dark cell per row already at initialisation means the softmax was "
          "saturated before training. Under each panel: the normalised entropy of those "
          "weights (1 uniform, 0 one-hot), and at the first (initialisation) or last (end) "
          "logged step the gradient norm at W_Q and the update AdamW applied to W_Q "
          "relative to W_Q."};
}

}  // namespace gradflow::study
