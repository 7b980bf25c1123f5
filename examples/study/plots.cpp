// The study's SVG plots. Modes keep one colour in every plot (their place
// in study_modes()), 1/sqrt(d_k) is drawn thick and last so nothing hides
// it, and every caption names exactly what its axes show.
#include <algorithm>
#include <cmath>
#include <set>

#include "examples/common/svg_plot.h"
#include "examples/study/report.h"
#include "examples/study/summary.h"
#include "nn/io/atomic_file.h"

namespace gradflow::study {

plot::Figure figure(const std::string& title, const std::string& x, bool log_x,
                    const std::string& y, bool log_y) {
  plot::Figure f;
  f.title = title;
  f.x = {.label = x, .log = log_x};
  f.y = {.label = y, .log = log_y};
  f.height = 540;  // panels of a grid keep a readable aspect
  return f;
}

namespace {

plot::Series mode_series(const std::string& mode) {
  return {.label = mode, .markers = false, .emphasis = mode == kDefaultMode};
}

// One series per mode of a Part A field against d_k at n_keys, with the 95%
// interval of its estimate as error bars. Modes without the field (the
// control in the random-vector part) are left as empty series so colours
// stay put.
plot::Figure init_panel(const std::vector<InitRow>& init, int64_t n_keys, const std::string& title,
                        const std::string& y, bool log_y, Estimate InitRow::*field,
                        double (*transform)(double) = nullptr) {
  plot::Figure f = figure(title, "d_k", true, y, log_y);
  for (const std::string& mode : study_modes()) {
    plot::Series s = mode_series(mode);
    s.markers = true;
    for (const InitRow& r : init) {
      if (r.mode != mode || r.n_keys != n_keys || !std::isfinite((r.*field).mean)) continue;
      const Estimate& e = r.*field;
      double mean = e.mean, lo = e.mean - 1.96 * e.se, hi = e.mean + 1.96 * e.se;
      if (transform) mean = transform(mean), lo = transform(std::max(lo, 0.0)), hi = transform(hi);
      s.x.push_back(static_cast<double>(r.d_k));
      s.y.push_back(mean);
      s.lo.push_back(lo);
      s.hi.push_back(hi);
    }
    f.series.push_back(s);
  }
  return f;
}

// A dashed reference line c d_k^slope through the given mode's first point.
plot::Series slope_line(const plot::Figure& f, const std::string& mode, double slope,
                        const std::string& label) {
  plot::Series line{.label = label, .dashed = true, .color = "#777777"};
  for (const plot::Series& s : f.series) {
    if (s.label != mode || s.x.empty()) continue;
    for (double x : s.x) {
      line.x.push_back(x);
      line.y.push_back(s.y.front() * std::pow(x / s.x.front(), slope));
    }
  }
  return line;
}

std::vector<std::pair<std::string, int64_t>> settings_of(const PartBResult& b) {
  std::vector<std::pair<std::string, int64_t>> out;
  for (const FinalRow& f : b.finals) {
    std::pair<std::string, int64_t> key{f.run.task, f.run.d_k};
    if (std::find(out.begin(), out.end(), key) == out.end()) out.push_back(key);
  }
  return out;
}

std::vector<std::string> modes_of(const PartBResult& b) {
  std::vector<std::string> out;
  for (const std::string& m : study_modes())
    for (const FinalRow& f : b.finals)
      if (f.run.mode == m) {
        out.push_back(m);
        break;
      }
  return out;
}

// A band of an accuracy stays within [0, 1]: with 3 seeds a t-interval can
// reach past both ends, which no accuracy can.
void add_band(plot::Series& s, const Band& b, bool accuracy = false) {
  s.x = b.step, s.y = b.mean, s.lo = b.lo, s.hi = b.hi;
  if (!accuracy) return;
  for (double& v : s.lo) v = std::clamp(v, 0.0, 1.0);
  for (double& v : s.hi) v = std::clamp(v, 0.0, 1.0);
}

// The attention layer whose dynamics the report follows: where the task's
// answer is looked up (reverse: cross-attention; recall: the second layer).
std::string key_layer(const std::string& task) {
  return task == "reverse" ? "dec0.cross" : "dec1.self";
}

}  // namespace

std::vector<PlotFile> write_plots(const std::string& dir, const std::vector<InitRow>& init,
                                  const PartBResult& b, const std::vector<DepthRow>& depth) {
  std::vector<PlotFile> out;
  auto write = [&](const std::string& name, const std::string& svg, const std::string& caption) {
    write_file_atomic(dir + "/" + name, svg);
    out.push_back({name, caption});
  };
  const plot::GridOptions grid{.legend_once = true};
  if (!init.empty()) {
    std::set<int64_t> keys;
    for (const InitRow& r : init) keys.insert(r.n_keys);
    const int64_t n = *std::next(keys.begin(), static_cast<long>(keys.size() / 2));
    const std::string at = " (" + std::to_string(n) + " keys)";
    {
      plot::Figure f =
          init_panel(init, n, "Logit std, independent unit-variance q and k", "std of s (q.k)",
                     true, &InitRow::logit_var, [](double v) { return std::sqrt(v); });
      f.series.push_back(slope_line(f, "none", 0.5, "sqrt(d_k): slope 1/2"));
      f.series.push_back(slope_line(f, "inv_dk", -0.5, "1/sqrt(d_k): slope -1/2"));
      write("logit_std.svg", plot::render_svg(f),
            "Standard deviation of the scaled logit s (q.k) against d_k, log axes, for independent "
            "unit-variance q and k" +
                at +
                ": each mode's estimate over its draws with its 95% interval (markers), and the "
                "slopes the theory gives (dashed grey): std = s sqrt(d_k). The learned scale "
                "starts at 1/sqrt(d_k) and lies under it.");
    }
    {
      std::vector<plot::Figure> panels;
      for (int64_t k : keys) {
        const std::string sub = ", " + std::to_string(k) + " keys";
        panels.push_back(
            init_panel(init, k, "Entropy" + sub, "H(p) / log n", false, &InitRow::entropy_norm));
        panels.push_back(
            init_panel(init, k, "Largest weight" + sub, "max_j p_j", false, &InitRow::max_weight));
        panels.push_back(init_panel(init, k, "Softmax Jacobian" + sub, "||diag(p) - pp^T||_F",
                                    false, &InitRow::jacobian_norm));
      }
      write("softmax_shape.svg", plot::render_svg_grid(panels, 3, grid),
            "The softmax at initialisation against d_k, for independent unit-variance q and k: "
            "normalised entropy, largest weight and Jacobian norm (columns), for 8, 64 and 512 "
            "keys (rows); means over 256 draws with 95% intervals.");
    }
    {
      plot::Figure entropy = init_panel(init, n, "Initialised layer: entropy", "H(p) / log n",
                                        false, &InitRow::layer_entropy_norm);
      plot::Figure scores = init_panel(init, n, "Gradient at the scores", "||dL/dS||_F", true,
                                       &InitRow::grad_norm_scores);
      scores.series.push_back(slope_line(scores, kDefaultMode, 0, "slope 0"));
      plot::Figure wq =
          init_panel(init, n, "Gradient at W_Q", "||dL/dW_Q||_F", true, &InitRow::grad_norm_wq);
      wq.series.push_back(slope_line(wq, kDefaultMode, 0, "slope 0"));
      wq.series.push_back(slope_line(wq, "inv_dk", -0.5, "slope -1/2"));
      wq.series.push_back(slope_line(wq, kControl, 0.25, "slope 1/4"));
      wq.series.push_back(slope_line(wq, "none", 0.5, "slope 1/2"));
      plot::Figure ratio = init_panel(init, n, "W_Q against W_V", "||dL/dW_Q|| / ||dL/dW_V||", true,
                                      &InitRow::grad_ratio_qv);
      ratio.series.push_back(slope_line(ratio, kDefaultMode, 0, "slope 0"));
      ratio.series.push_back(slope_line(ratio, "inv_dk", -0.5, "slope -1/2"));
      write("layer_gradients.svg", plot::render_svg_grid({entropy, scores, wq, ratio}, 2, grid),
            "A freshly initialised attention layer (d_model 64, one head of size d_k, " +
                std::to_string(n) +
                " tokens) against d_k, log axes but for the entropy: its softmax entropy, and the "
                "gradient norms of L = <output, r> at the scores S, at W_Q, and W_Q's over W_V's; "
                "means over layer draws with 95% intervals; dashed: the slopes docs/study.md "
                "derives (the learned scale starts as 1/sqrt(d_k) and lies under it).");
    }
  }
  if (!b.finals.empty()) {
    const auto settings = settings_of(b);
    const auto modes = modes_of(b);
    auto curve_panels = [&](const std::string& y, bool log_y, double CurveRow::*field) {
      const bool accuracy = field == &CurveRow::eval_accuracy;
      std::vector<plot::Figure> panels;
      for (const auto& [task, d_k] : settings) {
        plot::Figure f = figure(task + ", d_k = " + std::to_string(d_k), "step", false, y, log_y);
        if (accuracy) f.y.min = 0, f.y.max = 1;
        for (const std::string& mode : study_modes()) {
          plot::Series s = mode_series(mode);
          if (std::find(modes.begin(), modes.end(), mode) != modes.end())
            add_band(s, curve_band(b.curves, task, d_k, mode, field), accuracy);
          f.series.push_back(s);
        }
        panels.push_back(f);
      }
      return panels;
    };
    write("accuracy_curves.svg",
          plot::render_svg_grid(curve_panels("held-out accuracy", false, &CurveRow::eval_accuracy),
                                3, {.share_y = true, .legend_once = true}),
          "Held-out accuracy against training step, one panel per task and d_k: the mean over "
          "seeds with its 95% t-interval shaded (cut at 0 and 1; every mode of a seed starts "
          "from the same weights and sees the same batches).");
    write("loss_curves.svg",
          plot::render_svg_grid(curve_panels("held-out loss", true, &CurveRow::eval_loss), 3,
                                {.share_y = true, .legend_once = true}),
          "Held-out cross-entropy against training step (log y), one panel per task and d_k: "
          "mean over seeds with its 95% interval shaded.");
    auto layer_panels = [&](const std::string& y, double LayerRow::*field) {
      std::vector<plot::Figure> panels;
      for (const auto& [task, d_k] : settings) {
        plot::Figure f = figure(task + " " + key_layer(task) + ", d_k = " + std::to_string(d_k),
                                "step", false, y, true);
        for (const std::string& mode : study_modes()) {
          plot::Series s = mode_series(mode);
          if (std::find(modes.begin(), modes.end(), mode) != modes.end())
            add_band(s, layer_band(b.layers, task, d_k, mode, key_layer(task), field));
          f.series.push_back(s);
        }
        panels.push_back(f);
      }
      return panels;
    };
    write("max_logit.svg",
          plot::render_svg_grid(layer_panels("largest |logit|", &LayerRow::max_logit), 3,
                                {.share_y = true, .legend_once = true}),
          "The largest |scaled logit| of the attention layer where each task looks its answer up "
          "(reverse: cross-attention; recall: the second layer) against training step, log y: "
          "mean over seeds with its 95% interval shaded. Growing logits mean sharpening, "
          "eventually saturated, attention.");
    write("grad_ratio.svg",
          plot::render_svg_grid(layer_panels("||dL/dW_Q|| / ||dL/dW_V||", &LayerRow::grad_ratio_qv),
                                3, {.share_y = true, .legend_once = true}),
          "The ratio of the gradient norms at W_Q and W_V in the same layers against training "
          "step, log y: mean over seeds with its 95% interval. A falling ratio is the query's "
          "gradient vanishing relative to the value's.");
    std::vector<plot::Figure> finals;
    std::vector<std::string> tasks;
    for (const auto& [task, d_k] : settings)
      if (std::find(tasks.begin(), tasks.end(), task) == tasks.end()) tasks.push_back(task);
    const std::vector<SettingSummary> summary = summarise_training(b.finals);
    for (const std::string& task : tasks) {
      plot::Figure f = figure(task, "d_k", true, "final held-out accuracy", false);
      f.y.min = 0, f.y.max = 1;
      for (const std::string& mode : study_modes()) {
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
    write("final_accuracy.svg",
          plot::render_svg_grid(finals, 2, {.share_y = true, .legend_once = true}),
          "Final held-out accuracy (the mean of the last 10% of evaluations) against d_k, log x: "
          "mean over seeds with its 95% t-interval (cut at 0 and 1).");
  }
  if (!depth.empty()) {
    int64_t deepest = 0;
    for (const DepthRow& r : depth) deepest = std::max(deepest, r.layers);
    auto depth_panels = [&](const std::string& y, bool log_y, Estimate DepthRow::*field) {
      std::vector<plot::Figure> panels;
      for (const char* placement : {"pre_ln", "post_ln"}) {
        plot::Figure f = figure(std::string(placement) + ", " + std::to_string(deepest) + " layers",
                                "layer (0 = nearest the input)", false, y, log_y);
        for (const std::string& mode : study_modes()) {
          plot::Series s = mode_series(mode);
          s.markers = true;
          for (const DepthRow& r : depth) {
            if (r.mode != mode || r.norm_placement != placement || r.layers != deepest) continue;
            const Estimate& e = r.*field;
            s.x.push_back(static_cast<double>(r.layer));
            s.y.push_back(e.mean);
            s.lo.push_back(e.mean - 1.96 * e.se);
            s.hi.push_back(e.mean + 1.96 * e.se);
          }
          f.series.push_back(s);
        }
        panels.push_back(f);
      }
      return panels;
    };
    write("depth_gradients.svg",
          plot::render_svg_grid(depth_panels("||dL/dW_Q||_F", true, &DepthRow::grad_norm_wq), 2,
                                {.share_y = true, .legend_once = true}),
          "Gradient norm at W_Q of each layer of an initialised " + std::to_string(deepest) +
              "-layer encoder against the layer's index, pre-LN and post-LN (log y): means over "
              "draws with 95% intervals.");
    write("depth_cosine.svg",
          plot::render_svg_grid(depth_panels("mean token cosine", false, &DepthRow::token_cosine),
                                2, {.share_y = true, .legend_once = true}),
          "Mean cosine similarity between the token representations after each layer of an "
          "initialised " +
              std::to_string(deepest) +
              "-layer encoder, pre-LN and post-LN: toward 1 is rank collapse.");
  }
  return out;
}

}  // namespace gradflow::study
