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
// This file holds the part (its runs, its CSV file, its section) and the
// second experiment with C5, its table and its figure.
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <set>
#include <sstream>

#include "autograd/ops.h"
#include "examples/study/claims.h"
#include "examples/study/parts.h"
#include "tensor/ops.h"

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

namespace {

// Criteria stated in advance (docs/study.md).
constexpr double kSaturatedEntropy = 0.2, kSaturatedMaxWeight = 0.8;

double frobenius(const Tensor& g) { return std::sqrt(sum(mul(g, g)).item()); }

// v to two significant figures, trailing zeros kept ("0.10", "5.0"): a
// finding's numbers, for a student.
std::string two_digits(double v) {
  std::ostringstream out;
  out << std::showpoint << std::setprecision(2) << v;
  return out.str();
}

// Saturated by C5's criterion, on random q and k: entropy_norm below
// kSaturatedEntropy and max_weight above kSaturatedMaxWeight, whole 95% intervals.
bool saturated_at_init(const InitRow& r) {
  const double z = z_of(r.draws);
  return r.entropy_norm.mean + z * r.entropy_norm.se < kSaturatedEntropy &&
         r.max_weight.mean - z * r.max_weight.se > kSaturatedMaxWeight;
}

// The same in the initialised layer, over its layer draws.
bool layer_saturated(const InitRow& r) {
  const double z = z_of(r.layer_draws);
  return r.layer_entropy_norm.mean + z * r.layer_entropy_norm.se < kSaturatedEntropy &&
         r.layer_max_weight.mean - z * r.layer_max_weight.se > kSaturatedMaxWeight;
}

// ||dL/dS|| of a's initialised layers minus b's, draw by draw (draw i is the
// same layer and input for every mode): a t-interval, none without draws.
Interval scores_difference(const InitRow& a, const InitRow& b) {
  if (a.grad_norm_scores_draws.empty() ||
      a.grad_norm_scores_draws.size() != b.grad_norm_scores_draws.size())
    return no_interval();
  return paired_difference(a.grad_norm_scores_draws, b.grad_norm_scores_draws);
}

}  // namespace

