// The qk-rate part's share of the report (qk_rate.h): what ran, the
// deciding numbers, every cell's measures, qk_rate.csv and qk_rate.svg.
#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "examples/study/parts.h"
#include "examples/study/qk_rate.h"
#include "examples/study/stats/inference.h"

namespace gradflow::study {

namespace {

std::string m_text(int power) {
  return power >= 0 ? std::to_string(1 << (2 * power)) : "1/" + std::to_string(1 << (-2 * power));
}

std::string cell_name(const QkRateRow& r) {
  return r.arm == "none" ? "none, sigma0 " + significant(r.sigma0, 2) + ", m " + m_text(r.power)
                         : r.arm;
}

double median_of(std::vector<double> xs) {
  xs.erase(std::remove_if(xs.begin(), xs.end(), [](double x) { return !std::isfinite(x); }),
           xs.end());
  if (xs.empty()) return kNaN;
  std::sort(xs.begin(), xs.end());
  const size_t h = xs.size() / 2;
  return xs.size() % 2 ? xs[h] : (xs[h - 1] + xs[h]) / 2;
}

// Every cell's measures, one table row each.
std::string cell_table(const std::vector<QkRateRow>& rows) {
  std::map<std::tuple<std::string, int64_t, std::string>, std::vector<const QkRateRow*>> cells;
  std::vector<std::tuple<std::string, int64_t, std::string>> order;
  for (const QkRateRow& r : rows) {
    const auto key = std::make_tuple(r.task, r.d_model, cell_name(r));
    if (!cells.count(key)) order.push_back(key);
    cells[key].push_back(&r);
  }
  std::ostringstream md;
  md << "| task | d_k | cell | seeds | loss AUC | solved | steps to solve (KM median) | logit "
        "step | q.k std start, end | weight on the key |\n|---|---|---|---|---|---|---|---|---|"
        "---|\n";
  for (const auto& key : order) {
    const std::vector<const QkRateRow*>& runs = cells[key];
    std::vector<double> auc, step, start, end, weight;
    std::vector<CensoredTime> times;
    int64_t solved = 0;
    for (const QkRateRow* r : runs) {
      auc.push_back(r->run.loss_auc_budget), step.push_back(r->logit_step);
      start.push_back(r->run.qk_std_init), end.push_back(r->run.qk_std);
      weight.push_back(r->correct_key_weight);
      solved += r->solved;
      times.push_back(
          {r->solved ? r->run.steps_to_99 : static_cast<double>(r->run.steps), !r->solved});
    }
    const bool recall = std::get<0>(key) == "recall";
    std::string km = "-";
    if (recall) {
      const KaplanMeierMedian m = kaplan_meier_median(times);
      km = m.reached ? significant(m.median, 3) : "not reached";
    }
    md << "| " << std::get<0>(key) << " | " << std::get<1>(key) / 4 << " | " << std::get<2>(key)
       << " | " << runs.size() << " | " << significant(median_of(auc), 3) << " | "
       << (recall ? std::to_string(solved) + " of " + std::to_string(runs.size()) : "-") << " | "
       << km << " | " << significant(median_of(step), 2) << " | "
       << significant(median_of(start), 2) << ", " << significant(median_of(end), 2) << " | "
       << (recall ? significant(median_of(weight), 2) : "-") << " |\n";
  }
  return md.str();
}

CsvFile runs_csv(const std::vector<QkRateRow>& rows) {
  std::vector<CsvRow> out;
  for (const QkRateRow& r : rows)
    out.push_back({r.task, r.d_model, r.d_k, r.arm, csv_number(r.sigma0),
                   csv_number(std::pow(4.0, r.power)), r.seed, csv_number(r.run.loss_auc_budget),
                   r.solved, csv_number(r.run.steps_to_99), r.run.steps_run,
                   csv_number(r.logit_step), csv_number(r.run.qk_std_init),
                   csv_number(r.run.qk_std), csv_number(r.correct_key_weight),
                   csv_number(r.run.final_loss), r.run.diverged});
  return {"qk_rate.csv",
          {"task", "d_model", "d_k", "arm", "sigma0", "qk_lr_multiplier", "seed", "loss_auc_budget",
           "solved", "steps_to_99", "steps_run", "logit_step", "qk_std_init", "qk_std",
           "correct_key_weight", "final_loss", "diverged"},
          out};
}

// Left: m* against d_k, the fitted line and the two predictions. Right:
// recall's share solved against the measured logit step, a line per width.
std::string qk_rate_figure(const std::vector<QkRateRow>& rows, uint64_t seed) {
  plot::Figure best = figure("Best Q/K learning-rate multiplier", "d_k (log scale)", true,
                             "m*, the best multiplier (log scale)", true);
  std::vector<std::string> tasks;
  for (const QkRateRow& r : rows)
    if (std::find(tasks.begin(), tasks.end(), r.task) == tasks.end()) tasks.push_back(r.task);
  // Each task's measured m* (markers) and fitted line (dashed, a lighter
  // shade of its colour); the variance argument's flat line (the panel's
  // reference) and muP's d_k^(-1/4) through the first task's mean.
  const std::map<std::string, std::pair<std::string, std::string>> colours = {
      {"recall", {"#D55E00", "#E69F00"}}, {"charlm", {"#0072B2", "#56B4E9"}}};
  for (const std::string& task : tasks) {
    const AlphaFit fit = fit_alpha(rows, task, 0.95, seed);
    if (fit.d_ks.empty()) continue;
    const auto colour =
        colours.count(task) ? colours.at(task) : std::pair<std::string, std::string>{"", ""};
    plot::Series s{.label = task + " m*", .markers = true, .color = colour.first};
    plot::Series line{.label = task + " fit, alpha " + significant(fit.alpha.mean, 2),
                      .dashed = true,
                      .color = colour.second};
    double mean_x = 0, mean_y = 0;
    for (size_t i = 0; i < fit.d_ks.size(); ++i) {
      s.x.push_back(fit.d_ks[i]), s.y.push_back(std::pow(4.0, fit.best_powers[i]));
      mean_x += std::log(fit.d_ks[i]) / static_cast<double>(fit.d_ks.size());
      mean_y += fit.best_powers[i] * std::log(4.0) / static_cast<double>(fit.d_ks.size());
    }
    auto through = [&](double alpha, plot::Series p) {
      for (double d : {fit.d_ks.front(), fit.d_ks.back()})
        p.x.push_back(d), p.y.push_back(std::exp(mean_y + alpha * (std::log(d) - mean_x)));
      return p;
    };
    best.x.ticks.insert(best.x.ticks.end(), fit.d_ks.begin(), fit.d_ks.end());
    best.series.push_back(s);
    best.series.push_back(through(fit.alpha.mean, line));
    if (task == tasks.front()) {
      best.series.push_back(
          through(0.0, plot::Series{.label = "variance argument (alpha 0)", .reference = true}));
      best.series.push_back(through(
          -0.25, plot::Series{.label = "muP (alpha -1/4)", .dashed = true, .color = "#009E73"}));
    }
  }
  plot::Figure fail =
      figure("Recall: share solved against the logit step", "measured logit step (log scale)", true,
             "share of runs solved", false);
  std::map<int64_t, std::map<std::pair<double, int>, std::vector<const QkRateRow*>>> by_width;
  for (const QkRateRow& r : rows)
    if (r.task == "recall" && r.arm == "none")
      by_width[r.d_model][{r.sigma0, r.power}].push_back(&r);
  for (const auto& [d_model, cells] : by_width) {
    std::vector<std::pair<double, double>> points;
    for (const auto& [cell, runs] : cells) {
      std::vector<double> steps;
      double solved = 0;
      for (const QkRateRow* r : runs) steps.push_back(r->logit_step), solved += r->solved;
      points.push_back({median_of(steps), solved / static_cast<double>(runs.size())});
    }
    std::sort(points.begin(), points.end());
    plot::Series s{.label = "d_k " + std::to_string(d_model / 4), .markers = true};
    for (const auto& [x, y] : points) s.x.push_back(x), s.y.push_back(y);
    fail.series.push_back(s);
  }
  return plot::render_svg_grid({best, fail}, 2, {.legend_once = false});
}

}  // namespace

Section qk_rate_section(const QkRateOptions& o, const std::vector<QkRateRow>& rows, uint64_t seed) {
  Section sec{.part = "qk-rate"};
  if (rows.empty()) return sec;
  sec.claims = {qk_rate_alpha_claim(rows, seed), qk_rate_muP_claim(rows, seed),
                qk_rate_boundary_claim(rows, seed)};
  std::ostringstream md;
  md << "## qk-rate: the Q/K learning rate across d_k\n\n"
     << "A 2-layer decoder with 4 heads of d_k = d_model / 4 and d_ff = 2 d_model, at d_model";
  for (int64_t d : o.d_models) md << " " << d;
  md << ", on";
  for (const std::string& t : o.tasks) md << " " << t;
  md << " (" << o.recall_steps << " steps on recall, stopped when solved; " << o.charlm_steps
     << " on charlm; batch " << o.batch << "). Unscaled attention with its q.k started at std "
     << "sigma0 (W_Q and W_K scaled at the start, layer by layer) and W_Q, W_K learning at m "
     << "times the rest's rate, m = 4^" << o.powers.front() << " to 4^" << o.powers.back()
     << "; the references as built at m = 1. Seeds: " << o.seeds << " for sigma0 = 1's grid, "
     << o.other_seeds << " for the other starts and the references; from d_model "
     << o.few_seeds_from << " up only sigma0 = 1's grid and the first reference, on " << o.few_seeds
     << " seeds "
     << "(docs/study.md says why). m* is the vertex of the parabola "
     << "through the lowest mean loss AUC and its neighbours; alpha the slope of log m* "
     << "against log d_k, with a percentile bootstrap over seeds.\n\n"
     << cell_table(rows) << "\n";
  sec.markdown = md.str();
  const int64_t top = *std::max_element(o.d_models.begin(), o.d_models.end());
  const int64_t top_seeds = top >= o.few_seeds_from ? o.few_seeds : o.seeds;
  sec.cannot_separate = {
      "**The Q/K rate and the rest of the model's (qk-rate).** One learning rate serves the "
      "whole model at every width, so m* carries what a wider model's other weights ask of "
      "the rate (under Adam, muP scales theirs as 1/fan_in) as well as what W_Q and W_K ask "
      "of it: alpha measures the two together.",
      "**Few widths, few seeds at the top (qk-rate).** alpha is a slope through " +
          std::to_string(o.d_models.size()) +
          " widths, its bootstrap resampling each width's own seeds, " + std::to_string(top_seeds) +
          " at d_model " + std::to_string(top) +
          ". Over so few seeds a percentile bootstrap's interval tends to run narrow; another "
          "`--seed` shows how far alpha moves.",
      "**Small and short (qk-rate).** Two layers, " + std::to_string(o.recall_steps) +
          " steps on recall and " + std::to_string(o.charlm_steps) +
          " on charlm: a rate that only pays over long training does not show."};
  // The terminal's line quotes the verdicts' own rows of criteria.csv, not a second bootstrap:
  // alpha is C28's (a) per task, the boundary ratio C30's (a), judged as its log.
  auto bracketed = [](const Interval& i, bool log) {
    auto text = [log](double v) { return significant(log ? std::exp(v) : v, 3); };
    return text(i.mean) + " [" + text(i.lo) + ", " + text(i.hi) + "]";
  };
  std::string alphas, boundary;
  for (const Verdict& v : sec.claims)
    for (const CriterionResult& r : v.results) {
      if (r.criterion != "a") continue;
      if (v.id == "C28")
        alphas += (alphas.empty() ? " " : ", ") + r.task + " " + bracketed(r.estimate, false);
      if (v.id == "C30") boundary = bracketed(r.estimate, true);
    }
  sec.terminal_summary = "qk-rate: alpha in m* ~ d_k^alpha, 90% interval:" + alphas;
  if (!boundary.empty())
    sec.terminal_summary += "; recall's failure boundary, largest over smallest: " + boundary;
  sec.terminal_summary += " (report.md has the rest)";
  sec.csvs.push_back(runs_csv(rows));
  sec.plots.push_back(
      {"qk_rate.svg", qk_rate_figure(rows, seed),
       "Left: the best W_Q/W_K learning-rate multiplier m* at sigma0 = 1 against d_k (log "
       "axes), each task's fitted line dashed, the variance argument's prediction (flat) and "
       "muP's (d_k^(-1/4)) as references. Right: recall's share of runs solved per cell "
       "against its measured logit step, a line per d_k: if the step is what breaks training, "
       "the lines fall at the same place."});
  return sec;
}

}  // namespace gradflow::study
