// The width part (--full): the best learning rate across width, standard
// parametrisation against muP (Yang et al. 2022). Two heads of d_k =
// d_model / 2 at each width, under three parametrisations, over a grid of
// learning rates on the reverse task; within a seed every run starts from
// the same weights (but muP's zero output layer) and sees the same batches.
// Claim judged here: C10 (the best learning rate transfers only under muP).
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "examples/study/claims.h"
#include "examples/study/parts.h"

namespace gradflow::study {

WidthOptions width_options(const Settings& settings) {
  WidthOptions o;
  if (settings.seeds > 0) o.seeds = settings.seeds;
  if (settings.steps > 0) o.steps = settings.steps;
  return o;
}

namespace {
// The parametrisations compared: each its arm and its rules.
struct WidthArm {
  std::string name, mode;
  Parametrization parametrization;
};
const std::vector<WidthArm>& width_arms() {
  static const std::vector<WidthArm> table = {
      {"sp_inv_sqrt_dk", kDefaultMode, Parametrization::Standard},
      {"sp_inv_dk", "inv_dk", Parametrization::Standard},
      {"mup", "inv_dk", Parametrization::MuP}};
  return table;
}
}  // namespace

const std::vector<std::string>& parametrizations() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const WidthArm& w : width_arms()) out.push_back(w.name);
    return out;
  }();
  return names;
}

std::vector<RunSpec> width_runs(const Settings& settings, const WidthOptions& o) {
  std::vector<RunSpec> runs;
  for (const WidthArm& p : width_arms())
    for (int64_t d_model : o.d_models)
      for (double lr : o.lrs)
        for (int64_t seed = 0; seed < o.seeds; ++seed) {
          RunSpec spec;
          // Two heads of d_k = d_model / 2, and d_ff = 2 d_model: every size
          // grows with the width, as muP's rules assume.
          spec.task = reverse_setup();
          spec.task.model.d_model = d_model, spec.task.model.heads = 2,
          spec.task.model.d_ff = 2 * d_model;
          spec.task.steps = o.steps, spec.task.lr = lr;
          spec.key = {"reverse", p.mode, d_model / 2, seed};
          spec.batch = o.batch;
          spec.parametrization = p.parametrization;
          spec.seed = settings.seed;
          runs.push_back(spec);
        }
  return runs;
}

std::vector<WidthRow> run_width(const Settings& settings, const WidthOptions& o) {
  const std::vector<RunSpec> runs = width_runs(settings, o);
  std::vector<RunOutput> outputs =
      train_all("width", runs, settings, settings.progress_for("width: width and muP", "run"));
  std::vector<WidthRow> out;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const RunSpec& spec = runs[i];
    // width_runs' order: parametrisation, then width, learning rate and seed.
    const size_t per_arm = o.d_models.size() * o.lrs.size() * static_cast<size_t>(o.seeds);
    out.push_back({width_arms()[i / per_arm].name, spec.task.model.d_model, outputs[i].final});
  }
  return out;
}

std::vector<BestLr> best_lr_by_width(const std::vector<WidthRow>& rows) {
  struct Cell {
    std::vector<double> loss, qk_init, qk;
    std::map<int64_t, double> by_seed;
  };
  std::map<std::pair<std::string, int64_t>, std::map<double, Cell>> cells;
  std::vector<std::pair<std::string, int64_t>> order;
  for (const WidthRow& w : rows) {
    std::pair<std::string, int64_t> key{w.parametrization, w.d_model};
    if (std::find(order.begin(), order.end(), key) == order.end()) order.push_back(key);
    Cell& c = cells[key][w.run.lr];
    c.loss.push_back(capped_loss(w.run));
    c.qk_init.push_back(w.run.qk_std_init);
    c.qk.push_back(w.run.qk_std);
    c.by_seed[w.run.run.seed] = capped_loss(w.run);
  }
  auto mean = [](const std::vector<double>& v) {
    double s = 0, n = 0;
    for (double x : v)
      if (std::isfinite(x)) s += x, ++n;
    return n ? s / n : kNaN;
  };
  std::vector<BestLr> out;
  for (const auto& key : order) {
    BestLr b;
    b.parametrization = key.first, b.d_model = key.second;
    b.best_loss = std::numeric_limits<double>::infinity();
    std::map<int64_t, std::pair<double, double>> seed_best;  // seed -> (loss, lr)
    for (const auto& [lr, c] : cells[key]) {
      if (mean(c.loss) < b.best_loss) {
        b.best_loss = mean(c.loss), b.best_lr = lr;
        b.qk_std_init = mean(c.qk_init), b.qk_std = mean(c.qk);
      }
      for (const auto& [seed, loss] : c.by_seed) {
        auto [it, fresh] = seed_best.try_emplace(seed, loss, lr);
        if (!fresh && loss < it->second.first) it->second = {loss, lr};
      }
    }
    for (const auto& [seed, best] : seed_best) b.per_seed.push_back(best.second);
    out.push_back(b);
  }
  return out;
}

