// The train part's second look: what the optimiser made of the gradient,
// and what the part shows in words.
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
// And what that layer's attention looks like: attention_maps.svg, the
// weights on one held-out example at initialisation and at the end, per arm,
// each with the gradient and the update beside it. Then the part's findings
// for the report's first section, in the order a student reads them.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <tuple>

#include "examples/study/parts.h"
#include "examples/toolkit/plot/svg_heatmap.h"

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
  std::vector<std::string> modes;  // in the study's order, as every figure draws them
  for (const std::string& m : study_modes())
    if (std::find(trained.begin(), trained.end(), m) != trained.end()) modes.push_back(m);
  const auto groups = mode_panels(modes);
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
  // the arms in study_modes() order.
  std::vector<std::pair<std::string, std::vector<int64_t>>> tasks;
  std::vector<std::string> modes;
  for (const auto& [run, map] : b.maps) {
    auto t = std::find_if(tasks.begin(), tasks.end(),
                          [&](const auto& e) { return e.first == run.task; });
    if (t == tasks.end()) t = tasks.insert(tasks.end(), {run.task, {}});
    t->second.push_back(run.d_k);
  }
  for (const std::string& mode : study_modes())
    if (std::any_of(b.maps.begin(), b.maps.end(),
                    [&](const auto& m) { return m.first.mode == mode; }))
      modes.push_back(mode);
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

// ---- What the train part shows, for the report's first section -------------------

