// The init part's first experiment, the seeds' own setting: q and k drawn
// independently from N(0, 1) for each mode, d_k and number of keys, each
// mode with draws of its own, so its logit variance is measured from its
// own scaled products. Claims C1 to C4 and C6 are judged here, on these
// draws; their table and figures follow. init.cpp holds the part itself
// (its runs, CSV file and section) and its second experiment, a freshly
// initialised layer, with C5.
#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <sstream>

#include "autograd/ops.h"
#include "examples/study/claims.h"
#include "examples/study/parts.h"
#include "nn/scale_variants.h"
#include "tensor/ops.h"

namespace gradflow::study {

namespace {

// Criteria stated in advance (docs/study.md).
// measured / theory within 1 +- this: the identities' declared margin (claims.cpp)
double variance_tolerance() { return criterion("C1", "a", true).margin; }
constexpr double kIdentityAlpha = 0.05;  // the equivalence test's level

// (rows, d) of N(0, 1) float32 from the fast sampler.
Tensor normal_matrix(int64_t rows, int64_t d, Generator& gen) {
  Tensor t = zeros({rows, d});
  fill_normal({t.data<float>(), static_cast<size_t>(rows * d)}, gen);
  return t;
}

// Rows of x normalised to mean 0 and variance 1 (QK-LayerNorm at init:
// weight 1, bias 0). Shape: x (N, D).
Tensor normalize_rows(const Tensor& x) {
  Tensor centered = sub(x, mean(x, {-1}, true));
  Tensor variance = mean(mul(centered, centered), {-1}, true);
  return mul(centered, pow(add(variance, 1e-5), -0.5));
}

// Rows of x scaled to norm 1. Shape: x (N, D).
Tensor unit_rows(const Tensor& x) { return mul(x, pow(sum(mul(x, x), {-1}, true), -0.5)); }

double mean_square(const Tensor& t) { return mean(mul(t, t)).item(); }

// A variance identity: measured / expected at every d_k and n_keys, judged
// by an equivalence test (TOST at level kIdentityAlpha: the 90% interval
// inside 1 +- variance_tolerance()). Holds when every setting is shown
// equivalent, fails when one's 95% interval lies wholly outside; else
// unclear. The draws were chosen (measure_qk) so a true identity fails in
// fewer than 1% of base seeds.
struct VarianceCheck {
  int within = 0, outside = 0, total = 0;
  int64_t fewest_draws = 0, most_draws = 0;
  double worst_mean = 1, worst_lo = 1, worst_hi = 1;  // the ratio farthest from 1, 95% interval
  std::string where;
};

VarianceCheck check_variance(const std::vector<InitRow>& init, const std::string& mode,
                             double (*expected)(int64_t)) {
  VarianceCheck c;
  for (const InitRow& r : init) {
    if (r.mode != mode || r.draws < 2) continue;
    const double e = expected(r.d_k), z = z_of(r.draws);
    const double mean = r.logit_var.mean / e, lo = (r.logit_var.mean - z * r.logit_var.se) / e,
                 hi = (r.logit_var.mean + z * r.logit_var.se) / e;
    ++c.total;
    c.within += r.logit_var.se > 0 && tost_relative(r.logit_var.mean, r.logit_var.se, e,
                                                    variance_tolerance(), kIdentityAlpha)
                                          .equivalent;
    c.outside += hi < 1 - variance_tolerance() || lo > 1 + variance_tolerance();
    c.fewest_draws = c.total == 1 ? r.draws : std::min(c.fewest_draws, r.draws);
    c.most_draws = std::max(c.most_draws, r.draws);
    if (std::abs(mean - 1) >= std::abs(c.worst_mean - 1)) {
      c.worst_mean = mean, c.worst_lo = lo, c.worst_hi = hi;
      c.where = "d_k " + std::to_string(r.d_k) + ", " + std::to_string(r.n_keys) + " keys";
    }
  }
  return c;
}

std::string describe_variance(const VarianceCheck& c) {
  return "measured / expected shown within [" + significant(1 - variance_tolerance()) + ", " +
         significant(1 + variance_tolerance()) + "] by an equivalence test (TOST, level " +
         significant(kIdentityAlpha) + ") in " + std::to_string(c.within) + " of " +
         std::to_string(c.total) + " (d_k, n_keys) settings, with " +
         std::to_string(c.fewest_draws) + " to " + std::to_string(c.most_draws) +
         " draws each (enough for a true identity to fail in under 1% of base seeds); farthest "
         "from 1: " +
         significant(c.worst_mean, 4) + " [" + significant(c.worst_lo, 4) + ", " +
         significant(c.worst_hi, 4) + "] (95%) at " + c.where;
}

// "var 64.1 +- 0.5 (expected 64)" at each d_k for the quoted n_keys.
std::string variance_figures(const std::vector<InitRow>& init, const std::string& mode,
                             double (*expected)(int64_t)) {
  std::string out;
  const int64_t n = quoted_keys(init);
  for (int64_t d : values_of(init, &InitRow::d_k)) {
    const InitRow* r = find_init(init, mode, d, n);
    if (!r) continue;
    out += (out.empty() ? "" : "; ") + std::string("d_k ") + std::to_string(d) + ": " +
           format_estimate(r->logit_var, 4) + " (expected " + significant(expected(d), 4) + ")";
  }
  return out + " (" + std::to_string(n) + " keys)";
}

// The identity `id`: `mode`'s logit variance is expected(d_k) in every
// setting, judged by check_variance's equivalence test. Its one criterion
// passes when every setting is shown equivalent, fails when one's 95%
// interval lies wholly outside (does not hold), and is unclear otherwise.
Verdict identity_verdict(const std::string& id, const std::vector<InitRow>& init,
                         const std::string& mode, double (*expected)(int64_t),
                         const std::string& more = "") {
  const VarianceCheck c = check_variance(init, mode, expected);
  const bool all = c.within == c.total && c.total > 0;
  Outcome o{.criterion = "a",
            .passed = all,
            .missing = !all && c.outside == 0,
            .setting = "farthest from 1: " + c.where,
            .estimate = {c.worst_mean, (c.worst_hi - c.worst_lo) / 2, c.worst_lo, c.worst_hi,
                         c.fewest_draws},
            .text = describe_variance(c)};
  return judge(id, {o}, {}, variance_figures(init, mode, expected) + more, true);
}

// A mean over draws as its 95% interval (z_of the draws).
Interval over_draws(const Interval& e, int64_t draws) {
  const double half = z_of(draws) * e.se;
  return {e.mean, half, e.mean - half, e.mean + half, draws};
}

}  // namespace

// Independent unit-variance q and k: `draws` sets of `queries` queries
// against n_keys keys. The logit variance is the mean of the squared scaled
// logits (their mean is 0 by symmetry, so this is unbiased). q and k are
// normalised as the mode's layer would (QkNormalisation), times the factor a
// layer built for n_keys keys starts with (ScaleMode::start_factor: qk_l2norm's
// g is log2(L^2 - L), L = n_keys), then through its variant's transform of the
// scores (softcap's cap: no closed form for the variance then), if any.
void measure_qk(InitRow& row, const std::string& mode, size_t mode_index, const Settings& settings,
                const InitOptions& o) {
  const nn::ScaleMode scale = scale_mode_of(mode);
  const bool qk_norm = scale.entry().qk_normalisation == nn::QkNormalisation::LayerNorm;
  const bool l2_norm = scale.entry().qk_normalisation == nn::QkNormalisation::L2;
  const double d = static_cast<double>(row.d_k);
  const double s = scale.start_factor({.d_k = row.d_k, .max_len = row.n_keys});
  const auto variant = transforming(mode_variant(scale, row.d_k, row.n_keys));
  // Fewer keys, noisier draws: more of them, so every estimate is as tight.
  row.draws = std::max(o.draws, o.draws * 64 / row.n_keys);
  // The cosine of two independent directions in d_k dimensions has variance 1/d_k.
  row.logit_var_theory = qk_norm || variant ? kNaN : l2_norm ? s * s / d : d * s * s;
  std::vector<double> var, entropy, max_weight, jacobian;
  Generator gen = init_generator(settings.seed, 1, mode_index, row.d_k, row.n_keys);
  for (int64_t draw = 0; draw < row.draws; ++draw) {
    // An identity is judged by an equivalence test (TOST, margin
    // variance_tolerance()): after the first draws, as many more as that test
    // needs for a true identity to fail in fewer than 1% of base seeds over
    // all of a claim's settings (the per-draw spread measured so far), at
    // most 16 times as many.
    if (draw + 1 == row.draws && std::isfinite(row.logit_var_theory) && draw < 16 * o.draws) {
      const double spread = sample_sd(var) / row.logit_var_theory;
      const double settings_per_claim = static_cast<double>(o.d_ks.size() * o.n_keys.size());
      if (spread > 0)
        row.draws = std::clamp(tost_draws_needed(spread, variance_tolerance(), kIdentityAlpha,
                                                 0.01 / settings_per_claim),
                               row.draws, 16 * std::max(o.draws, o.draws * 64 / row.n_keys));
    }
    check_stop();
    Tensor q = normal_matrix(o.queries, row.d_k, gen), k = normal_matrix(row.n_keys, row.d_k, gen);
    if (qk_norm) q = normalize_rows(q), k = normalize_rows(k);
    if (l2_norm) q = unit_rows(q), k = unit_rows(k);
    // Shape: logits (queries, n_keys) = s q (queries, d_k) @ k^T (d_k, n_keys).
    Tensor logits = transformed_scores(variant.get(), mul(matmul(q, k.transpose(0, 1)), s));
    var.push_back(mean_square(logits));
    AttentionStats st = attention_stats(softmax(logits, -1), logits, Tensor());
    entropy.push_back(st.entropy_norm);
    max_weight.push_back(st.max_weight);
    jacobian.push_back(st.jacobian_norm);
  }
  row.logit_var = mean_and_se(var);
  row.entropy_norm = mean_and_se(entropy);
  row.max_weight = mean_and_se(max_weight);
  row.jacobian_norm = mean_and_se(jacobian);
}

std::vector<Verdict> qk_claims(const std::vector<InitRow>& init,
                               const std::vector<SettingSummary>& training,
                               const TrainResult* train) {
  std::vector<Verdict> out;
  const std::vector<int64_t> d_ks = values_of(init, &InitRow::d_k);
  const int64_t d_min = d_ks.front(), d_max = d_ks.back(), n = quoted_keys(init);
  const double nd = static_cast<double>(n);
  const int64_t seeds = seeds_of(training);

  {  // C1
    std::string more;
    if (const InitRow* r = find_init(init, "none", 64, n))
      more = "; std at d_k 64: " + significant(std::sqrt(r->logit_var.mean), 4);
    out.push_back(identity_verdict(
        "C1", init, "none", [](int64_t d) { return double(d); }, more));
  }
  out.push_back(identity_verdict("C2", init, "inv_sqrt_dk", [](int64_t) { return 1.0; }));
  {  // C3: (a) here, at initialisation; (b) and (c) from the train part's runs.
    out.push_back(
        identity_verdict("C3", init, "inv_dk", [](int64_t d) { return 1.0 / double(d); }));
    const InitRow* big = find_init(init, "inv_dk", d_max, n);
    const Interval entropy = over_draws(big->entropy_norm, big->draws),
                   top = over_draws(big->max_weight, big->draws);
    const bool flat = passes(Test::Above, criterion("C3", "a").margin, entropy) && top.hi < 2 / nd;
    std::vector<CriterionResult> trained;
    std::vector<std::string> untested;
    for (const char* c : {"b", "c"}) {
      const std::vector<CriterionResult> rows =
          train ? evaluate("C3", criterion("C3", c), *train) : std::vector<CriterionResult>{};
      if (rows.empty()) untested.push_back(c);
      trained.insert(trained.end(), rows.begin(), rows.end());
    }
    out.push_back(judge(
        "C3",
        {{.criterion = "a",
          .passed = flat,
          .setting = "d_k " + std::to_string(d_max) + ", " + std::to_string(n) + " keys",
          .estimate = entropy,
          .text = "entropy_norm " + format_estimate(big->entropy_norm, 4) + ", max_weight " +
                  format_estimate(big->max_weight, 3) + " (1/n = " + significant(1 / nd, 3) + ")"}},
        trained,
        "at d_k " + std::to_string(d_max) + ": entropy_norm " +
            format_estimate(big->entropy_norm, 4) + ", max_weight " +
            format_estimate(big->max_weight, 3) + "; in training, the criteria's rows below",
        false, untested));
  }
  {  // C4
    out.push_back(identity_verdict("C4", init, "inv_2sqrt_dk", [](int64_t) { return 0.25; }));
    // Flatter: entropy above 1/sqrt(d_k)'s at every d_k, the difference's
    // 95% interval (independent draws) above 0.
    int flatter = 0, compared = 0;
    Interval smallest = no_interval();
    for (int64_t d : d_ks) {
      const InitRow* a = find_init(init, "inv_2sqrt_dk", d, n);
      const InitRow* b = find_init(init, "inv_sqrt_dk", d, n);
      if (!a || !b) continue;
      ++compared;
      const double se = std::hypot(a->entropy_norm.se, b->entropy_norm.se);
      const double diff = a->entropy_norm.mean - b->entropy_norm.mean;
      flatter += diff - 1.96 * se > criterion("C4", "a").margin;
      if (!(smallest.mean <= diff))
        smallest = {diff, 1.96 * se, diff - 1.96 * se, diff + 1.96 * se,
                    std::min(a->draws, b->draws)};
    }
    const InitRow* a = find_init(init, "inv_2sqrt_dk", d_max, n);
    const InitRow* b = find_init(init, "inv_sqrt_dk", d_max, n);
    TrainingCount t = count_training(training, "inv_2sqrt_dk");
    std::vector<Outcome> outcomes = {
        {.criterion = "a",
         .passed = flatter == compared && compared > 0,
         .setting = std::to_string(flatter) + " of " + std::to_string(compared) + " d_k",
         .estimate = smallest}};
    if (t.settings > 0)
      outcomes.push_back({.criterion = "b",
                          .passed = t.worse > 0,
                          .estimate = {static_cast<double>(t.worse), kNaN, kNaN, kNaN, 0},
                          .text = describe_training(t, seeds)});
    out.push_back(judge(
        "C4", outcomes, {},
        "entropy_norm at d_k " + std::to_string(d_max) + ": " + format_estimate(a->entropy_norm) +
            " against 1/sqrt(d_k)'s " + format_estimate(b->entropy_norm) +
            "; in training: " + describe_training(t, seeds),
        false, t.settings > 0 ? std::vector<std::string>{} : std::vector<std::string>{"b"}));
  }
  {  // C6
    const InitRow* first = find_init(init, "none", d_min, n);
    const InitRow* last = find_init(init, "none", d_max, n);
    const double shrink = last->jacobian_norm.mean / first->jacobian_norm.mean;
    const bool shrinks =
        shrink < criterion("C6", "a").margin && last->max_weight.mean > first->max_weight.mean;
    int uniform_ok = 0, uniform_total = 0;
    double worst = 0;
    std::string uniform_figures;
    for (int64_t keys : values_of(init, &InitRow::n_keys)) {
      const InitRow* flat = find_init(init, "inv_dk", d_max, keys);
      if (!flat) continue;
      const double k = static_cast<double>(keys), expected = std::sqrt(1 / k - 1 / (k * k));
      const double off = flat->jacobian_norm.mean / expected - 1;
      ++uniform_total;
      uniform_ok += std::abs(off) < criterion("C6", "b").margin;
      if (std::abs(off) >= std::abs(worst)) worst = off;
      uniform_figures += (uniform_figures.empty() ? "" : "; ") + std::to_string(keys) +
                         " keys: " + format_estimate(flat->jacobian_norm, 4) + " vs " +
                         significant(expected, 4);
    }
    const std::string measured =
        "unscaled: jacobian_norm " + format_estimate(first->jacobian_norm) + " at d_k " +
        std::to_string(d_min) + " (max_weight " + format_estimate(first->max_weight) + ") -> " +
        format_estimate(last->jacobian_norm) + " at d_k " + std::to_string(d_max) +
        " (max_weight " + format_estimate(last->max_weight) + "); nearly uniform (1/d_k at d_k " +
        std::to_string(d_max) + ") against sqrt(1/n - 1/n^2): " + uniform_figures;
    out.push_back(
        judge("C6",
              {{.criterion = "a",
                .passed = shrinks,
                .setting = "d_k " + std::to_string(d_max) + " over d_k " + std::to_string(d_min),
                .estimate = {shrink, kNaN, kNaN, kNaN, 0}},
               {.criterion = "b",
                .passed = uniform_ok == uniform_total && uniform_total > 0,
                .setting = std::to_string(uniform_ok) + " of " + std::to_string(uniform_total) +
                           " key counts, farthest",
                .estimate = {worst, kNaN, kNaN, kNaN, 0}}},
              {}, measured));
  }
  return out;
}

std::string qk_table(const InitOptions& options, const std::vector<InitRow>& init) {
  std::ostringstream md;
  const int64_t n = quoted_keys(init);
  md << "### Independent unit-variance q and k\n\n"
     << "For every mode, d_k and number of keys, at least " << options.draws
     << " independent draws (more for fewer keys, and as many more as the equivalence test "
        "needs: the `draws` column of init_metrics.csv) of "
     << options.queries
     << " queries against the keys, fresh for every mode, so each mode's variance is measured "
        "from its own scaled products. Each figure is the mean over draws +- the half-width "
        "of its 95% interval (1.96 standard errors; the `_se` columns of init_metrics.csv hold "
        "the standard errors). Shown for "
     << n << " keys; init_metrics.csv has 8, 64 and 512.\n\n"
     << "| mode | d_k | logit_var | theory d_k s^2 | entropy_norm | max_weight | jacobian_norm "
        "|\n|---|---|---|---|---|---|---|\n";
  for (const InitRow& r : init) {
    if (r.n_keys != n || r.draws == 0) continue;
    md << "| " << r.mode << " | " << r.d_k << " | " << format_estimate(r.logit_var, 4) << " | "
       << significant(r.logit_var_theory, 4) << " | " << format_estimate(r.entropy_norm) << " | "
       << format_estimate(r.max_weight) << " | " << format_estimate(r.jacobian_norm) << " |\n";
  }
  return md.str();
}

std::vector<PlotFile> qk_figures(const std::vector<InitRow>& init) {
  std::set<int64_t> keys;
  for (const InitRow& r : init) keys.insert(r.n_keys);
  const int64_t n = quoted_keys(init);
  const std::string at = " (" + std::to_string(n) + " keys)";
  const plot::GridOptions grid{.legend_once = true};
  const auto groups = mode_panels(init_modes(init));
  std::vector<PlotFile> out;
  {
    std::vector<plot::Figure> panels;
    for (size_t g = 0; g < groups.size(); ++g) {
      plot::Figure f = init_panel(init, n, groups[g],
                                  "Logit std, independent q and k" + panel_suffix(g, groups.size()),
                                  "std of the scaled logit s (q.k)", true, &InitRow::logit_var,
                                  [](double v) { return std::sqrt(v); });
      f.series.push_back(slope_lines(f, {{"none", 0.5}, {"inv_dk", -0.5}},
                                     "theory: std = s sqrt(d_k), slope 1/2 or -1/2"));
      panels.push_back(f);
    }
    out.push_back(
        {"logit_std.svg", plot::render_svg_grid(panels, 2, grid),
         "Standard deviation of the scaled logit s (q.k) against d_k, log axes, for independent "
         "unit-variance q and k" +
             at +
             ": each mode's estimate over its draws with its 95% interval (markers; the control "
             "and none_reparam are not measured here), the main arms left and the others right, "
             "and the slopes the theory gives (dashed grey): std = s sqrt(d_k). The learned "
             "scales start at 1/sqrt(d_k) and lie on it."});
  }
  {
    // Every key count for the main arms; the others at the middle count
    // (all of them in init_metrics.csv).
    std::vector<plot::Figure> panels;
    for (size_t g = 0; g < groups.size(); ++g)
      for (int64_t k : keys) {
        if (g > 0 && k != n) continue;
        const std::string sub = ", " + std::to_string(k) + " keys" + panel_suffix(g, groups.size());
        panels.push_back(init_panel(init, k, groups[g], "Entropy" + sub,
                                    "entropy H(p) / log n (1 = uniform)", false,
                                    &InitRow::entropy_norm));
        panels.push_back(init_panel(init, k, groups[g], "Largest weight" + sub,
                                    "largest weight max_j p_j", false, &InitRow::max_weight));
        panels.push_back(init_panel(init, k, groups[g], "Softmax Jacobian" + sub,
                                    "Jacobian norm ||diag(p) - pp^T||_F", false,
                                    &InitRow::jacobian_norm));
      }
    out.push_back(
        {"softmax_shape.svg", plot::render_svg_grid(panels, 3, grid),
         "The softmax at initialisation against d_k (log x), for independent unit-variance q "
         "and k: normalised entropy, largest weight and Jacobian norm (columns); the main arms "
         "for 8, 64 and 512 keys (first rows), the other arms for " +
             std::to_string(n) +
             " keys (last row; every count in init_metrics.csv); means over 256 draws with 95% "
             "intervals."});
  }
  return out;
}

}  // namespace gradflow::study