int best_lr_spread(const std::vector<BestLr>& best, const std::string& p,
                   const std::vector<double>& grid) {
  int lo = static_cast<int>(grid.size()), hi = -1;
  for (const BestLr& b : best) {
    if (b.parametrization != p) continue;
    const int at = static_cast<int>(std::find(grid.begin(), grid.end(), b.best_lr) - grid.begin());
    lo = std::min(lo, at), hi = std::max(hi, at);
  }
  return hi < 0 ? 0 : hi - lo;
}

double log_log_slope(const std::vector<double>& x, const std::vector<double>& y) {
  double sx = 0, sy = 0, sxx = 0, sxy = 0, n = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!(x[i] > 0) || !(y[i] > 0)) continue;
    const double a = std::log(x[i]), b = std::log(y[i]);
    sx += a, sy += b, sxx += a * a, sxy += a * b, ++n;
  }
  const double den = n * sxx - sx * sx;
  return n >= 2 && den > 0 ? (n * sxy - sx * sy) / den : kNaN;
}

// C10: the best LR moves with width under the standard parametrisation and
// stays (within one grid step) under muP.
Verdict width_claim(const std::vector<WidthRow>& rows) {
  std::vector<double> grid;
  for (const WidthRow& w : rows)
    if (std::find(grid.begin(), grid.end(), w.run.lr) == grid.end()) grid.push_back(w.run.lr);
  std::sort(grid.begin(), grid.end());
  const std::vector<BestLr> best = best_lr_by_width(rows);
  std::string measured;
  for (const BestLr& b : best)
    measured += (measured.empty() ? "" : "; ") + b.parametrization + " d_model " +
                std::to_string(b.d_model) + ": " + significant(b.best_lr, 2);
  std::set<int64_t> seeds;
  for (const WidthRow& w : rows) seeds.insert(w.run.run.seed);
  if (seeds.size() < 2)
    return judge("C10", {}, {},
                 measured +
                     " (the best learning rate of one seed is one noisy run's; two or "
                     "more seeds are needed)",
                 false, {"a", "b"});
  const int mup = best_lr_spread(best, "mup", grid);
  const int sp = std::max(best_lr_spread(best, "sp_inv_sqrt_dk", grid),
                          best_lr_spread(best, "sp_inv_dk", grid));
  auto steps = [](int n) { return Interval{static_cast<double>(n), kNaN, kNaN, kNaN, 0}; };
  return judge("C10",
               {{.criterion = "a",
                 .passed = mup < criterion("C10", "a").margin,
                 .setting = "muP",
                 .estimate = steps(mup)},
                {.criterion = "b",
                 .passed = sp > criterion("C10", "b").margin,
                 .setting = "standard",
                 .estimate = steps(sp)}},
               {}, measured + " (grid steps of a half decade)");
}