namespace {

std::string points(double v) { return significant(100 * v, 3) + "%"; }

std::string solved_text(const std::vector<SettingSummary>& summary, const std::string& mode,
                        const std::vector<int64_t>& d_ks) {
  std::string out;
  for (int64_t d_k : d_ks)
    if (const SettingSummary* s = find_setting(summary, "recall", d_k, mode))
      out +=
          (out.empty() ? "" : ", ") + std::to_string(s->reached_99) + "/" + std::to_string(s->runs);
  return out;
}

std::vector<int64_t> d_ks_of(const TrainResult& b, const std::string& task) {
  std::vector<int64_t> out;
  for (const auto& [t, d_k] : settings_of(b))
    if (t == task) out.push_back(d_k);
  return out;
}

std::string list(const std::vector<int64_t>& d_ks) {
  std::string out;
  for (int64_t d : d_ks) out += (out.empty() ? "" : ", ") + std::to_string(d);
  return out;
}

// The std of unscaled q.k at initialisation over the seeds' runs of
// (task, d_k, mode), averaged over the layers (FinalRow::qk_std_init).
double start_qk_std(const TrainResult& b, const std::string& task, int64_t d_k,
                    const std::string& mode) {
  double total = 0;
  int n = 0;
  for (const FinalRow& f : b.finals)
    if (f.run.task == task && f.run.d_k == d_k && f.run.mode == mode && f.qk_std_init > 0)
      total += f.qk_std_init, ++n;
  return n > 0 ? total / n : kNaN;
}

// Unscaled attention against 1/sqrt(d_k) across d_k, on both tasks.
Finding failure_finding(const TrainResult& b, const std::vector<SettingSummary>& summary) {
  const std::vector<int64_t> rev = d_ks_of(b, "reverse"), rec = d_ks_of(b, "recall");
  bool fails = false;
  Finding f{.figure = "final_accuracy.svg"};
  for (const auto& [task, d_ks] : {std::pair{std::string("reverse"), rev}, {"recall", rec}})
    for (int64_t d_k : d_ks) {
      const SettingSummary* n = find_setting(summary, task, d_k, "none");
      if (!n || n->vs_default.empty()) continue;
      if (d_k == d_ks.back()) fails = fails || n->verdict[0] == Comparison::Worse;
      f.detail += std::string(f.detail.empty() ? "" : "; ") + task + " d_k " + std::to_string(d_k) +
                  ", none - 1/sqrt(d_k) in " + compared_metrics(task)[0].name + ": " +
                  comparison_text(*n, 0);
    }
  if (!rev.empty()) {
    std::string none, ref;
    for (int64_t d_k : rev) {
      const SettingSummary* n = find_setting(summary, "reverse", d_k, "none");
      const SettingSummary* r = find_setting(summary, "reverse", d_k, kDefaultMode);
      if (!n || !r) continue;
      none += (none.empty() ? "" : ", ") + points(n->metric[0].mean);
      ref += (ref.empty() ? "" : ", ") + points(r->metric[0].mean);
    }
    f.text += "On `reverse`, unscaled attention ends at " + none + " held-out accuracy at d_k " +
              list(rev) + ", against " + ref + " with 1/sqrt(d_k).";
  }
  if (!rec.empty())
    f.text += std::string(f.text.empty() ? "" : " ") + "On `recall` it solves " +
              solved_text(summary, "none", rec) + " runs at d_k " + list(rec) + ", 1/sqrt(d_k) " +
              solved_text(summary, kDefaultMode, rec) + ".";
  const std::string task = rev.empty() ? "recall" : "reverse";
  const std::vector<int64_t>& d_ks = rev.empty() ? rec : rev;
  if (!d_ks.empty()) {
    const int64_t d_k = d_ks.back();
    const double sd = start_qk_std(b, task, d_k, "none");
    if (std::isfinite(sd))
      f.text +=
          " Why: q.k is a sum of d_k products, so it grows with d_k. Before any training "
          "the unscaled logits already have standard deviation " +
          significant(sd, 2) + " at d_k " + std::to_string(d_k) +
          " (about sqrt(d_k)/3 = " + significant(std::sqrt(static_cast<double>(d_k)) / 3, 2) +
          ": this initialisation gives each component of q and k variance 1/3); divided "
          "by sqrt(d_k) they would have " +
          significant(sd / std::sqrt(static_cast<double>(d_k)), 2) +
          ". So the unscaled softmax starts sharp (attention_maps.svg shows it).";
  }
  f.title = fails ? "Without scaling, attention fails at large d_k"
                  : "Without scaling, attention did not fail detectably in this run";
  if (!f.detail.empty())
    f.detail += " (paired by seed; a difference counts past its margin after Holm's correction)";
  return f;
}

// The clipped share of steps of a mode's runs at (task, d_k), over seeds.
double clipped(const TrainResult& b, const std::string& task, int64_t d_k,
               const std::string& mode) {
  double total = 0;
  int n = 0;
  for (const FinalRow& f : b.finals)
    if (f.run.task == task && f.run.d_k == d_k && f.run.mode == mode &&
        std::isfinite(f.clipped_fraction))
      total += f.clipped_fraction, ++n;
  return n > 0 ? total / n : kNaN;
}

// none_reparam (the scale moved into the initialisation and the learning
// rate) against 1/sqrt(d_k): an identity of Adam, checked, and what breaks
// it (global-norm clipping sees W_Q and W_K's gradients d_k^(1/4) larger).
Finding reparam_finding(const TrainResult& b, const std::vector<SettingSummary>& summary) {
  double largest = 0;
  std::string where;
  bool differs = false;
  for (const auto& [task, d_k] : settings_of(b)) {
    const SettingSummary* s = find_setting(summary, task, d_k, kReparam);
    if (!s) continue;
    for (const Comparison c : s->verdict)
      differs = differs || c != Comparison::NoDetectableDifference;
    if (task != "reverse") continue;
    const Interval d = s->vs_default[0];
    if (d.n > 0 && std::abs(d.mean) >= largest)
      largest = std::abs(d.mean), where = "d_k " + std::to_string(d_k);
  }
  if (where.empty()) return {};
  const std::vector<int64_t> rec = d_ks_of(b, "recall"), rev = d_ks_of(b, "reverse");
  Finding f{.figure = "accuracy_curves.svg"};
  f.text =
      "Under Adam, dividing the logits by sqrt(d_k) is the same as starting W_Q and W_K "
      "d_k^(-1/4) times smaller and letting them learn d_k^(-1/4) times slower (the "
      "abc-symmetry of Yang and Hu's Tensor Programs): Adam's step does not depend on the "
      "gradient's size. `none_reparam` is unscaled attention built that way, and it learns as "
      "1/sqrt(d_k) does: within " +
      significant(100 * largest, 2) + " points on `reverse`";
  if (!rec.empty())
    f.text += ", " + solved_text(summary, kReparam, rec) + " runs solved on `recall` against " +
              solved_text(summary, kDefaultMode, rec);
  f.text += ".";
  if (!rev.empty()) {
    const double cr = clipped(b, "reverse", rev.back(), kReparam),
                 cd = clipped(b, "reverse", rev.back(), kDefaultMode);
    if (std::isfinite(cr) && std::isfinite(cd))
      f.text +=
          " It is not bit for bit the same run: gradient clipping sees its W_Q and W_K "
          "gradients d_k^(1/4) times larger and clips " +
          points(cr) + " of its steps against " + points(cd) + " (reverse, d_k " +
          std::to_string(rev.back()) + ").";
  }
  f.detail = "none_reparam - 1/sqrt(d_k), paired by seed: ";
  bool first = true;
  for (const auto& [task, d_k] : settings_of(b))
    if (const SettingSummary* s = find_setting(summary, task, d_k, kReparam)) {
      f.detail += std::string(first ? "" : "; ") + task + " d_k " + std::to_string(d_k) + " " +
                  compared_metrics(task)[0].name + " " + comparison_text(*s, 0);
      if (task == "reverse") f.detail += ", loss AUC " + comparison_text(*s, 1);
      first = false;
    }
  f.detail +=
      "; share of steps clipped (global norm above 1), none_reparam against "
      "1/sqrt(d_k), mean over seeds:";
  for (const auto& [task, d_k] : settings_of(b))
    f.detail +=
        std::string(task == settings_of(b).front().first && d_k == settings_of(b).front().second
                        ? " "
                        : ", ") +
        task + " d_k " + std::to_string(d_k) + " " + points(clipped(b, task, d_k, kReparam)) +
        " vs " + points(clipped(b, task, d_k, kDefaultMode));
  f.title = differs ? "none_reparam did not match 1/sqrt(d_k) everywhere in this run"
                    : "A scale is an initialisation and a learning rate";
  return f;
}

}  // namespace

std::vector<Finding> train_findings(const TrainResult& b,
                                    const std::vector<SettingSummary>& summary) {
  std::vector<Finding> out;
  for (Finding f : {failure_finding(b, summary), logit_gradient_finding(b, logit_gradient_claim(b)),
                    entropy_collapse_finding(b, entropy_collapse_claim(b)),
                    factorial_finding(summarise_factorial(b)), gradient_flow_finding(b),
                    reparam_finding(b, summary)})
    if (!f.title.empty()) out.push_back(f);
  return out;
}

}  // namespace gradflow::study
