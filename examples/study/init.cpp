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
  for (const InitRow& r : init) out.push_back(r.mode);
  return in_drawing_order(out);
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
  const std::vector<std::string> modes = measured_arms(settings.modes);
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

Section init_section(const InitOptions& options, const std::vector<InitRow>& init,
                     const std::vector<SettingSummary>& training, const TrainResult* train) {
  Section s{.part = "init"};
  if (init.empty()) return s;
  s.claims = init_claims(init, training, train);
  s.markdown = "## init: attention at initialisation\n\n" + qk_table(options, init) +
               layer_table(options, init);
  s.csvs.push_back(init_csv(init));
  s.plots = qk_figures(init);
  s.plots.push_back(layer_figure(init));
  return s;
}

}  // namespace gradflow::study