// A fresh layer on fresh input, per draw; draw i is the same layer and input
// for every mode (the generator does not depend on the mode), so modes are
// compared on the same weights.
void measure_layer(InitRow& row, const Settings& settings, const InitOptions& o) {
  const std::string& mode = row.mode;
  std::vector<double> logit_var, entropy, max_weight, jacobian, scores, wq, wk, wv, ratio;
  // A draw averages over n_keys queries already: fewer draws for longer inputs.
  row.layer_draws = std::max<int64_t>(8, o.layer_rows / row.n_keys);
  for (int64_t draw = 0; draw < row.layer_draws; ++draw) {
    check_stop();
    Generator gen = init_generator(settings.seed, 2, 0, row.d_k, row.n_keys, draw);
    nn::MultiHeadAttention attn(
        o.d_model,
        {.heads = 1, .head_dim = row.d_k, .scale = scale_mode_of(mode), .max_len = row.n_keys},
        gen);
    apply_mode_init(attn, mode);
    attn.record_probe = true;
    Variable x(randn({1, row.n_keys, o.d_model}, gen));
    Variable out = attn.forward(x, x);
    // The gradient of <out, r> for a random direction r.
    Variable r(randn(out.shape(), gen));
    Tensor grad_scores;
    attn.probe.logits.register_hook([&grad_scores](const Tensor& g) {
      grad_scores = g;
      return Tensor();
    });
    sum(out * r).backward();
    const Tensor& logits = attn.probe.logits.data();
    logit_var.push_back(sample_variance(logits));
    AttentionStats st = attention_stats(attn.probe.weights.data(), logits, Tensor());
    entropy.push_back(st.entropy_norm);
    max_weight.push_back(st.max_weight);
    jacobian.push_back(st.jacobian_norm);
    scores.push_back(frobenius(grad_scores));
    wq.push_back(frobenius(attn.q_proj->weight.grad()));
    wk.push_back(frobenius(attn.k_proj->weight.grad()));
    wv.push_back(frobenius(attn.v_proj->weight.grad()));
    ratio.push_back(wq.back() / wv.back());
  }
  row.layer_logit_var = mean_and_se(logit_var);
  row.layer_entropy_norm = mean_and_se(entropy);
  row.layer_max_weight = mean_and_se(max_weight);
  row.layer_jacobian_norm = mean_and_se(jacobian);
  row.grad_norm_scores = mean_and_se(scores);
  row.grad_norm_scores_draws = scores;
  row.grad_norm_wq = mean_and_se(wq);
  row.grad_norm_wk = mean_and_se(wk);
  row.grad_norm_wv = mean_and_se(wv);
  row.grad_ratio_qv = mean_and_se(ratio);
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

// Why the gradient at the scores of an initialised unscaled layer need not
// be smaller than 1/sqrt(d_k)'s, in the words its own numbers allow.
std::string scores_note(const InitRow& none, const InitRow& ref, const Interval& diff,
                        int64_t d_k) {
  std::string note =
      " (at d_k " + std::to_string(d_k) + " the initialised layer's softmax has entropy_norm " +
      significant(none.layer_entropy_norm.mean) + " and max_weight " +
      significant(none.layer_max_weight.mean) + ": " +
      (layer_saturated(none) ? "saturated by the criterion above, but not one-hot"
                             : "not saturated by the criterion above, its q and k having variance "
                               "about 1/3") +
      "; 1/sqrt(d_k)'s is near uniform (entropy_norm " + significant(ref.layer_entropy_norm.mean) +
      "); ";
  if (has_interval(diff) && diff.lo > 0)
    return note +
           "a near-uniform softmax over n keys passes each score a gradient of order 1/n, so "
           "the sharper layer's ||dL/dS|| is the larger (its softmax Jacobian " +
           format_estimate(none.layer_jacobian_norm) + " against " +
           format_estimate(ref.layer_jacobian_norm) +
           "): " + format_estimate(none.grad_norm_scores) + " against " +
           format_estimate(ref.grad_norm_scores) + ")";
  return note + "||dL/dS|| " + format_estimate(none.grad_norm_scores) + " against " +
         format_estimate(ref.grad_norm_scores) + ", no detectable difference)";
}

Verdict saturation_claim(const std::vector<InitRow>& init,
                         const std::vector<SettingSummary>& training) {
  const std::vector<int64_t> d_ks = values_of(init, &InitRow::d_k);
  const int64_t d_max = d_ks.back(), n = quoted_keys(init);
  const int64_t seeds = seeds_of(training);
  {
    Verdict v = verdict_for("C5");
    const InitRow* none = find_init(init, "none", d_max, n);
    const InitRow* ref = find_init(init, "inv_sqrt_dk", d_max, n);
    const bool saturated = saturated_at_init(*none);
    const bool jacobian_small = none->jacobian_norm.mean < 0.5 * ref->jacobian_norm.mean;
    // In an initialised layer: the gradient at the scores, paired by layer
    // draw, and W_Q's against W_V's.
    const Interval scores_diff = scores_difference(*none, *ref);
    const bool scores_smaller = has_interval(scores_diff) && scores_diff.hi < 0;
    TrainingCount t = count_training(training, "none");
    TrainingCount control = count_training(training, kControl);
    // In training: the Q/V gradient ratio at the end of each run, against 1/sqrt(d_k)'s.
    std::string ratios;
    int ratio_lower = 0, ratio_settings = 0;
    for (const SettingSummary* unscaled : settings_for(training, "none")) {
      const SettingSummary& s = *unscaled;
      const SettingSummary* r = find_setting(training, s.task, s.d_k, kDefaultMode);
      if (!r) continue;
      ++ratio_settings;
      // Paired seed by seed: the same initial weights and batches.
      const Interval& d = s.log_grad_ratio_vs_default;
      ratio_lower += d.n > 1 && d.hi < 0;
      ratios += (ratios.empty() ? "" : "; ") + s.task + " d_k " + std::to_string(s.d_k) + ": " +
                significant(std::pow(10, d.mean), 2) + "x [" + significant(std::pow(10, d.lo), 2) +
                ", " + significant(std::pow(10, d.hi), 2) + "]";
    }
    v.measured = "independent q, k at d_k " + std::to_string(d_max) + ", " + std::to_string(n) +
                 " keys: entropy_norm " + format_estimate(none->entropy_norm) + ", max_weight " +
                 format_estimate(none->max_weight) + ", jacobian_norm " +
                 format_estimate(none->jacobian_norm) +
                 " (1/sqrt(d_k): " + format_estimate(ref->jacobian_norm) +
                 "); initialised layer: ||dL/dS|| " + format_estimate(none->grad_norm_scores) +
                 " (1/sqrt(d_k): " + format_estimate(ref->grad_norm_scores) +
                 "; the difference paired by layer draw " + format_bounds(scores_diff, 2) +
                 "), ||dL/dW_Q|| / ||dL/dW_V|| " + format_estimate(none->grad_ratio_qv) +
                 " (1/sqrt(d_k): " + format_estimate(ref->grad_ratio_qv) + ")";
    if (t.settings > 0)
      v.measured +=
          "; smallest W_Q/W_V gradient ratio at the end of training, none's over 1/sqrt(d_k)'s "
          "(geometric mean of the paired ratios over seeds, 95% interval): " +
          ratios + "; in training: " + describe_training(t, seeds) +
          "; the control (unscaled, q and k started small): " + describe_training(control, seeds);
    const int parts = 3 + 2 * (t.settings > 0);
    const int passed = saturated + jacobian_small + scores_smaller +
                       (t.settings > 0 && ratio_lower > 0) + (t.worse > 0);
    v.verdict = verdict_of(passed, parts);
    v.reason = std::string("saturated at init (entropy_norm below ") +
               significant(kSaturatedEntropy) + ", max_weight above " +
               significant(kSaturatedMaxWeight) + "): " + yes_no(saturated) +
               "; softmax Jacobian below half of 1/sqrt(d_k)'s: " + yes_no(jacobian_small) +
               "; gradient at the scores of an initialised layer smaller than 1/sqrt(d_k)'s "
               "(the paired difference's 95% interval below 0): " +
               yes_no(scores_smaller) +
               (scores_smaller ? "" : scores_note(*none, *ref, scores_diff, d_max)) +
               (t.settings > 0
                    ? "; Q/K gradient vanishing relative to V in training (the paired ratio's "
                      "interval below 1) in " +
                          std::to_string(ratio_lower) + " of " + std::to_string(ratio_settings) +
                          " settings; learns worse somewhere: " + yes_no(t.worse > 0)
                    : "");
    return v;
  }
}

std::string layer_table(const InitOptions& options, const std::vector<InitRow>& init) {
  std::ostringstream md;
  const int64_t n = quoted_keys(init);
  md << "### An initialised layer\n\nA freshly initialised attention layer (d_model "
     << options.d_model << ", one head of size d_k, " << n
     << " tokens of N(0, 1) input, loss <output, r> for a random r; the same layers and inputs "
        "for every mode). Its projections give q and k components of variance about 1/3, so q.k "
        "has variance d_k / 9 and every scaled mode starts near uniform; the unscaled one "
        "sharpens as d_k grows, and the control (none_small_init) starts like 1/sqrt(d_k).\n\n"
     << "| mode | d_k | layer entropy_norm | layer max_weight | layer jacobian_norm | "
        "\\|\\|dL/dS\\|\\| | \\|\\|dL/dW_Q\\|\\| | \\|\\|dL/dW_V\\|\\| | W_Q / W_V |\n"
        "|---|---|---|---|---|---|---|---|---|\n";
  for (const InitRow& r : init) {
    if (r.n_keys != n) continue;
    md << "| " << r.mode << " | " << r.d_k << " | " << format_estimate(r.layer_entropy_norm)
       << " | " << format_estimate(r.layer_max_weight) << " | "
       << format_estimate(r.layer_jacobian_norm) << " | " << format_estimate(r.grad_norm_scores)
       << " | " << format_estimate(r.grad_norm_wq) << " | " << format_estimate(r.grad_norm_wv)
       << " | " << format_estimate(r.grad_ratio_qv) << " |\n";
  }
  md << "\n### The slopes against d_k, and where they come from\n\n"
     << "In the layer, r W_O gives a gradient g at each attention output with d_k components "
        "of variance about d_model / (3 d_k), so g . v_j has a variance that does not depend on "
        "d_k. Through a near-uniform softmax, dL/dS_ij = p_ij (dL/dP_ij - sum_l p_il dL/dP_il) "
        "is 1/n times a centred copy of it: **||dL/dS|| has slope 0** in d_k. The gradient at "
        "the queries is dL/dQ = s (dL/dS) K, a sum over keys of d_k-dimensional k of variance "
        "1/3, so ||dL/dQ|| and **||dL/dW_Q|| grow like s sqrt(d_k)**: slope 0 for 1/sqrt(d_k), "
        "1/(2 sqrt(d_k)), the learned scale and QK-LayerNorm; -1/2 for 1/d_k; +1/2 for no "
        "scale until the softmax saturates and bends it down; +1/4 for the control, whose k is "
        "d_k^(-1/4) smaller. The value's gradient dL/dV = P^T g does not depend on s: **slope "
        "0** while attention stays spread, larger once P concentrates. The Q/V ratio's slope is "
        "the difference. For the logits themselves, std = s sqrt(d_k) for unit-variance q and "
        "k: slope 1/2 unscaled, 0 for 1/sqrt(d_k), -1/2 for 1/d_k.\n\n";
  return md.str();
}

PlotFile layer_figure(const std::vector<InitRow>& init) {
  const int64_t n = quoted_keys(init);
  const std::string theory = "theory: slope through a mode's first point";
  const auto groups = mode_panels(init_modes(init));
  std::vector<plot::Figure> panels;
  for (size_t g = 0; g < groups.size(); ++g) {
    const std::vector<std::string>& modes = groups[g];
    const std::string sub = panel_suffix(g, groups.size());
    panels.push_back(init_panel(init, n, modes, "Initialised layer: entropy" + sub,
                                "entropy H(p) / log n (1 = uniform)", false,
                                &InitRow::layer_entropy_norm));
    plot::Figure scores = init_panel(init, n, modes, "Gradient at the scores" + sub,
                                     "gradient norm ||dL/dS||_F", true, &InitRow::grad_norm_scores);
    scores.series.push_back(slope_lines(scores, {{kDefaultMode, 0}}, theory));
    plot::Figure wq = init_panel(init, n, modes, "Gradient at W_Q" + sub,
                                 "gradient norm ||dL/dW_Q||_F", true, &InitRow::grad_norm_wq);
    wq.series.push_back(slope_lines(
        wq, {{kDefaultMode, 0}, {"inv_dk", -0.5}, {kControl, 0.25}, {"none", 0.5}}, theory));
    plot::Figure ratio =
        init_panel(init, n, modes, "W_Q against W_V" + sub,
                   "gradient norm ratio ||dL/dW_Q|| / ||dL/dW_V||", true, &InitRow::grad_ratio_qv);
    ratio.series.push_back(slope_lines(ratio, {{kDefaultMode, 0}, {"inv_dk", -0.5}}, theory));
    panels.insert(panels.end(), {scores, wq, ratio});
  }
  return {"layer_gradients.svg", plot::render_svg_grid(panels, 2, {.legend_once = true}),
          "A freshly initialised attention layer (d_model 64, one head of size d_k, " +
              std::to_string(n) +
              " tokens) against d_k, log axes but for the entropy: its softmax entropy, and the "
              "gradient norms of L = <output, r> at the scores S, at W_Q, and W_Q's over W_V's; "
              "the main arms in the top four panels, the others beneath; "
              "means over layer draws with 95% intervals; dashed grey: the slopes docs/study.md "
              "derives, 0 for 1/sqrt(d_k), -1/2 for 1/d_k, 1/4 for the control and 1/2 for none "
              "at W_Q (the learned scales start as 1/sqrt(d_k) and lie on it)."};
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
                                 const std::vector<SettingSummary>& training) {
  if (init.empty()) return {};
  std::vector<Verdict> out = qk_claims(init, training);  // C1 to C4, C6
  out.insert(out.begin() + 4, saturation_claim(init, training));
  return out;
}

namespace {

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
                     const std::vector<SettingSummary>& training) {
  Section s{.part = "init"};
  if (init.empty()) return s;
  s.claims = init_claims(init, training);
  if (Finding f = init_finding(init); !f.title.empty()) s.findings.push_back(f);
  s.markdown = "## init: attention at initialisation\n\n" + qk_table(options, init) +
               layer_table(options, init);
  s.csvs.push_back(init_csv(init));
  s.plots = qk_figures(init);
  s.plots.push_back(layer_figure(init));
  return s;
}

}  // namespace gradflow::study
