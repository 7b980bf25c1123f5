// The lr part (--full): learning-rate sensitivity per mode (Wortsman et al.
// 2023). Every mode at two d_k over a grid of learning rates on the reverse
// task; within a seed every run starts from the same weights and sees the
// same batches (train_one's seeds do not depend on the lr or the mode), so
// comparisons are paired. Claims judged here: C9 (QK normalisation lowers
// the sensitivity) and C12 (spikes follow entropy collapse). The train
// part's C8 also reads these runs.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>
#include <tuple>

#include "examples/study/claims.h"
#include "examples/study/parts.h"

namespace gradflow::study {

LrOptions lr_options(const Settings& settings) {
  LrOptions o;
  if (settings.full) o.modes = study_modes();
  if (!settings.modes.empty()) o.modes = settings.modes;
  if (settings.seeds > 0) o.seeds = settings.seeds;
  if (settings.steps > 0) o.task.steps = settings.steps;
  return o;
}

std::vector<RunSpec> grid_runs(const Settings& settings, const TaskSetup& task,
                               const std::vector<int64_t>& d_ks,
                               const std::vector<std::string>& modes,
                               const std::vector<double>& lrs, int64_t seeds,
                               const std::string& optimizer) {
  std::vector<RunSpec> runs;
  for (int64_t d_k : d_ks)
    for (const std::string& mode : modes)
      for (double lr : lrs)
        for (int64_t seed = 0; seed < seeds; ++seed) {
          RunSpec spec;
          spec.key = {task.task, mode, d_k, seed};
          spec.task = task;
          spec.task.lr = lr;
          spec.seed = settings.seed;
          spec.optimizer = optimizer;
          runs.push_back(spec);
        }
  return runs;
}

std::vector<RunSpec> lr_runs(const Settings& settings, const LrOptions& o) {
  return grid_runs(settings, o.task, o.d_ks, o.modes, o.lrs, o.seeds, "adamw");
}

std::vector<FinalRow> run_lr(const Settings& settings, const LrOptions& o) {
  std::vector<FinalRow> out;
  for (RunOutput& r : train_all("lr", lr_runs(settings, o), settings,
                                settings.progress_for("lr: learning rates", "run")))
    out.push_back(r.final);
  return out;
}

double capped_loss(const FinalRow& r) {
  if (r.diverged || !std::isfinite(r.final_loss)) return r.initial_loss;
  return std::min(r.final_loss, r.initial_loss);
}

std::vector<Sensitivity> lr_sensitivity(const std::vector<FinalRow>& sweep) {
  // (mode, d_k, seed) -> capped losses over the grid; (mode, d_k, lr) -> over seeds.
  std::map<std::tuple<std::string, int64_t, int64_t>, std::vector<double>> by_seed;
  std::map<std::tuple<std::string, int64_t>, std::map<double, std::vector<double>>> by_lr;
  std::vector<std::pair<std::string, int64_t>> order;
  for (const FinalRow& r : sweep) {
    by_seed[{r.run.mode, r.run.d_k, r.run.seed}].push_back(capped_loss(r));
    by_lr[{r.run.mode, r.run.d_k}][r.lr].push_back(capped_loss(r));
    std::pair<std::string, int64_t> key{r.run.mode, r.run.d_k};
    if (std::find(order.begin(), order.end(), key) == order.end()) order.push_back(key);
  }
  // Per seed: mean over lrs of (capped - the best capped).
  std::map<std::pair<std::string, int64_t>, std::map<int64_t, double>> sens;
  for (const auto& [key, losses] : by_seed) {
    const double best = *std::min_element(losses.begin(), losses.end());
    double total = 0;
    for (double l : losses) total += l - best;
    sens[{std::get<0>(key), std::get<1>(key)}][std::get<2>(key)] =
        total / static_cast<double>(losses.size());
  }
  std::vector<Sensitivity> out;
  for (const auto& [mode, d_k] : order) {
    Sensitivity s;
    s.mode = mode, s.d_k = d_k;
    std::vector<double> values;
    for (const auto& [seed, v] : sens[{mode, d_k}]) values.push_back(v);
    s.sensitivity = interval_of_finite(values);
    s.best_loss = std::numeric_limits<double>::infinity();
    for (const auto& [lr, losses] : by_lr[{mode, d_k}]) {
      double mean = 0;
      for (double l : losses) mean += l / static_cast<double>(losses.size());
      if (mean < s.best_loss) s.best_loss = mean, s.best_lr = lr;
    }
    s.vs_default = no_interval();
    auto ref = sens.find({kDefaultMode, d_k});
    if (!is_reference(mode) && ref != sens.end()) {
      std::vector<double> a, b;
      for (const auto& [seed, v] : sens[{mode, d_k}])
        if (ref->second.count(seed)) a.push_back(v), b.push_back(ref->second.at(seed));
      if (!a.empty()) {
        s.vs_default = paired_difference(a, b);
        s.verdict = compare(s.vs_default, kSensitivityMargin, false);
      }
    }
    out.push_back(s);
  }
  return out;
}

namespace {

// C9: QK normalisation's LR sensitivity is detectably lower than 1/sqrt(d_k)'s,
// a row per (QK-normalised mode, d_k).
Verdict sensitivity_claim(const std::vector<Sensitivity>& sens, int64_t seeds) {
  std::string measured;
  std::vector<Outcome> rows;
  for (const Sensitivity& s : sens) {
    if (!qk_normalised(s.mode) || s.vs_default.n == 0) continue;
    rows.push_back({.criterion = "a",
                    .passed = s.verdict == Comparison::Better,
                    .missing = !has_interval(s.vs_default),
                    .setting = s.mode + " at d_k " + std::to_string(s.d_k),
                    .estimate = s.vs_default});
    measured += (measured.empty() ? "" : "; ") + s.mode + " at d_k " + std::to_string(s.d_k) +
                ": " + format_interval(s.sensitivity, 3) +
                " nats against 1/sqrt(d_k)'s, difference " +
                describe(s.vs_default, kSensitivityMargin, false, "nats", 3);
  }
  for (const Sensitivity& s : sens)
    if (is_reference(s.mode))
      measured += "; 1/sqrt(d_k) at d_k " + std::to_string(s.d_k) + ": " +
                  format_interval(s.sensitivity, 3);
  measured += " (paired over " + std::to_string(seeds) + " seeds)";
  return judge("C9", rows, {}, measured, false,
               rows.empty() ? std::vector<std::string>{"a"} : std::vector<std::string>{});
}

// C12: runs whose attention collapsed spike or diverge more often, and the
// collapse comes first.
Verdict collapse_claim(const std::vector<FinalRow>& runs, int64_t eval_every) {
  int64_t collapsed = 0, collapsed_bad = 0, spread = 0, spread_bad = 0, both = 0, first = 0;
  for (const FinalRow& r : runs) {
    const bool bad = r.spikes > 0 || r.diverged;
    if (r.collapse_step >= 0) {
      ++collapsed, collapsed_bad += bad;
      if (r.first_spike_step >= 0) {
        ++both;
        // Entropy is seen at evaluations only: collapse counts as first when
        // it shows by the first evaluation after the spike.
        first += r.collapse_step <= r.first_spike_step + eval_every;
      }
    } else {
      ++spread, spread_bad += bad;
    }
  }
  if (collapsed == 0 || spread == 0)
    return judge("C12", {}, {},
                 std::to_string(collapsed) + " runs collapsed, " + std::to_string(spread) +
                     " did not (both kinds of run are needed)",
                 false, {"a", "b"});
  const Interval d = proportion_difference(collapsed_bad, collapsed, spread_bad, spread);
  const double share_first = both > 0 ? static_cast<double>(first) / both : kNaN;
  const std::string measured =
      "spikes or divergence in " + std::to_string(collapsed_bad) + " of " +
      std::to_string(collapsed) + " runs whose entropy fell below " +
      significant(kCollapsedEntropy) + ", against " + std::to_string(spread_bad) + " of " +
      std::to_string(spread) + " others: difference " + format_bounds(d) + "; collapse first in " +
      std::to_string(first) + " of " + std::to_string(both) + " runs with both";
  return judge("C12",
               {{.criterion = "a", .passed = d.lo > criterion("C12", "a").margin, .estimate = d},
                {.criterion = "b",
                 .passed = both > 0 && share_first > criterion("C12", "b").margin,
                 .estimate = {share_first, kNaN, kNaN, kNaN, both}}},
               {}, measured);
}

}  // namespace

std::vector<Verdict> lr_claims(const std::vector<FinalRow>& sweep) {
  if (sweep.empty()) return {};
  int64_t seeds = 0;
  for (const FinalRow& r : sweep) seeds = std::max(seeds, r.run.seed + 1);
  return {sensitivity_claim(lr_sensitivity(sweep), seeds), collapse_claim(sweep, 10)};
}

Section lr_section(const LrOptions& o, const std::vector<FinalRow>& sweep) {
  Section sec{.part = "lr"};
  if (sweep.empty()) return sec;
  sec.claims = lr_claims(sweep);
  std::ostringstream md;
  md << "## lr: learning-rate sensitivity\n\n"
     << "The `" << o.task.task << "` task, " << o.task.steps << " steps, every mode at d_k";
  for (int64_t d : o.d_ks) md << " " << d;
  md << ", learning rates";
  for (double lr : o.lrs) md << " " << significant(lr, 2);
  md << ", " << o.seeds
     << " seeds. LR sensitivity (Wortsman et al. 2023): per configuration and seed, the mean "
        "over the learning rates of the final loss (capped at the initial loss; a diverged "
        "run counts at its initial loss) minus the best of them; then over seeds, +- the 95% "
        "interval. `vs 1/sqrt(d_k)` is paired by seed (margin "
     << significant(kSensitivityMargin) << " nats).\n\n"
     << "| mode | d_k | sensitivity (nats) | vs 1/sqrt(d_k) | best lr | its loss |\n"
        "|---|---|---|---|---|---|\n";
  for (const Sensitivity& s : lr_sensitivity(sweep))
    md << "| " << s.mode << " | " << s.d_k << " | " << interval_text(s.sensitivity, 3) << " | "
       << (is_reference(s.mode) ? "(reference)"
                                : interval_text(s.vs_default, 3) + " " + lower_higher(s.verdict))
       << " | " << significant(s.best_lr, 2) << " | " << significant(s.best_loss) << " |\n";
  sec.markdown = md.str() + "\n";
  std::vector<CsvRow> rows;
  for (const FinalRow& f : sweep)
    rows.push_back({f.run.mode, f.run.d_k, f.lr, f.run.seed, csv_number(f.final_loss),
                    csv_number(f.max_logit), f.diverged, f.run.task, csv_number(f.initial_loss),
                    csv_number(f.min_entropy), f.spikes, f.collapse_step, f.first_spike_step});
  sec.csvs.push_back(
      {"lr_sweep.csv",
       {"mode", "d_k", "lr", "seed", "final_loss", "max_logit", "diverged", "task", "initial_loss",
        "min_entropy", "spikes", "collapse_step", "first_spike_step"},
       rows});
  std::vector<int64_t> d_ks;
  for (const FinalRow& r : sweep)
    if (std::find(d_ks.begin(), d_ks.end(), r.run.d_k) == d_ks.end()) d_ks.push_back(r.run.d_k);
  std::vector<std::string> modes;
  for (const FinalRow& r : sweep) modes.push_back(r.run.mode);
  modes = in_drawing_order(modes);
  const auto groups = mode_panels(modes);
  for (const auto& [name, field, label] :
       {std::tuple{"lr_sensitivity.svg", &capped_loss, "final loss (nats, capped at the initial)"},
        std::tuple{
            "lr_max_logit.svg",
            static_cast<double (*)(const FinalRow&)>([](const FinalRow& r) { return r.max_logit; }),
            "largest |scaled logit|"}}) {
    std::vector<plot::Figure> panels;
    for (int64_t d_k : d_ks)
      for (size_t g = 0; g < groups.size(); ++g) {
        plot::Figure f = figure("d_k = " + std::to_string(d_k) + panel_suffix(g, groups.size()),
                                "learning rate of AdamW (log scale)", true, label, true);
        for (const std::string& mode : groups[g]) {
          std::map<double, std::vector<double>> at;
          for (const FinalRow& r : sweep)
            if (r.run.mode == mode && r.run.d_k == d_k) at[r.lr].push_back(field(r));
          f.series.push_back(mean_series(mode_series(mode), at));
        }
        panels.push_back(f);
      }
    sec.plots.push_back(
        {name, plot::render_svg_grid(panels, 2, {.share_y = true, .legend_once = true}),
         std::string(label) + " against the learning rate per mode, log axes, one panel per d_k: "
                              "mean over seeds with its 95% interval."});
  }
  // A scatter: each run a dot (a NaN between points leaves each alone).
  int64_t most = 1;
  for (const FinalRow& r : sweep) most = std::max(most, r.spikes + 1);
  std::vector<plot::Figure> scatter;
  for (size_t g = 0; g < groups.size(); ++g) {
    plot::Figure f = figure("Entropy collapse and loss spikes" + panel_suffix(g, groups.size()),
                            "lowest normalised entropy H(p) / log n in the run", false,
                            "loss spikes + 1 (diverged runs at the top)", true);
    for (const std::string& mode : groups[g]) {
      plot::Series s = mode_series(mode, true);
      for (const FinalRow& r : sweep) {
        if (r.run.mode != mode) continue;
        s.x.insert(s.x.end(), {r.min_entropy, NAN});
        s.y.insert(s.y.end(), {r.diverged ? 2.0 * static_cast<double>(most)
                                          : static_cast<double>(r.spikes + 1),
                               NAN});
      }
      f.series.push_back(s);
    }
    scatter.push_back(f);
  }
  sec.plots.push_back(
      {"entropy_collapse.svg", plot::render_svg_grid(scatter, 2, {.legend_once = true}),
       "Each run of the lr part as a dot: the lowest attention entropy it reached (x) against "
       "its number of loss spikes plus one (y, log; diverged runs drawn at the top). Collapsed "
       "runs (x below " +
           significant(kCollapsedEntropy) + ") should spike more often (C12)."});
  return sec;
}

}  // namespace gradflow::study
