// The init part: attention at initialisation, for each mode, d_k and number
// of keys, as estimates over many independent draws (a mean and its
// standard error), never a single draw. Two experiments:
//
//   independent q and k  the seeds' setting (C1 to C4, C6): init_qk.cpp
//   an initialised layer through a freshly initialised attention layer on
//                        N(0, 1) input (d_model 64, one head of size d_k),
//                        where the projections shrink q and k (PyTorch's
//                        default Linear init gives them variance 1/3, so q.k
//                        has variance d_k / 9): its own softmax and the
//                        gradients reaching the scores, W_Q, W_K, W_V (C5)
//
// This file holds the part (its runs, its CSV file, its finding, its
// section) and the pieces both experiments share; init_layer.cpp holds the
// second experiment with C5, its table and its figure.
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "examples/study/claims.h"
#include "examples/study/parts.h"

namespace gradflow::study {

InitOptions init_options(const Settings& settings) {
  InitOptions o;
  if (settings.full) o.layer_rows = 8192;
  return o;
}

// A generator for one (part, mode, d_k, n_keys, draw), independent of the
// order in which threads reach it.
Generator init_generator(uint64_t seed, uint64_t part, uint64_t mode, int64_t d_k, int64_t n_keys,
                         int64_t draw) {
  uint64_t h = seed;
  for (uint64_t v : {part, mode, static_cast<uint64_t>(d_k), static_cast<uint64_t>(n_keys),
                     static_cast<uint64_t>(draw)})
    h = h * 0x9e3779b97f4a7c15ULL + v + 1;
  return Generator(h);
}

const InitRow* find_init(const std::vector<InitRow>& rows, const std::string& mode, int64_t d_k,
                         int64_t n_keys) {
  for (const InitRow& r : rows)
    if (r.mode == mode && r.d_k == d_k && r.n_keys == n_keys) return &r;
  return nullptr;
}

std::vector<int64_t> values_of(const std::vector<InitRow>& rows, int64_t InitRow::*field) {
  std::vector<int64_t> out;
  for (const InitRow& r : rows)
    if (std::find(out.begin(), out.end(), r.*field) == out.end()) out.push_back(r.*field);
  std::sort(out.begin(), out.end());
  return out;
}

// The middle number of keys (64 in the default run): the one the report quotes.
int64_t quoted_keys(const std::vector<InitRow>& rows) {
  std::vector<int64_t> n = values_of(rows, &InitRow::n_keys);
  return n[n.size() / 2];
}

double z_of(int64_t draws) { return student_t_quantile(0.975, static_cast<double>(draws - 1)); }

std::vector<std::string> init_modes(const std::vector<InitRow>& init) {
  std::vector<std::string> out;
  for (const std::string& mode : study_modes())
    if (std::any_of(init.begin(), init.end(), [&](const InitRow& r) { return r.mode == mode; }))
      out.push_back(mode);
  return out;
}

// One series per mode of an init field against d_k at n_keys, with the 95%
// interval of its estimate as error bars.
plot::Figure init_panel(const std::vector<InitRow>& init, int64_t n_keys,
                        const std::vector<std::string>& modes, const std::string& title,
                        const std::string& y, bool log_y, Interval InitRow::*field,
                        double (*transform)(double)) {
  plot::Figure f = figure(title, "d_k (log scale)", true, y, log_y);
  for (const std::string& mode : modes) {
    plot::Series s = mode_series(mode);
    s.markers = true;
    for (const InitRow& r : init) {
      if (r.mode != mode || r.n_keys != n_keys || !std::isfinite((r.*field).mean)) continue;
      const Interval& e = r.*field;
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

// One reference series, since grey is one colour: a NaN ends each line.
plot::Series slope_lines(const plot::Figure& f,
                         const std::vector<std::pair<std::string, double>>& slopes,
                         const std::string& label) {
  plot::Series line{.label = label, .reference = true};
  for (const auto& [mode, slope] : slopes)
    for (const plot::Series& s : f.series) {
      if (s.label != mode || s.x.empty()) continue;
      for (double x : s.x) {
        line.x.push_back(x);
        line.y.push_back(s.y.front() * std::pow(x / s.x.front(), slope));
      }
      line.x.push_back(kNaN), line.y.push_back(kNaN);
    }
  return line;
}

std::vector<InitRow> run_init(const Settings& settings, const InitOptions& o) {
  std::vector<InitRow> rows;
  std::vector<size_t> mode_of_row;
  const std::vector<std::string>& modes = study_modes();
  for (size_t m = 0; m < modes.size(); ++m)
    for (int64_t d_k : o.d_ks)
      for (int64_t n : o.n_keys) {
        InitRow row;
        row.mode = modes[m], row.d_k = d_k, row.n_keys = n;
        rows.push_back(row);
        mode_of_row.push_back(m);
      }
  // Rows are independent: fill them side by side, each on one thread, the
  // largest (d_k x n_keys) first so no thread is left with a long one at the end.
  std::vector<size_t> order(rows.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&rows](size_t a, size_t b) {
    return rows[a].d_k * rows[a].n_keys > rows[b].d_k * rows[b].n_keys;
  });
  run_jobs(
      "init", order.size(), settings.threads,
      [&](size_t i) {
        InitRow& row = rows[order[i]];
        if (changes_qk_init(row.mode)) {  // q, k not unit-variance: no random part
          row.logit_var_theory = kNaN;
          row.logit_var = row.entropy_norm = row.max_weight = row.jacobian_norm =
              mean_and_se(kNaN, kNaN, 0);
        } else {
          measure_qk(row, row.mode, mode_of_row[order[i]], settings, o);
        }
        measure_layer(row, settings, o);
      },
      settings.progress_for("init: attention at initialisation", "draw set"));
  return rows;
}

namespace {

// "name" and "name_se" columns for each estimate.
void add_estimate_columns(std::vector<std::string>& columns, const std::string& name) {
  columns.push_back(name);
  columns.push_back(name + "_se");
}

CsvFile init_csv(const std::vector<InitRow>& init) {
  std::vector<std::string> columns = {"mode", "d_k", "n_keys", "draws"};
  add_estimate_columns(columns, "logit_var");
  columns.push_back("logit_var_theory");
  for (const char* name : {"entropy_norm", "max_weight", "jacobian_norm"})
    add_estimate_columns(columns, name);
  columns.push_back("layer_draws");
  for (const char* name :
       {"layer_logit_var", "layer_entropy_norm", "layer_max_weight", "layer_jacobian_norm",
        "grad_norm_scores", "grad_norm_wq", "grad_norm_wk", "grad_norm_wv", "grad_ratio_qv"})
    add_estimate_columns(columns, name);
  std::vector<CsvRow> rows;
  for (const InitRow& r : init) {
    CsvRow row = {r.mode, r.d_k, r.n_keys, r.draws};
    add_estimate(row, r.logit_var);
    row.push_back(csv_number(r.logit_var_theory));
    for (const Interval* e : {&r.entropy_norm, &r.max_weight, &r.jacobian_norm})
      add_estimate(row, *e);
    row.push_back(r.layer_draws);
    for (const Interval* e :
         {&r.layer_logit_var, &r.layer_entropy_norm, &r.layer_max_weight, &r.layer_jacobian_norm,
          &r.grad_norm_scores, &r.grad_norm_wq, &r.grad_norm_wk, &r.grad_norm_wv, &r.grad_ratio_qv})
      add_estimate(row, *e);
    rows.push_back(row);
  }
  return {"init_metrics.csv", columns, rows};
}

}  // namespace

std::vector<Verdict> init_claims(const std::vector<InitRow>& init,
                                 const std::vector<SettingSummary>& training,
                                 const TrainResult* train) {
  if (init.empty()) return {};
  std::vector<Verdict> out = qk_claims(init, training, train);  // C1 to C4, C6
  out.insert(out.begin() + 4, saturation_claim(init, training));
  return out;
}

namespace {

// v to two significant figures, trailing zeros kept ("0.10", "5.0"): a
// finding's numbers, for a student.
std::string two_digits(double v) {
  std::ostringstream out;
  out << std::showpoint << std::setprecision(2) << v;
  return out.str();
}

// Unscaled attention at initialisation across d_k against 1/sqrt(d_k), for
// the report's first section: random q and k, then an initialised layer,
// each comparison worded by its interval.
Finding init_finding(const std::vector<InitRow>& init) {
  const std::vector<int64_t> d_ks = values_of(init, &InitRow::d_k);
  const int64_t n = quoted_keys(init), d_min = d_ks.front(), d_max = d_ks.back();
  const InitRow* first = find_init(init, "none", d_min, n);
  const InitRow* none = find_init(init, "none", d_max, n);
  const InitRow* ref = find_init(init, kDefaultMode, d_max, n);
  if (!first || !none || !ref || none->draws == 0 || ref->draws == 0) return {};
  const std::string at = "d_k " + std::to_string(d_max);
  // 1/sqrt(d_k)'s largest weight over d_k; every d_k's figures for the detail.
  double ref_low = kNaN, ref_high = kNaN;
  std::string none_list, ref_list;
  int64_t fewest = 0, most = 0;
  for (int64_t d : d_ks) {
    const InitRow* a = find_init(init, "none", d, n);
    const InitRow* b = find_init(init, kDefaultMode, d, n);
    if (!a || !b || a->draws == 0 || b->draws == 0) continue;
    ref_low = std::isnan(ref_low) ? b->max_weight.mean : std::min(ref_low, b->max_weight.mean);
    ref_high = std::isnan(ref_high) ? b->max_weight.mean : std::max(ref_high, b->max_weight.mean);
    none_list += (none_list.empty() ? "" : ", ") + format_estimate(a->max_weight);
    ref_list += (ref_list.empty() ? "" : ", ") + format_estimate(b->max_weight);
    for (int64_t draws : {a->draws, b->draws}) {
      fewest = fewest == 0 ? draws : std::min(fewest, draws);
      most = std::max(most, draws);
    }
  }
  std::string list;
  for (int64_t d : d_ks) list += (list.empty() ? "" : ", ") + std::to_string(d);
  auto upper = [](const Interval& e, int64_t draws) { return e.mean + z_of(draws) * e.se; };
  auto lower = [](const Interval& e, int64_t draws) { return e.mean - z_of(draws) * e.se; };

  // Random q and k: sharper with d_k, saturated at the largest, and the
  // Jacobian there (independent draws for each mode).
  const bool saturated = saturated_at_init(*none);
  const bool sharpens =
      lower(none->max_weight, none->draws) > upper(first->max_weight, first->draws);
  const bool jacobian_smaller =
      upper(none->jacobian_norm, none->draws) < lower(ref->jacobian_norm, ref->draws);
  // The initialised layer: the gradient at the scores, paired by layer draw.
  const Interval diff = scores_difference(*none, *ref);
  const bool larger = has_interval(diff) && diff.lo > 0,
             smaller = has_interval(diff) && diff.hi < 0;
  const bool one_hot_layer = upper(none->layer_max_weight, none->layer_draws) >= 0.99;
  const bool ref_uniform = lower(ref->layer_entropy_norm, ref->layer_draws) > 0.95;

  std::string title = std::string("Before any training, the unscaled softmax ") +
                      (saturated  ? "saturates as d_k grows"
                       : sharpens ? "sharpens as d_k grows but does not saturate"
                                  : "does not detectably sharpen as d_k grows") +
                      (larger    ? "; an initialised layer's scores still get more gradient, "
                                   "not less"
                       : smaller ? "; an initialised layer's scores get less gradient"
                                 : "; the gradient at an initialised layer's scores is not "
                                   "detectably smaller");
  const char* layer_state = layer_saturated(*none)
                                ? (one_hot_layer ? "saturated" : "saturated but not one-hot")
                                : "not saturated";
  std::string text =
      "q.k is a sum of d_k products, so its variance is d_k (C1). Over " + std::to_string(n) +
      " keys the largest attention weight " + (sharpens ? "grows from " : "goes from ") +
      two_digits(first->max_weight.mean) + " at d_k " + std::to_string(d_min) + " to " +
      two_digits(none->max_weight.mean) + " at " + at + " without scaling, against " +
      (two_digits(ref_low) == two_digits(ref_high)
           ? two_digits(ref_low)
           : two_digits(ref_low) + " to " + two_digits(ref_high)) +
      " with 1/sqrt(d_k) (uniform: " + two_digits(1.0 / static_cast<double>(n)) + "), and at " +
      at + " the softmax Jacobian, through which every gradient reaches the scores, is " +
      two_digits(none->jacobian_norm.mean) + " against " + two_digits(ref->jacobian_norm.mean) +
      (jacobian_smaller ? ": it shrinks as the softmax nears one-hot." : ".") +
      " A freshly initialised layer starts milder (its q and k have variance about 1/3): at " + at +
      " its unscaled softmax is " + layer_state + " (largest weight " +
      two_digits(none->layer_max_weight.mean) + "), its Jacobian " +
      two_digits(none->layer_jacobian_norm.mean) + " against " +
      two_digits(ref->layer_jacobian_norm.mean) + ", and the gradient reaching its scores " +
      two_digits(none->grad_norm_scores.mean) + " against " +
      two_digits(ref->grad_norm_scores.mean) + " (layer_gradients.svg)";
  if (larger)
    text += ref_uniform ? ": larger, not smaller, since 1/sqrt(d_k)'s softmax there is close to "
                          "uniform, and a nearly uniform softmax over n keys passes each score a "
                          "gradient of order 1/n."
                        : ": larger, not smaller.";
  else if (smaller)
    text += ": the sharper softmax passes its scores less gradient.";
  else
    text += ", no detectable difference over " + std::to_string(none->layer_draws) + " layers.";
  text +=
      " Whether the gradient at the scores collapses once training sharpens the softmax further "
      "is for the train part to show.";

  const std::string detail =
      "Independent unit-variance q and k, " + std::to_string(n) +
      " keys, means over draws with 95% intervals: max_weight at d_k " + list + ", unscaled " +
      none_list + ", 1/sqrt(d_k) " + ref_list + " (" + std::to_string(fewest) + " to " +
      std::to_string(most) + " draws each); at " + at + " unscaled entropy_norm " +
      format_estimate(none->entropy_norm) + " (saturated by C5's criterion, entropy_norm below " +
      significant(kSaturatedEntropy) + " and max_weight above " + significant(kSaturatedMaxWeight) +
      ", whole intervals: " + yes_no(saturated) + "; sharper than at d_k " + std::to_string(d_min) +
      ", the intervals apart: " + yes_no(sharpens) + "), softmax Jacobian " +
      format_estimate(none->jacobian_norm) + " against 1/sqrt(d_k)'s " +
      format_estimate(ref->jacobian_norm) +
      " (independent draws; intervals apart: " + yes_no(jacobian_smaller) +
      "). A freshly initialised layer (one head of size " + std::to_string(d_max) + ", " +
      std::to_string(n) + " tokens; " + std::to_string(none->layer_draws) +
      " layer draws, the same layers and inputs for both modes), unscaled against 1/sqrt(d_k): "
      "entropy_norm " +
      format_estimate(none->layer_entropy_norm) + " against " +
      format_estimate(ref->layer_entropy_norm) + ", max_weight " +
      format_estimate(none->layer_max_weight) + " against " +
      format_estimate(ref->layer_max_weight) + ", softmax Jacobian " +
      format_estimate(none->layer_jacobian_norm) + " against " +
      format_estimate(ref->layer_jacobian_norm) + ", ||dL/dS|| " +
      format_estimate(none->grad_norm_scores) + " against " +
      format_estimate(ref->grad_norm_scores) + "; the difference paired by layer draw " +
      format_bounds(diff, 2) + " (t-interval; C5's criterion \"smaller\": " + yes_no(smaller) +
      ").";
  return {title, text, "softmax_shape.svg", detail};
}

}  // namespace

Section init_section(const InitOptions& options, const std::vector<InitRow>& init,
                     const std::vector<SettingSummary>& training, const TrainResult* train) {
  Section s{.part = "init"};
  if (init.empty()) return s;
  s.claims = init_claims(init, training, train);
  if (Finding f = init_finding(init); !f.title.empty()) s.findings.push_back(f);
  s.markdown = "## init: attention at initialisation\n\n" + qk_table(options, init) +
               layer_table(options, init);
  s.csvs.push_back(init_csv(init));
  s.plots = qk_figures(init);
  s.plots.push_back(layer_figure(init));
  return s;
}

}  // namespace gradflow::study
