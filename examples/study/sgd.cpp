// The sgd part: the attention scale under plain SGD with momentum. Every
// other training part uses AdamW, whose step does not depend on the
// gradient's size; the textbook story ("without 1/sqrt(d_k) the softmax
// saturates, the gradient to W_Q and W_K vanishes, so the layer cannot
// learn") is about a step that is as large as its gradient, which is SGD's.
// Three arms (none, inv_sqrt_dk, inv_dk) at d_k 16 and 256 on the reverse
// task, over a small grid of learning rates, each arm judged at its own best
// learning rate. Within a seed every run starts from the same weights and
// sees the same batches (train_one's seeds depend on neither the lr, the
// mode nor the optimiser), so comparisons are paired by seed.
//
// Claim judged here: C13.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>
#include <tuple>

#include "examples/study/claims.h"
#include "examples/study/parts.h"

namespace gradflow::study {

TaskSetup sgd_task() {
  TaskSetup t = reverse_setup();
  t.steps = 150;
  return t;
}

SgdOptions sgd_options(const Settings& settings) {
  SgdOptions o;
  o.seeds = settings.seeds > 0 ? settings.seeds : settings.full ? 10 : 3;
  if (settings.steps > 0) o.task.steps = settings.steps;
  return o;
}

std::vector<RunSpec> sgd_runs(const Settings& settings, const SgdOptions& o) {
  return grid_runs(settings, o.task, o.d_ks, o.modes, o.lrs, o.seeds, "sgd");
}

std::vector<FinalRow> run_sgd(const Settings& settings, const SgdOptions& o) {
  std::vector<FinalRow> out;
  for (RunOutput& r : train_all("sgd", sgd_runs(settings, o), settings,
                                settings.progress_for("sgd: plain SGD", "run")))
    out.push_back(r.final);
  return out;
}

std::vector<SgdBest> sgd_best(const std::vector<FinalRow>& sweep) {
  // (mode, d_k) -> lr -> runs, in the order they came.
  std::map<std::pair<std::string, int64_t>, std::map<double, std::vector<const FinalRow*>>> at;
  std::vector<std::pair<std::string, int64_t>> order;
  for (const FinalRow& r : sweep) {
    std::pair<std::string, int64_t> key{r.run.mode, r.run.d_k};
    if (std::find(order.begin(), order.end(), key) == order.end()) order.push_back(key);
    at[key][r.lr].push_back(&r);
  }
  std::vector<SgdBest> out;
  for (const auto& [mode, d_k] : order) {
    SgdBest b{mode, d_k, 0, std::numeric_limits<double>::infinity(), {}};
    for (const auto& [lr, runs] : at[{mode, d_k}]) {
      double mean = 0;
      for (const FinalRow* r : runs) mean += capped_loss(*r) / static_cast<double>(runs.size());
      if (mean < b.best_loss) b.best_loss = mean, b.best_lr = lr, b.runs = runs;
    }
    std::sort(b.runs.begin(), b.runs.end(),
              [](const FinalRow* x, const FinalRow* y) { return x->run.seed < y->run.seed; });
    out.push_back(b);
  }
  return out;
}

namespace {

const SgdBest* find_best(const std::vector<SgdBest>& best, const std::string& mode, int64_t d_k) {
  for (const SgdBest& b : best)
    if (b.mode == mode && b.d_k == d_k) return &b;
  return nullptr;
}

// a - b at each one's best learning rate, paired by seed over the seeds
// where both values are finite; n = 0 when none are.
Interval paired_at_best(const SgdBest& a, const SgdBest& b, double (*value)(const FinalRow&)) {
  std::vector<double> x, y;
  for (const FinalRow* ra : a.runs)
    for (const FinalRow* rb : b.runs)
      if (ra->run.seed == rb->run.seed && std::isfinite(value(*ra)) && std::isfinite(value(*rb)))
        x.push_back(value(*ra)), y.push_back(value(*rb));
  return x.empty() ? no_interval() : paired_difference(x, y);
}

// log10 of the W_Q / W_V gradient ratio: it spreads over decades (NaN when
// not positive).
double log_ratio(const FinalRow& r) {
  return r.grad_ratio_qv > 0 ? std::log10(r.grad_ratio_qv) : kNaN;
}

double final_accuracy(const FinalRow& r) { return r.final_accuracy; }

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

}  // namespace

Verdict sgd_claim(const std::vector<FinalRow>& sweep) {
  Verdict v = verdict_for("C13");
  const std::vector<SgdBest> best = sgd_best(sweep);
  const SgdBest *none_256 = find_best(best, "none", 256),
                *ref_256 = find_best(best, kDefaultMode, 256),
                *none_16 = find_best(best, "none", 16), *ref_16 = find_best(best, kDefaultMode, 16);
  if (!none_256 || !ref_256 || !none_16 || !ref_16) {
    v.verdict = "unclear";
    v.measured = "the sweep lacks none or inv_sqrt_dk at d_k 16 or 256";
    v.reason = "both arms at both d_k are needed";
    return v;
  }
  const Interval ratio = paired_at_best(*none_256, *ref_256, &log_ratio);
  const Interval gap_256 = paired_at_best(*none_256, *ref_256, &capped_loss);
  const Interval gap_16 = paired_at_best(*none_16, *ref_16, &capped_loss);
  if (!has_interval(ratio) || !has_interval(gap_256) || !has_interval(gap_16)) {
    v.verdict = "unclear";
    v.measured = "paired seeds per comparison: " + std::to_string(ratio.n) + ", " +
                 std::to_string(gap_256.n) + ", " + std::to_string(gap_16.n);
    v.reason =
        "each comparison needs an interval, so two or more seeds paired at the best "
        "learning rates";
    return v;
  }
  const bool lower_ratio = ratio.n > 0 && ratio.hi < 0;
  const bool worse = gap_256.n > 0 && gap_256.lo > kSgdGapMargin;
  const bool grows = gap_256.n > 0 && gap_16.n > 0 && gap_16.mean < gap_256.mean;
  auto at_best = [](const SgdBest& b) {
    return b.mode + " at lr " + significant(b.best_lr, 2) + " (d_k " + std::to_string(b.d_k) +
           ", capped loss " + significant(b.best_loss) + ")";
  };
  v.measured = "best learning rates: " + at_best(*none_256) + ", " + at_best(*ref_256) + ", " +
               at_best(*none_16) + ", " + at_best(*ref_16) +
               "; at d_k 256, log10 of the W_Q/W_V gradient ratio none - 1/sqrt(d_k) " +
               format_bounds(ratio) + "; capped loss none - 1/sqrt(d_k) " + format_bounds(gap_256) +
               " nats at d_k 256, " + format_bounds(gap_16) +
               " nats at d_k 16 (each paired by seed)";
  v.verdict = verdict_of(lower_ratio + worse + grows, 3);
  v.reason = std::string(
                 "(a) at d_k 256 none's W_Q/W_V gradient ratio lower (95% interval of "
                 "the log10 difference below 0): ") +
             yes_no(lower_ratio) + "; (b) at d_k 256 none's best capped loss higher by more than " +
             significant(kSgdGapMargin) + " nats (whole 95% interval above it): " + yes_no(worse) +
             "; (c) the gap smaller at d_k 16 than at 256 (means): " + yes_no(grows);
  return v;
}

Section sgd_section(const SgdOptions& o, const std::vector<FinalRow>& sweep) {
  Section sec{.part = "sgd"};
  if (sweep.empty()) return sec;
  sec.claims = {sgd_claim(sweep)};
  const Verdict& c = sec.claims.front();
  sec.findings.push_back(
      {std::string("Under plain SGD, where a step is as large as its gradient, the textbook "
                   "story ") +
           (c.verdict == "holds"           ? "holds"
            : c.verdict == "partly holds"  ? "holds in part"
            : c.verdict == "does not hold" ? "does not hold"
                                           : "is unclear"),
       "C13: " + c.measured + ". " + c.reason + ".", "sgd_lr.svg"});
  std::ostringstream md;
  md << "## sgd: the scale under plain SGD\n\n"
     << "The `" << o.task.task << "` task, " << o.task.steps
     << " steps, SGD with momentum 0.9 (no Nesterov, no weight decay), the gradient clipped "
        "at norm 1 and the learning rate warmed up over the first 5% of the steps; modes";
  for (const std::string& m : o.modes) md << " " << m;
  md << " at d_k";
  for (int64_t d : o.d_ks) md << " " << d;
  md << ", learning rates";
  for (double lr : o.lrs) md << " " << significant(lr, 2);
  md << ", " << o.seeds
     << " seeds. Per learning rate: the final held-out token accuracy and loss (capped at the "
        "initial loss; a diverged run counts at its initial loss), mean +- the 95% t-interval "
        "over seeds, and the smallest W_Q / W_V gradient ratio among the attention layers "
        "over the last 10% of evaluations (geometric mean over seeds [95% interval]). "
        "Best lr: the lowest capped loss averaged over seeds.\n\n"
     << "| d_k | mode | lr | accuracy | loss (nats) | W_Q/W_V grad ratio | diverged |\n"
        "|---|---|---|---|---|---|---|\n";
  const std::vector<SgdBest> best = sgd_best(sweep);
  for (int64_t d_k : o.d_ks)
    for (const std::string& mode : o.modes)
      for (double lr : o.lrs) {
        std::vector<double> accuracy, loss, ratio;
        int64_t diverged = 0, runs = 0;
        for (const FinalRow& r : sweep)
          if (r.run.d_k == d_k && r.run.mode == mode && r.lr == lr) {
            ++runs, diverged += r.diverged;
            accuracy.push_back(final_accuracy(r)), loss.push_back(capped_loss(r));
            ratio.push_back(log_ratio(r));
          }
        if (runs == 0) continue;
        const SgdBest* b = find_best(best, mode, d_k);
        const bool is_best = b && b->best_lr == lr;
        md << "| " << d_k << " | " << mode << " | " << (is_best ? "**" : "") << significant(lr, 2)
           << (is_best ? "** (best)" : "") << " | "
           << interval_text(interval_of_finite(accuracy), 3) << " | "
           << interval_text(interval_of_finite(loss), 3) << " | "
           << ratio_text(interval_of_finite(ratio)) << " | " << diverged << " of " << runs
           << " |\n";
      }
  md << "\n";
  sec.markdown = md.str();
  std::vector<CsvRow> rows;
  for (const FinalRow& f : sweep)
    rows.push_back({f.run.mode, f.optimizer, f.run.d_k, f.lr, f.run.seed, csv_number(f.final_loss),
                    csv_number(f.max_logit), f.diverged, f.run.task, csv_number(f.initial_loss),
                    csv_number(f.min_entropy), f.spikes, f.collapse_step, f.first_spike_step});
  sec.csvs.push_back(
      {"sgd_sweep.csv",
       {"mode", "optimizer", "d_k", "lr", "seed", "final_loss", "max_logit", "diverged", "task",
        "initial_loss", "min_entropy", "spikes", "collapse_step", "first_spike_step"},
       rows});
  std::vector<std::string> modes;
  for (const std::string& mode : study_modes())
    if (std::find(o.modes.begin(), o.modes.end(), mode) != o.modes.end()) modes.push_back(mode);
  const auto groups = mode_panels(modes);
  std::vector<plot::Figure> panels;
  for (int64_t d_k : o.d_ks)
    for (size_t g = 0; g < groups.size(); ++g) {
      plot::Figure f = figure("d_k = " + std::to_string(d_k) + panel_suffix(g, groups.size()),
                              "learning rate of SGD (log scale)", true,
                              "final loss (nats, capped at the initial)", true);
      for (const std::string& mode : groups[g]) {
        std::map<double, std::vector<double>> at;
        for (const FinalRow& r : sweep)
          if (r.run.mode == mode && r.run.d_k == d_k) at[r.lr].push_back(capped_loss(r));
        f.series.push_back(mean_series(mode_series(mode), at));
      }
      panels.push_back(f);
    }
  sec.plots.push_back(
      {"sgd_lr.svg", plot::render_svg_grid(panels, 2, {.share_y = true, .legend_once = true}),
       "The sgd part: final loss (capped at the initial loss) against SGD's learning rate per "
       "mode, log axes, one panel per d_k: mean over seeds with its 95% interval (C13)."});
  return sec;
}

}  // namespace gradflow::study
