// The --full parts' CSV files and plots (Parts C, E and F).
#include <algorithm>
#include <cmath>
#include <map>

#include "examples/common/csv_log.h"
#include "examples/common/svg_plot.h"
#include "examples/study/full_analysis.h"
#include "examples/study/report.h"
#include "nn/io/atomic_file.h"

namespace gradflow::study {

namespace {

// Mean over seeds with its 95% t-interval as error bars, one point per x.
plot::Series mean_series(const std::string& label, const std::map<double, std::vector<double>>& at,
                         bool emphasis = false) {
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

}  // namespace

void write_full_csvs(const std::string& dir, const FullResults& full) {
  if (!full.sweep.empty()) {
    std::vector<CsvRow> rows;
    for (const FinalRow& f : full.sweep)
      rows.push_back({f.run.mode, f.run.d_k, f.lr, f.run.seed, csv_number(f.final_loss),
                      csv_number(f.max_logit), f.diverged, f.run.task, csv_number(f.initial_loss),
                      csv_number(f.min_entropy), f.spikes, f.collapse_step, f.first_spike_step});
    write_csv(dir + "/lr_sweep.csv",
              {"mode", "d_k", "lr", "seed", "final_loss", "max_logit", "diverged", "task",
               "initial_loss", "min_entropy", "spikes", "collapse_step", "first_spike_step"},
              rows);
  }
  if (!full.width.empty()) {
    std::vector<CsvRow> rows;
    for (const WidthRow& w : full.width)
      rows.push_back({w.parametrization, w.d_model, w.run.lr, w.run.run.seed,
                      csv_number(w.run.final_loss), csv_number(w.run.qk_std), w.run.run.d_k,
                      csv_number(w.run.qk_std_init), csv_number(w.run.initial_loss),
                      w.run.diverged});
    write_csv(dir + "/width_sweep.csv",
              {"parametrization", "d_model", "lr", "seed", "final_loss", "qk_std", "d_k",
               "qk_std_init", "initial_loss", "diverged"},
              rows);
  }
  if (!full.depth.rows.empty()) {
    std::vector<CsvRow> rows;
    for (const DepthTrainRow& r : full.depth.rows)
      rows.push_back({r.norm_placement, r.warmup, r.mode, r.seed, r.step, csv_number(r.loss),
                      r.layer, csv_number(r.grad_norm)});
    write_csv(dir + "/depth_train.csv",
              {"norm_placement", "warmup", "mode", "seed", "step", "loss", "layer", "grad_norm"},
              rows);
  }
}

std::vector<PlotFile> write_full_plots(const std::string& dir, const FullResults& full) {
  std::vector<PlotFile> out;
  auto write = [&](const std::string& name, const std::string& svg, const std::string& caption) {
    write_file_atomic(dir + "/" + name, svg);
    out.push_back({name, caption});
  };
  const plot::GridOptions grid{.share_y = true, .legend_once = true};
  if (!full.sweep.empty()) {
    std::vector<int64_t> d_ks;
    for (const FinalRow& r : full.sweep)
      if (std::find(d_ks.begin(), d_ks.end(), r.run.d_k) == d_ks.end()) d_ks.push_back(r.run.d_k);
    for (const auto& [name, field, label] :
         {std::tuple{"lr_sensitivity.svg", &capped_loss, "final loss (capped at the initial)"},
          std::tuple{"lr_max_logit.svg",
                     static_cast<double (*)(const FinalRow&)>(
                         [](const FinalRow& r) { return r.max_logit; }),
                     "largest |logit|"}}) {
      std::vector<plot::Figure> panels;
      for (int64_t d_k : d_ks) {
        plot::Figure f = figure("d_k = " + std::to_string(d_k), "learning rate", true, label, true);
        for (const std::string& mode : study_modes()) {
          std::map<double, std::vector<double>> at;
          for (const FinalRow& r : full.sweep)
            if (r.run.mode == mode && r.run.d_k == d_k) at[r.lr].push_back(field(r));
          f.series.push_back(mean_series(mode, at, mode == kDefaultMode));
        }
        panels.push_back(f);
      }
      write(name, plot::render_svg_grid(panels, 2, grid),
            std::string(label) +
                " against the learning rate per mode, log axes, one panel per d_k (Part C): "
                "mean over seeds with its 95% interval.");
    }
  }
  if (!full.sweep.empty()) {
    // A scatter: each run a dot (a NaN between points leaves each alone).
    plot::Figure f = figure("Entropy collapse and loss spikes", "lowest entropy_norm in the run",
                            false, "loss spikes (+1; diverged runs at the top)", true);
    int64_t most = 1;
    for (const FinalRow& r : full.sweep) most = std::max(most, r.spikes + 1);
    for (const std::string& mode : study_modes()) {
      plot::Series s{.label = mode, .markers = true};
      for (const FinalRow& r : full.sweep) {
        if (r.run.mode != mode) continue;
        s.x.insert(s.x.end(), {r.min_entropy, NAN});
        s.y.insert(s.y.end(), {r.diverged ? 2.0 * static_cast<double>(most)
                                          : static_cast<double>(r.spikes + 1),
                               NAN});
      }
      f.series.push_back(s);
    }
    write("entropy_collapse.svg", plot::render_svg(f),
          "Each run of Part C as a dot: the lowest attention entropy it reached (x) against its "
          "number of loss spikes plus one (y, log; diverged runs drawn at the top). Collapsed "
          "runs (x below " +
              std::to_string(kCollapsedEntropy).substr(0, 3) + ") should spike more often (C12).");
  }
  if (!full.width.empty()) {
    std::vector<plot::Figure> panels;
    for (const std::string& p : parametrizations()) {
      plot::Figure f = figure(p, "learning rate", true, "final loss (capped)", true);
      std::map<int64_t, std::map<double, std::vector<double>>> at;
      for (const WidthRow& w : full.width)
        if (w.parametrization == p) at[w.d_model][w.run.lr].push_back(capped_loss(w.run));
      for (const auto& [d_model, points] : at)
        f.series.push_back(mean_series("d_model " + std::to_string(d_model), points));
      panels.push_back(f);
    }
    write("width_lr.svg", plot::render_svg_grid(panels, 3, grid),
          "Final loss against the learning rate at each width, one panel per parametrisation "
          "(Part E), log axes: under muP the minimum should stay put as the width grows.");
    const std::vector<BestLr> best = best_lr_by_width(full.width);
    plot::Figure lr = figure("Best learning rate", "d_model", true, "best learning rate", true);
    plot::Figure qk = figure("Std of q.k", "d_k", true, "std of q.k", true);
    for (const std::string& p : parametrizations()) {
      plot::Series s{.label = p, .markers = true},
          init{.label = p + " at init", .dashed = true, .markers = true},
          trained{.label = p + " trained", .markers = true};
      for (const BestLr& b : best) {
        if (b.parametrization != p) continue;
        s.x.push_back(static_cast<double>(b.d_model)), s.y.push_back(b.best_lr);
        init.x.push_back(b.d_model / 2.0), init.y.push_back(b.qk_std_init);
        trained.x.push_back(b.d_model / 2.0), trained.y.push_back(b.qk_std);
      }
      lr.series.push_back(s);
      qk.series.push_back(init);
      qk.series.push_back(trained);
    }
    write("width_best_lr.svg", plot::render_svg_grid({lr, qk}, 2, {.legend_once = false}),
          "Left: the learning rate with the lowest final loss (averaged over seeds) against "
          "d_model. Right: the std of the unscaled q.k against d_k = d_model / 2, at "
          "initialisation (dashed) and after training at the best learning rate (solid): a "
          "slope of 1/2 means independent q and k, 1 means aligned (log axes).");
  }
  if (!full.depth.rows.empty()) {
    std::vector<plot::Figure> panels;
    for (const char* placement : {"pre_ln", "post_ln"})
      for (bool warmup : {true, false}) {
        plot::Figure f = figure(std::string(placement) + (warmup ? ", warm-up" : ", no warm-up"),
                                "step", false, "training loss", true);
        for (const std::string& mode : study_modes()) {
          std::map<double, std::vector<double>> at;
          for (const DepthTrainRow& r : full.depth.rows)
            if (r.norm_placement == placement && r.warmup == warmup && r.mode == mode &&
                r.layer == "enc0")
              at[static_cast<double>(r.step)].push_back(r.loss);
          plot::Series s = mean_series(mode, at, mode == kDefaultMode);
          s.markers = false;
          f.series.push_back(s);
        }
        panels.push_back(f);
      }
    write("depth_train_loss.svg", plot::render_svg_grid(panels, 2, grid),
          "Training loss of 4-layer encoder-decoders against step (Part F), pre-LN and post-LN "
          "with and without warm-up, log y: mean over seeds with its 95% interval.");
  }
  return out;
}

}  // namespace gradflow::study
