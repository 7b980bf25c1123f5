#include "examples/study/verdicts.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace gradflow::study {

namespace {

std::string fmt(double v, int digits = 3) {
  std::ostringstream out;
  out.precision(digits);
  out << v;
  return out.str();
}

// The 95% quantile for a mean over `draws` independent draws.
double z_of(int64_t draws) { return student_t_quantile(0.975, static_cast<double>(draws - 1)); }

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

// A variance claim: measured / expected with its 95% interval at every d_k
// and n_keys. Passes when every interval lies within 1 +- kVarianceTolerance,
// fails when one lies wholly outside; else unclear.
struct VarianceCheck {
  int within = 0, outside = 0, total = 0;
  double worst_mean = 1, worst_lo = 1, worst_hi = 1;  // the ratio farthest from 1
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
    c.within += lo >= 1 - kVarianceTolerance && hi <= 1 + kVarianceTolerance;
    c.outside += hi < 1 - kVarianceTolerance || lo > 1 + kVarianceTolerance;
    if (std::abs(mean - 1) >= std::abs(c.worst_mean - 1)) {
      c.worst_mean = mean, c.worst_lo = lo, c.worst_hi = hi;
      c.where = "d_k " + std::to_string(r.d_k) + ", " + std::to_string(r.n_keys) + " keys";
    }
  }
  return c;
}

std::string describe_variance(const VarianceCheck& c) {
  return "measured / expected within [" + fmt(1 - kVarianceTolerance) + ", " +
         fmt(1 + kVarianceTolerance) + "] with its whole 95% interval in " +
         std::to_string(c.within) + " of " + std::to_string(c.total) +
         " (d_k, n_keys) settings; farthest from 1: " + fmt(c.worst_mean, 4) + " [" +
         fmt(c.worst_lo, 4) + ", " + fmt(c.worst_hi, 4) + "] at " + c.where;
}

std::string variance_verdict(const VarianceCheck& c) {
  return c.within == c.total ? "holds" : c.outside > 0 ? "does not hold" : "unclear";
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
           format_estimate(r->logit_var, 4) + " (expected " + fmt(expected(d), 4) + ")";
  }
  return out + " (" + std::to_string(n) + " keys)";
}

// Paired comparisons of `mode` with 1/sqrt(d_k) over every trained setting:
// settings where some metric is detectably worse, or better.
struct TrainingCount {
  int settings = 0, worse = 0, better = 0;
  std::string worse_list, better_list;
};

TrainingCount count_training(const std::vector<SettingSummary>& training, const std::string& mode) {
  TrainingCount c;
  const std::vector<MetricSpec>& metrics = compared_metrics();
  for (const SettingSummary& s : training) {
    if (s.mode != mode) continue;
    ++c.settings;
    std::string worse, better;
    for (size_t m = 0; m < metrics.size(); ++m) {
      const Interval& d = s.vs_default[m];
      const std::string text = metrics[m].name + " " + (d.mean * metrics[m].scale > 0 ? "+" : "") +
                               format_interval(Interval{d.mean * metrics[m].scale,
                                                        d.half_width * metrics[m].scale, 0, 0, d.n},
                                               metrics[m].digits) +
                               " " + metrics[m].unit;
      if (s.verdict[m] == Comparison::Worse) worse += (worse.empty() ? "" : ", ") + text;
      if (s.verdict[m] == Comparison::Better) better += (better.empty() ? "" : ", ") + text;
    }
    const std::string where = s.task + " d_k " + std::to_string(s.d_k) + ": ";
    if (!worse.empty())
      ++c.worse, c.worse_list += (c.worse_list.empty() ? "" : "; ") + where + worse;
    if (!better.empty())
      ++c.better, c.better_list += (c.better_list.empty() ? "" : "; ") + where + better;
  }
  return c;
}

