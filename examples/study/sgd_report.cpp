// The sgd part in the report: C13's finding, worded by its own numbers; the
// tables of the grid on the selection seeds and of the comparison; the
// figure of the grid (sgd_lr.svg), the CSV file (sgd_sweep.csv) and the
// section that holds them.
#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "examples/study/parts.h"
#include "examples/study/sgd.h"

namespace gradflow::study {

namespace {

// "0.012 [0.008, 0.019]": a geometric mean and its interval, from an
// interval of log10 values.
std::string ratio_text(const Interval& log10) {
  if (log10.n == 0) return "-";
  std::string out = significant(std::pow(10.0, log10.mean), 2);
  if (std::isfinite(log10.lo))
    out += " [" + significant(std::pow(10.0, log10.lo), 2) + ", " +
           significant(std::pow(10.0, log10.hi), 2) + "]";
  return out;
}

// One table row's figures over `runs`.
void table_cells(std::ostringstream& md, const std::vector<const FinalRow*>& runs) {
  std::vector<double> loss;
  for (const FinalRow* r : runs) loss.push_back(capped_loss(*r));
  md << interval_text(over_runs(runs, &accuracy), 3) << " | "
     << interval_text(interval_of_finite(loss), 3) << " | "
     << ratio_text(over_runs(runs, &log_ratio)) << " | "
     << interval_text(over_runs(runs, &clipped), 0, 100) << " | "
     << interval_text(over_runs(runs, &qk_share), 0, 100) << " | " << diverged(runs) << " of "
     << runs.size() << " |\n";
}

std::string seed_range(int64_t first, int64_t count) {
  return count == 1 ? std::to_string(first)
                    : std::to_string(first) + " to " + std::to_string(first + count - 1);
}

void sgd_tables(std::ostringstream& md, const SgdOptions& o, const std::vector<SgdRow>& rows,
                const std::vector<SgdBest>& best) {
  md << "**The grid, on the selection seeds** ("
     << seed_range(o.selection_first_seed, o.selection_seeds)
     << "), clipped. Per learning rate: the final held-out token accuracy and loss (capped at "
        "the initial loss; a diverged run counts at its initial loss), mean +- the 95% "
        "t-interval over seeds; the smallest W_Q / W_V gradient ratio among the attention "
        "layers over the last 10% of evaluations (geometric mean over seeds [95% interval]); "
        "the steps whose gradient the clip shortened and W_Q's and W_K's share of the squared "
        "gradient norm (averaged over the steps), in percent. Chosen lr, in bold: the lowest "
        "capped loss averaged over these seeds.\n\n"
     << "| d_k | mode | lr | accuracy | loss (nats) | W_Q/W_V grad ratio | clipped (%) | "
        "W_Q, W_K share (%) | diverged |\n|---|---|---|---|---|---|---|---|---|\n";
  for (int64_t d_k : o.d_ks)
    for (const std::string& mode : o.modes)
      for (double lr : o.lrs) {
        std::vector<const FinalRow*> runs;
        for (const SgdRow& r : rows)
          if (r.selection && r.final.run.d_k == d_k && r.final.run.mode == mode && r.final.lr == lr)
            runs.push_back(&r.final);
        if (runs.empty()) continue;
        const SgdBest* b = find_best(best, mode, d_k);
        const bool is_best = b && b->best_lr == lr;
        md << "| " << d_k << " | " << mode << " | " << (is_best ? "**" : "") << significant(lr, 2)
           << (is_best ? "** (chosen)" : "") << " | ";
        table_cells(md, runs);
      }
  md << "\n**The comparison, on the comparison seeds** (" << seed_range(0, o.seeds)
     << "): each compared arm at its chosen lr, clipped; at d_k " << kSgdLargeDk
     << " also not clipped (clip none) and at the common lr " << significant(kSgdCommonLr)
     << " (C13's criterion (a)).\n\n"
     << "| d_k | mode | lr | clip | accuracy | loss (nats) | W_Q/W_V grad ratio | clipped (%) | "
        "W_Q, W_K share (%) | diverged |\n|---|---|---|---|---|---|---|---|---|---|\n";
  for (int64_t d_k : o.d_ks)
    for (const std::string& mode : o.compared) {
      const SgdBest* b = find_best(best, mode, d_k);
      if (!b) continue;
      auto row = [&](double lr, const char* which, bool clipped) {
        const std::vector<const FinalRow*> runs = compared_runs(rows, mode, d_k, lr, clipped);
        if (runs.empty()) return;
        md << "| " << d_k << " | " << mode << " | " << significant(lr, 2) << " (" << which << ") | "
           << (clipped ? significant(o.clip) : "none") << " | ";
        table_cells(md, runs);
      };
      row(b->best_lr, "chosen", true);
      row(b->best_lr, "chosen", false);
      if (b->best_lr != kSgdCommonLr) row(kSgdCommonLr, "common", true);
    }
  md << "\n";
}

// The grid's figures per d_k, on the selection seeds: mean over seeds with
// its 95% interval of `value` against the learning rate.
std::vector<plot::Figure> grid_panels(const SgdOptions& o, const std::vector<SgdRow>& rows,
                                      const std::string& y, bool log_y, Value value) {
  const auto groups = mode_panels(in_drawing_order(o.modes));
  std::vector<plot::Figure> panels;
  for (int64_t d_k : o.d_ks)
    for (size_t g = 0; g < groups.size(); ++g) {
      plot::Figure f = figure("d_k = " + std::to_string(d_k) + panel_suffix(g, groups.size()),
                              "learning rate of SGD (log scale)", true, y, log_y);
      if (!log_y) f.y.min = 0, f.y.max = 1;
      for (const std::string& mode : groups[g]) {
        std::map<double, std::vector<double>> at;
        for (const SgdRow& r : rows)
          if (r.selection && r.final.run.mode == mode && r.final.run.d_k == d_k)
            at[r.final.lr].push_back(value(r.final));
        f.series.push_back(mean_series(mode_series(mode), at));
      }
      panels.push_back(f);
    }
  return panels;
}

}  // namespace

Section sgd_section(const SgdOptions& o, const std::vector<SgdRow>& rows) {
  Section sec{.part = "sgd"};
  if (rows.empty()) return sec;
  sec.claims = {sgd_claim(rows)};
  const C13Numbers c = c13_numbers(rows);
  const std::vector<SgdBest> best = sgd_best(rows);
  std::ostringstream md;
  md << "## sgd: the scale under plain SGD\n\n"
     << "The `" << o.task.task << "` task, " << o.task.steps
     << " steps, SGD with momentum 0.9 (no Nesterov, no weight decay), the gradient clipped "
        "at norm "
     << significant(o.clip)
     << " (but in the no-clip runs) and the learning rate warmed up over the first 5% of the "
        "steps; modes";
  for (const std::string& m : o.modes) md << " " << m;
  md << " at d_k";
  for (int64_t d : o.d_ks) md << " " << d;
  md << ", learning rates";
  for (double lr : o.lrs) md << " " << significant(lr, 2);
  md << ". Each (mode, d_k) chooses its learning rate on " << o.selection_seeds
     << " selection seeds; the arms";
  for (const std::string& m : o.compared) md << " " << m;
  md << " are compared at the chosen rates on " << o.seeds << " other seeds, paired by seed.\n\n";
  sgd_tables(md, o, rows, best);
  if (c.complete)
    md << "**Without the clip** (C13's numbers, none - 1/sqrt(d_k)): " << no_clip_text(c)
       << ". Clipped, for comparison: " << premise_text(c) << ".\n\n";
  sec.markdown = md.str();
  double selection_seconds = 0, comparison_seconds = 0;
  for (const SgdRow& r : rows)
    (r.selection ? selection_seconds : comparison_seconds) += r.final.seconds;
  if (selection_seconds + comparison_seconds > 0)
    sec.time_note = "Its runs took " + significant(selection_seconds, 3) +
                    " s of one thread in the selection and " + significant(comparison_seconds, 3) +
                    " s in the comparison.";
  std::vector<CsvRow> csv;
  for (const SgdRow& r : rows) {
    const FinalRow& f = r.final;
    csv.push_back({f.run.mode,
                   f.optimizer,
                   f.run.d_k,
                   f.lr,
                   f.run.seed,
                   csv_number(f.final_loss),
                   csv_number(f.max_logit),
                   f.diverged,
                   f.run.task,
                   csv_number(f.initial_loss),
                   csv_number(f.min_entropy),
                   f.spikes,
                   f.collapse_step,
                   f.first_spike_step,
                   r.selection ? "selection" : "comparison",
                   r.clip,
                   csv_number(f.final_accuracy),
                   csv_number(f.grad_ratio_qv),
                   csv_number(f.clipped_fraction),
                   csv_number(f.qk_grad_share)});
  }
  sec.csvs.push_back({"sgd_sweep.csv",
                      {"mode",
                       "optimizer",
                       "d_k",
                       "lr",
                       "seed",
                       "final_loss",
                       "max_logit",
                       "diverged",
                       "task",
                       "initial_loss",
                       "min_entropy",
                       "spikes",
                       "collapse_step",
                       "first_spike_step",
                       "seed_set",
                       "clip",
                       "accuracy",
                       "grad_ratio_qv",
                       "clipped_fraction",
                       "qk_grad_share"},
                      csv});
  std::vector<plot::Figure> panels =
      grid_panels(o, rows, "final loss (nats, capped at the initial)", true, &capped_loss);
  for (const auto& [y, value] : {std::pair<const char*, Value>{"steps clipped", &clipped},
                                 {"W_Q and W_K's share of |g|^2", &qk_share}})
    for (plot::Figure& f : grid_panels(o, rows, y, false, value)) panels.push_back(f);
  sec.plots.push_back(
      {"sgd_lr.svg",
       plot::render_svg_grid(panels, static_cast<int>(panels.size() / 3), {.legend_once = true}),
       "The sgd part on its selection seeds, clipped: per mode against SGD's learning rate (log "
       "axis), one column per d_k, mean over seeds with its 95% interval: the final loss "
       "(capped at the initial loss, log axis), the fraction of steps whose gradient the clip "
       "shortened, and W_Q's and W_K's share of the squared gradient norm (C13)."});
  return sec;
}

}  // namespace gradflow::study