Section width_section(const WidthOptions& o, const std::vector<WidthRow>& width) {
  Section sec{.part = "width"};
  if (width.empty()) return sec;
  sec.claims = {width_claim(width)};
  std::ostringstream md;
  md << "## width: width and muP\n\n"
     << "The reverse task at d_model";
  for (int64_t d : o.d_models) md << " " << d;
  md << " (2 heads of d_k = d_model / 2, d_ff = 2 d_model), " << o.steps << " steps, batch "
     << o.batch << ", learning rates";
  for (double lr : o.lrs) md << " " << significant(lr, 2);
  md << ", " << o.seeds
     << " seeds, under three parametrisations: the standard one with 1/sqrt(d_k), the "
        "standard one with 1/d_k, and muP (1/d_k; hidden and output matrices learn at lr x "
     << kMuPBaseWidth
     << " / d_model; the output layer starts at zero; docs/study.md). The best learning rate "
        "is the one with the lowest capped final loss averaged over seeds; the std of q.k "
        "is measured on a held-out batch at that learning rate.\n\n"
     << "| parametrisation | d_model | best lr | per seed | its loss | std q.k at init | "
        "trained |\n|---|---|---|---|---|---|---|\n";
  const std::vector<BestLr> best = best_lr_by_width(width);
  for (const BestLr& b : best) {
    std::string seeds;
    for (double lr : b.per_seed) seeds += (seeds.empty() ? "" : ", ") + significant(lr, 2);
    md << "| " << b.parametrization << " | " << b.d_model << " | " << significant(b.best_lr, 2)
       << " | " << seeds << " | " << significant(b.best_loss) << " | " << significant(b.qk_std_init)
       << " | " << significant(b.qk_std) << " |\n";
  }
  md << "\nSlopes of log std(q.k) against log d_k:";
  for (const std::string& p : parametrizations()) {
    std::vector<double> d_k, init, trained;
    for (const BestLr& b : best)
      if (b.parametrization == p)
        d_k.push_back(b.d_model / 2.0), init.push_back(b.qk_std_init), trained.push_back(b.qk_std);
    md << " " << p << " " << significant(log_log_slope(d_k, init), 2) << " at initialisation, "
       << significant(log_log_slope(d_k, trained), 2) << " trained;";
  }
  md << " (independent q and k give 1/2; q and k aligned by training give 1).\n\n";
  sec.markdown = md.str();
  std::vector<CsvRow> rows;
  for (const WidthRow& w : width)
    rows.push_back({w.parametrization, w.d_model, w.run.lr, w.run.run.seed,
                    csv_number(w.run.final_loss), csv_number(w.run.qk_std), w.run.run.d_k,
                    csv_number(w.run.qk_std_init), csv_number(w.run.initial_loss), w.run.diverged});
  sec.csvs.push_back({"width_sweep.csv",
                      {"parametrization", "d_model", "lr", "seed", "final_loss", "qk_std", "d_k",
                       "qk_std_init", "initial_loss", "diverged"},
                      rows});
  std::vector<plot::Figure> panels;
  for (const std::string& p : parametrizations()) {
    plot::Figure f =
        figure(p, "learning rate (log scale)", true, "final loss (nats, capped)", true);
    std::map<int64_t, std::map<double, std::vector<double>>> at;
    for (const WidthRow& w : width)
      if (w.parametrization == p) at[w.d_model][w.run.lr].push_back(capped_loss(w.run));
    for (const auto& [d_model, points] : at)
      f.series.push_back(mean_series({.label = "d_model " + std::to_string(d_model)}, points));
    panels.push_back(f);
  }
  sec.plots.push_back(
      {"width_lr.svg", plot::render_svg_grid(panels, 3, {.share_y = true, .legend_once = true}),
       "Final loss against the learning rate at each width, one panel per parametrisation "
       "(the width part), log axes: under muP the minimum should stay put as the width grows."});
  plot::Figure lr =
      figure("Best learning rate", "d_model (log scale)", true, "best learning rate", true);
  plot::Figure qk = figure("Std of q.k", "d_k (log scale)", true, "std of the unscaled q.k", true);
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
  sec.plots.push_back(
      {"width_best_lr.svg", plot::render_svg_grid({lr, qk}, 2, {.legend_once = false}),
       "Left: the learning rate with the lowest final loss (averaged over seeds) against "
       "d_model. Right: the std of the unscaled q.k against d_k = d_model / 2, at "
       "initialisation (dashed) and after training at the best learning rate (solid): a "
       "slope of 1/2 means independent q and k, 1 means aligned (log axes)."});
  return sec;
}

}  // namespace gradflow::study