std::string describe_training(const TrainingCount& c, int64_t seeds) {
  if (c.settings == 0) return "not trained in this run";
  std::string out = "detectably worse than 1/sqrt(d_k) in " + std::to_string(c.worse) + " of " +
                    std::to_string(c.settings) + " settings";
  if (!c.worse_list.empty()) out += " (" + c.worse_list + ")";
  out += ", better in " + std::to_string(c.better);
  if (!c.better_list.empty()) out += " (" + c.better_list + ")";
  out += ", no detectable difference in the others with " + std::to_string(seeds) + " seeds";
  return out;
}

int64_t seeds_of(const std::vector<SettingSummary>& training) {
  int64_t n = 0;
  for (const SettingSummary& s : training) n = std::max(n, s.runs);
  return n;
}

}  // namespace

std::string verdict_of(int passed, int parts) {
  return passed == parts ? "holds" : passed == 0 ? "does not hold" : "partly holds";
}

const char* yes_no(bool b) { return b ? "yes" : "no"; }

std::string format_estimate(const Estimate& e, int digits) {
  if (!std::isfinite(e.mean)) return "-";
  return fmt(e.mean, digits) + " +- " + fmt(1.96 * e.se, 2);
}

std::vector<Verdict> judge_claims(const std::vector<InitRow>& init,
                                  const std::vector<SettingSummary>& training) {
  std::vector<Verdict> out;
  if (init.empty()) return out;
  const std::vector<int64_t> d_ks = values_of(init, &InitRow::d_k);
  const int64_t d_min = d_ks.front(), d_max = d_ks.back(), n = quoted_keys(init);
  const double nd = static_cast<double>(n);
  const int64_t seeds = seeds_of(training);

  {  // C1
    Verdict v{"C1", "Var(q.k) = d_k, so its std is sqrt(d_k) (d_k = 64 gives 8)"};
    v.why = "q.k is a sum of d_k independent products q_i k_i, each of mean 0 and variance 1.";
    VarianceCheck c = check_variance(init, "none", [](int64_t d) { return double(d); });
    v.measured = variance_figures(init, "none", [](int64_t d) { return double(d); });
    if (const InitRow* r = find_init(init, "none", 64, n))
      v.measured += "; std at d_k 64: " + fmt(std::sqrt(r->logit_var.mean), 4);
    v.verdict = variance_verdict(c);
    v.reason = describe_variance(c);
    out.push_back(v);
  }
  {  // C2
    Verdict v{"C2", "dividing by sqrt(d_k) keeps the variance at 1 for every d_k"};
    v.why = "Var(s x) = s^2 Var(x) = d_k / d_k.";
    VarianceCheck c = check_variance(init, "inv_sqrt_dk", [](int64_t) { return 1.0; });
    v.measured = variance_figures(init, "inv_sqrt_dk", [](int64_t) { return 1.0; });
    v.verdict = variance_verdict(c);
    v.reason = describe_variance(c);
    out.push_back(v);
  }
  {  // C3
    Verdict v{"C3",
              "dividing by d_k gives variance 1/d_k: the softmax becomes nearly uniform and "
              "attention loses focus"};
    v.why =
        "Var(q.k / d_k) = d_k / d_k^2; logits of std 1/sqrt(d_k) barely differ, so every weight "
        "is close to 1/n; a layer that cannot focus must learn larger q and k first.";
    auto expected = [](int64_t d) { return 1.0 / double(d); };
    VarianceCheck c = check_variance(init, "inv_dk", expected);
    const InitRow* big = find_init(init, "inv_dk", d_max, n);
    const double z = z_of(big->draws);
    const bool flat = big->entropy_norm.mean - z * big->entropy_norm.se > kUniformEntropy &&
                      big->max_weight.mean + z * big->max_weight.se < 2 / nd;
    TrainingCount t = count_training(training, "inv_dk");
    v.measured = variance_figures(init, "inv_dk", expected) + "; at d_k " + std::to_string(d_max) +
                 ": entropy_norm " + format_estimate(big->entropy_norm, 4) + ", max_weight " +
                 format_estimate(big->max_weight, 3) + " (1/n = " + fmt(1 / nd, 3) +
                 "); in training: " + describe_training(t, seeds);
    const int parts = 2 + (t.settings > 0), passed = (c.within == c.total) + flat + (t.worse > 0);
    v.verdict = verdict_of(passed, parts);
    v.reason =
        "variance: " + describe_variance(c) +
        "; nearly uniform at the largest d_k (entropy_norm above " + fmt(kUniformEntropy) +
        " and max_weight below 2/n, whole 95% intervals): " + yes_no(flat) +
        (t.settings > 0 ? std::string("; learns worse in some setting: ") + yes_no(t.worse > 0)
                        : "");
    out.push_back(v);
  }
  {  // C4
    Verdict v{"C4", "dividing by 2 sqrt(d_k) gives variance 1/4: still too flat"};
    v.why =
        "Var = d_k / (4 d_k); the logits' std is 1/2, so the softmax is flatter than with "
        "1/sqrt(d_k) at every d_k.";
    VarianceCheck c = check_variance(init, "inv_2sqrt_dk", [](int64_t) { return 0.25; });
    // Flatter: entropy above 1/sqrt(d_k)'s at every d_k, the difference's
    // 95% interval (independent draws) above 0.
    int flatter = 0, compared = 0;
    for (int64_t d : d_ks) {
      const InitRow* a = find_init(init, "inv_2sqrt_dk", d, n);
      const InitRow* b = find_init(init, "inv_sqrt_dk", d, n);
      if (!a || !b) continue;
      ++compared;
      const double se = std::hypot(a->entropy_norm.se, b->entropy_norm.se);
      flatter += a->entropy_norm.mean - b->entropy_norm.mean - 1.96 * se > 0;
    }
    const InitRow* a = find_init(init, "inv_2sqrt_dk", d_max, n);
    const InitRow* b = find_init(init, "inv_sqrt_dk", d_max, n);
    TrainingCount t = count_training(training, "inv_2sqrt_dk");
    v.measured = variance_figures(init, "inv_2sqrt_dk", [](int64_t) { return 0.25; }) +
                 "; entropy_norm at d_k " + std::to_string(d_max) + ": " +
                 format_estimate(a->entropy_norm) + " against 1/sqrt(d_k)'s " +
                 format_estimate(b->entropy_norm) + "; in training: " + describe_training(t, seeds);
    const int parts = 2 + (t.settings > 0);
    const int passed = (c.within == c.total) + (flatter == compared) + (t.worse > 0);
    v.verdict = verdict_of(passed, parts);
    v.reason = "variance: " + describe_variance(c) + "; flatter than 1/sqrt(d_k) at init in " +
               std::to_string(flatter) + " of " + std::to_string(compared) + " d_k" +
               (t.settings > 0 ? std::string("; too flat to learn as well (detectably worse "
                                             "somewhere): ") +
                                     yes_no(t.worse > 0)
                               : "");
    out.push_back(v);
  }
  {  // C5
    Verdict v{"C5",
              "without scaling, a large d_k saturates the softmax; the gradient through it "
              "vanishes, so learning slows or stalls"};
    v.why =
        "The logits' std grows like sqrt(d_k); the largest one then takes almost all the "
        "weight, and the softmax Jacobian diag(p) - pp^T, through which every gradient to W_Q "
        "and W_K passes, goes to 0.";
    const InitRow* none = find_init(init, "none", d_max, n);
    const InitRow* ref = find_init(init, "inv_sqrt_dk", d_max, n);
    const double z = z_of(none->draws);
    const bool saturated =
        none->entropy_norm.mean + z * none->entropy_norm.se < kSaturatedEntropy &&
        none->max_weight.mean - z * none->max_weight.se > kSaturatedMaxWeight;
    const bool jacobian_small = none->jacobian_norm.mean < 0.5 * ref->jacobian_norm.mean;
    // In an initialised layer: the gradient at the scores, and W_Q's against W_V's.
    const bool scores_smaller = none->grad_norm_scores.mean < ref->grad_norm_scores.mean;
    TrainingCount t = count_training(training, "none");
    TrainingCount control = count_training(training, kControl);
    // In training: the Q/V gradient ratio at the end of each run, against 1/sqrt(d_k)'s.
    std::string ratios;
    int ratio_lower = 0, ratio_settings = 0;
    for (const SettingSummary& s : training) {
      if (s.mode != "none") continue;
      const SettingSummary* r = find_setting(training, s.task, s.d_k, kDefaultMode);
      if (!r) continue;
      ++ratio_settings;
      ratio_lower += s.log_grad_ratio.hi < r->log_grad_ratio.lo;
      ratios += (ratios.empty() ? "" : "; ") + s.task + " d_k " + std::to_string(s.d_k) + ": " +
                fmt(std::pow(10, s.log_grad_ratio.mean), 2) + " vs " +
                fmt(std::pow(10, r->log_grad_ratio.mean), 2);
    }
    v.measured = "independent q, k at d_k " + std::to_string(d_max) + ", " + std::to_string(n) +
                 " keys: entropy_norm " + format_estimate(none->entropy_norm) + ", max_weight " +
                 format_estimate(none->max_weight) + ", jacobian_norm " +
                 format_estimate(none->jacobian_norm) +
                 " (1/sqrt(d_k): " + format_estimate(ref->jacobian_norm) +
                 "); initialised layer: ||dL/dS|| " + format_estimate(none->grad_norm_scores) +
                 " (1/sqrt(d_k): " + format_estimate(ref->grad_norm_scores) +
                 "), ||dL/dW_Q|| / ||dL/dW_V|| " + format_estimate(none->grad_ratio_qv) +
                 " (1/sqrt(d_k): " + format_estimate(ref->grad_ratio_qv) + ")";
    if (t.settings > 0)
      v.measured +=
          "; smallest W_Q/W_V gradient ratio at the end of training (geometric mean over seeds, "
          "none vs 1/sqrt(d_k)): " +
          ratios + "; in training: " + describe_training(t, seeds) +
          "; the control (unscaled, q and k started small): " + describe_training(control, seeds);
    const int parts = 3 + 2 * (t.settings > 0);
    const int passed = saturated + jacobian_small + scores_smaller +
                       (t.settings > 0 && ratio_lower > 0) + (t.worse > 0);
    v.verdict = verdict_of(passed, parts);
    v.reason = std::string("saturated at init (entropy_norm below ") + fmt(kSaturatedEntropy) +
               ", max_weight above " + fmt(kSaturatedMaxWeight) + "): " + yes_no(saturated) +
               "; softmax Jacobian below half of 1/sqrt(d_k)'s: " + yes_no(jacobian_small) +
               "; gradient at the scores of an initialised layer smaller than 1/sqrt(d_k)'s: " +
               yes_no(scores_smaller) +
               (scores_smaller ? ""
                               : " (a real layer's q and k have variance 1/3, so at d_k " +
                                     std::to_string(d_max) + " it is not yet saturated)") +
               (t.settings > 0
                    ? "; Q/K gradient vanishing relative to V in training (ratio's interval "
                      "below 1/sqrt(d_k)'s) in " +
                          std::to_string(ratio_lower) + " of " + std::to_string(ratio_settings) +
                          " settings; learns worse somewhere: " + yes_no(t.worse > 0)
                    : "");
    out.push_back(v);
  }
  {  // C6
    Verdict v{"C6",
              "the softmax Jacobian diag(p) - pp^T goes to 0 for one-hot p, and is of order 1/n "
              "for uniform p"};
    v.why =
        "For one-hot p every entry p_i (delta_ij - p_j) is 0; for p = 1/n the entries are "
        "1/n - 1/n^2 on the diagonal and -1/n^2 off it, Frobenius norm sqrt(1/n - 1/n^2).";
    const InitRow* first = find_init(init, "none", d_min, n);
    const InitRow* last = find_init(init, "none", d_max, n);
    const bool shrinks = last->jacobian_norm.mean < 0.5 * first->jacobian_norm.mean &&
                         last->max_weight.mean > first->max_weight.mean;
    int uniform_ok = 0, uniform_total = 0;
    std::string uniform_figures;
    for (int64_t keys : values_of(init, &InitRow::n_keys)) {
      const InitRow* flat = find_init(init, "inv_dk", d_max, keys);
      if (!flat) continue;
      const double k = static_cast<double>(keys), expected = std::sqrt(1 / k - 1 / (k * k));
      ++uniform_total;
      uniform_ok += std::abs(flat->jacobian_norm.mean / expected - 1) < 0.02;
      uniform_figures += (uniform_figures.empty() ? "" : "; ") + std::to_string(keys) +
                         " keys: " + format_estimate(flat->jacobian_norm, 4) + " vs " +
                         fmt(expected, 4);
    }
    v.measured = "unscaled: jacobian_norm " + format_estimate(first->jacobian_norm) + " at d_k " +
                 std::to_string(d_min) + " (max_weight " + format_estimate(first->max_weight) +
                 ") -> " + format_estimate(last->jacobian_norm) + " at d_k " +
                 std::to_string(d_max) + " (max_weight " + format_estimate(last->max_weight) +
                 "); nearly uniform (1/d_k at d_k " + std::to_string(d_max) +
                 ") against sqrt(1/n - 1/n^2): " + uniform_figures;
    v.verdict = verdict_of(shrinks + (uniform_ok == uniform_total), 2);
    v.reason = std::string("shrinks by more than half as the softmax saturates: ") +
               yes_no(shrinks) + "; equals the uniform value within 2% in " +
               std::to_string(uniform_ok) + " of " + std::to_string(uniform_total) +
               " key counts (the largest entry, 1/n - 1/n^2, is of order 1/n)";
    out.push_back(v);
  }
  {  // C7
    Verdict v{"C7",
              "in training the scale changes how fast and how stably a transformer learns; "
              "1/sqrt(d_k) is the balanced choice"};
    v.why =
        "Too small a scale starts flat and must grow q and k first; too large a scale "
        "saturates and starves W_Q and W_K of gradient; 1/sqrt(d_k) keeps the logits' "
        "variance at that of the inputs' at every d_k.";
    int worse_settings = 0, better_settings = 0, modes = 0;
    std::string better_list;
    for (const std::string& mode : study_modes()) {
      if (mode == kDefaultMode) continue;
      TrainingCount t = count_training(training, mode);
      if (t.settings == 0) continue;
      ++modes;
      worse_settings += t.worse;
      better_settings += t.better;
      if (!t.better_list.empty())
        better_list += (better_list.empty() ? "" : "; ") + mode + " on " + t.better_list;
    }
    if (modes == 0) {
      v.measured = "no training in this run";
      v.verdict = "unclear";
      v.reason = "Part B did not run";
      out.push_back(v);
      return out;
    }
    const bool matters = worse_settings + better_settings > 0;
    const bool balanced = better_settings == 0;
    v.measured = "paired over " + std::to_string(seeds) +
                 " seeds against 1/sqrt(d_k): " + std::to_string(worse_settings) +
                 " (mode, setting) pairs detectably worse, " + std::to_string(better_settings) +
                 " detectably better" + (better_list.empty() ? "" : " (" + better_list + ")");
    v.verdict = !matters ? "unclear" : balanced ? "holds" : "partly holds";
    v.reason = std::string("the scale matters (some mode detectably different): ") +
               yes_no(matters) +
               "; no mode detectably better than 1/sqrt(d_k) anywhere: " + yes_no(balanced) +
               " (margins: 1 accuracy point, 0.05 nats of loss AUC, 20 steps)";
    out.push_back(v);
  }
  return out;
}

}  // namespace gradflow::study
