// The scaling study's metrics, estimates, seed summaries and claim verdicts
// against hand-computed values, on rows built to pass or fail each
// criterion. The parts themselves run in study_runs_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>
#include <stdexcept>

#include "examples/study/claims.h"
#include "examples/study/parts.h"
#include "tensor/ops.h"

namespace gradflow::study {
namespace {

TEST(StudyMetrics, JacobianNormMatchesTheExplicitMatrix) {
  const double p[3] = {0.5, 0.3, 0.2};
  double f2 = 0;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      double entry = (i == j ? p[i] : 0) - p[i] * p[j];
      f2 += entry * entry;
    }
  EXPECT_NEAR(softmax_jacobian_norm(p, 3), std::sqrt(f2), 1e-12);
  const double one_hot[3] = {1, 0, 0};
  EXPECT_NEAR(softmax_jacobian_norm(one_hot, 3), 0, 1e-12);
}

TEST(StudyMetrics, UniformAndOneHotRows) {
  // Row 0 uniform over 4 keys; row 1 one-hot; row 2 has two keys masked.
  Tensor w =
      from_vector({0.25, 0.25, 0.25, 0.25, 1, 0, 0, 0, 0.5, 0.5, 0, 0}, {3, 4}, DType::Float64);
  Tensor logits = from_vector({1, 1, 1, 1, 9, -3, 0, 0, 2, 2, 50, 50}, {3, 4}, DType::Float64);
  Tensor mask = from_vector({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1}, {3, 4}, DType::Float64);
  AttentionStats s = attention_stats(w, logits, mask);
  EXPECT_EQ(s.rows, 3);
  EXPECT_NEAR(s.entropy_norm, (1 + 0 + 1) / 3.0, 1e-12);  // row 2: uniform over its 2 visible keys
  EXPECT_NEAR(s.max_weight, (0.25 + 1 + 0.5) / 3.0, 1e-12);
  EXPECT_EQ(s.max_logit, 9);  // the masked 50s do not count
  double uniform4 = std::sqrt(0.25 - 2 * 4 * std::pow(0.25, 3) + 0.0625);
  double half2 = std::sqrt(0.5 - 2 * 0.25 + 0.25);
  EXPECT_NEAR(s.jacobian_norm, (uniform4 + 0 + half2) / 3.0, 1e-12);
}

TEST(StudyMetrics, SampleVariance) {
  EXPECT_NEAR(sample_variance(from_vector({1, 2, 3, 4}, DType::Float64)), 5.0 / 3.0, 1e-12);
}

TEST(StudyEstimate, MeanAndStandardError) {
  // {1, 2, 3, 4}: mean 2.5, s^2 = 5/3, se = sqrt(5/3 / 4) = 0.6454972.
  Interval e = mean_and_se({1, 2, 3, 4});
  EXPECT_DOUBLE_EQ(e.mean, 2.5);
  EXPECT_NEAR(e.se, 0.6454972243679028, 1e-12);
  EXPECT_TRUE(std::isnan(mean_and_se({7}).se));
  EXPECT_TRUE(std::isnan(mean_and_se({}).mean));
}

// Every figure of the study draws modes through mode_panels: whatever the
// modes, no panel shows more than plot::kMaxSeries of them or one colour
// twice (render_svg would refuse it), and each mode keeps one look.
TEST(StudyFigures, ModePanelsAreReadableForEveryModeSet) {
  std::vector<std::string> every = study_modes();
  every.insert(every.end(), {"log_n", "ssmax"});
  std::vector<std::pair<std::string_view, bool>> looks;
  for (const std::string& mode : every) {
    const ModeLook look = mode_look(mode);
    EXPECT_FALSE(look.color.empty()) << mode;
    EXPECT_EQ(std::count(looks.begin(), looks.end(), std::pair{look.color, look.dashed}), 0)
        << mode << " looks like another mode";
    looks.emplace_back(look.color, look.dashed);
  }
  for (const std::vector<std::string>& modes :
       {every, study_modes(), default_modes(), std::vector<std::string>{"inv_dk", "inv_2sqrt_dk"},
        std::vector<std::string>{"qk_l2norm", "learned"}}) {
    const auto panels = mode_panels(modes);
    for (const std::string& mode : modes) {
      int shown = 0;
      for (const auto& p : panels) shown += static_cast<int>(std::count(p.begin(), p.end(), mode));
      EXPECT_GE(shown, 1) << mode;
    }
    for (const auto& p : panels) {
      EXPECT_LE(p.size(), static_cast<size_t>(plot::kMaxSeries));
      for (size_t i = 0; i < p.size(); ++i)
        for (size_t j = 0; j < i; ++j)
          EXPECT_NE(mode_look(p[i]).color, mode_look(p[j]).color) << p[i] << " and " << p[j];
    }
  }
  // The default run's seven arms take two panels, the first six and then
  // the seventh beside the anchors; the init part's eleven arms three.
  const std::vector<std::string> defaults = default_modes();
  const std::vector<std::string> first_six(defaults.begin(), defaults.begin() + 6);
  ASSERT_EQ(mode_panels(default_modes()).size(), 2u);
  EXPECT_EQ(mode_panels(default_modes())[0], first_six);
  EXPECT_EQ(mode_panels(default_modes())[1],
            (std::vector<std::string>{"none", kDefaultMode, kSlowQk}));
  const auto split = mode_panels(study_modes());
  ASSERT_EQ(split.size(), 3u);
  EXPECT_EQ(split[0], first_six);
  EXPECT_EQ(mode_series("inv_sqrt_dk").emphasis, true);
  EXPECT_EQ(mode_series("qk_l2norm").color, mode_look("qk_l2norm").color);
  EXPECT_TRUE(mode_series("qk_l2norm").dashed);
}

// A figure's rows of arms each have a title of their own (--full's three
// rows had two called "more arms").
TEST(StudyFigures, EveryRowOfArmsHasItsOwnTitle) {
  EXPECT_EQ(panel_suffix(0, 1), "");
  EXPECT_EQ(panel_suffix(0, 2), ": main arms");
  EXPECT_EQ(panel_suffix(1, 2), ": more arms");
  const size_t rows = mode_panels(study_modes()).size();
  std::vector<std::string> titles;
  for (size_t i = 0; i < rows; ++i) titles.push_back(panel_suffix(i, rows));
  std::sort(titles.begin(), titles.end());
  EXPECT_EQ(std::adjacent_find(titles.begin(), titles.end()), titles.end());
  EXPECT_EQ(titles.size(), 3u);
}

TEST(StudyModes, TheControlStartsWithSmallerQueriesAndKeys) {
  Generator g1(3), g2(3);
  nn::MultiHeadAttention plain(8, {.heads = 1, .head_dim = 16, .scale = scale_mode_of("none")},
                               {g1, DType::Float64});
  nn::MultiHeadAttention control(8, {.heads = 1, .head_dim = 16, .scale = scale_mode_of(kControl)},
                                 {g2, DType::Float64});
  apply_mode_init(control, kControl);
  EXPECT_TRUE(control.scale_mode().is("none"));
  // 16^(-1/4) = 1/2 on W_Q, W_K and their biases; W_V and W_O untouched.
  EXPECT_NEAR(
      max(abs(sub(control.q_proj->weight.data(), mul(plain.q_proj->weight.data(), 0.5)))).item(), 0,
      1e-15);
  EXPECT_NEAR(
      max(abs(sub(control.k_proj->bias.data(), mul(plain.k_proj->bias.data(), 0.5)))).item(), 0,
      1e-15);
  EXPECT_EQ(max(abs(sub(control.v_proj->weight.data(), plain.v_proj->weight.data()))).item(), 0);
  nn::MultiHeadAttention other(8, {.heads = 1, .head_dim = 16, .scale = scale_mode_of("inv_dk")},
                               {g1, DType::Float64});
  Tensor before = other.q_proj->weight.data().clone();
  apply_mode_init(other, "inv_dk");
  EXPECT_EQ(max(abs(sub(other.q_proj->weight.data(), before))).item(), 0);
}

FinalRow run(const std::string& task, int64_t d_k, const std::string& mode, int64_t seed,
             double accuracy, double auc, double steps_to_90) {
  FinalRow f;
  f.run = {task, mode, d_k, seed};
  f.final_accuracy = accuracy, f.loss_auc = auc, f.steps_to_90 = steps_to_90;
  f.reached_90 = accuracy >= 0.9;
  f.max_logit = 10, f.grad_ratio_qv = 0.5;
  return f;
}

TEST(StudySummary, PairedDifferencesAndVerdictsByHand) {
  // Accuracy: none - inv_sqrt_dk per seed = {-0.10, -0.12, -0.08}: mean -0.10,
  // s = 0.02, half-width t_{.975,2} 0.02 / sqrt(3) = 4.302653 x 0.011547 = 0.0496826.
  // loss AUC differences {0.01, -0.02, 0.01}: mean 0, inside the margin: no verdict.
  std::vector<FinalRow> rows;
  const double ref_acc[3] = {0.99, 0.98, 0.97}, none_acc[3] = {0.89, 0.86, 0.89};
  const double ref_auc[3] = {0.50, 0.60, 0.55}, none_auc[3] = {0.51, 0.58, 0.56};
  for (int64_t seed = 0; seed < 3; ++seed) {
    rows.push_back(run("reverse", 16, "inv_sqrt_dk", seed, ref_acc[seed], ref_auc[seed], 100));
    rows.push_back(run("reverse", 16, "none", seed, none_acc[seed], none_auc[seed], 150 + seed));
  }
  std::vector<SettingSummary> s = summarise_training(rows);
  ASSERT_EQ(s.size(), 2u);
  const SettingSummary* none = find_setting(s, "reverse", 16, "none");
  ASSERT_NE(none, nullptr);
  EXPECT_EQ(none->runs, 3);
  EXPECT_EQ(none->reached_90, 0);  // 0.89, 0.86, 0.89
  EXPECT_NEAR(none->vs_default[0].mean, -0.10, 1e-12);
  EXPECT_NEAR(none->vs_default[0].half_width, 0.0496826, 1e-6);
  EXPECT_EQ(none->verdict[0], Comparison::Worse);
  EXPECT_NEAR(none->vs_default[1].mean, 0, 1e-12);
  EXPECT_EQ(none->verdict[1], Comparison::NoDetectableDifference);
  // The accuracy's p: t = (0.10 - 0.01) / (0.02 / sqrt(3)) = 7.794 past the
  // margin, df 2: p = 1 - t / sqrt(2 + t^2) = 0.01635 (alone in its Holm family).
  EXPECT_NEAR(none->p_value[0], 1 - 7.7942286 / std::sqrt(2 + 7.7942286 * 7.7942286), 1e-6);
  // Steps to 90%: none never got there (censored at 150, 151, 152), the
  // reference did at 100: paired censored differences {50, 51, 52}, median
  // 51; all three of one sign give the exact sign-flip p 2 / 8 = 0.25, so with
  // 3 seeds a censored comparison can only describe.
  EXPECT_NEAR(none->vs_default[2].mean, 51, 1e-12);
  EXPECT_NEAR(none->p_value[2], 0.25, 1e-12);
  EXPECT_EQ(none->verdict[2], Comparison::NoDetectableDifference);
  // Kaplan-Meier median of the reference's steps: all three at 100.
  EXPECT_NEAR(find_setting(s, "reverse", 16, "inv_sqrt_dk")->metric[2].mean, 100, 1e-12);
  const SettingSummary* ref = find_setting(s, "reverse", 16, "inv_sqrt_dk");
  EXPECT_EQ(ref->vs_default[0].n, 0);  // the reference is not compared with itself
  EXPECT_NEAR(ref->metric[0].mean, 0.98, 1e-12);
}

TEST(StudySummary, ADivergedRunDropsOnlyItsOwnPairs) {
  std::vector<FinalRow> rows;
  for (int64_t seed = 0; seed < 3; ++seed) {
    rows.push_back(run("reverse", 64, "inv_sqrt_dk", seed, 0.99, 1.0, 100));
    rows.push_back(run("reverse", 64, "none", seed, 0.2, seed == 1 ? NAN : 3.0, 350));
  }
  rows.back().diverged = true;
  std::vector<SettingSummary> s = summarise_training(rows);
  const SettingSummary* none = find_setting(s, "reverse", 64, "none");
  EXPECT_EQ(none->metric[1].n, 2);      // the NaN loss AUC is left out
  EXPECT_EQ(none->vs_default[1].n, 2);  // and so is its pair
  EXPECT_EQ(none->vs_default[0].n, 3);  // accuracy keeps all three
  EXPECT_EQ(none->diverged, 1);
}

// ||dL/dS|| of 8 layer draws around `mean`, spread +- 0.35 x `spread`.
std::vector<double> score_draws(double mean, double spread) {
  std::vector<double> out;
  for (double k : {-3.5, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5})
    out.push_back(mean + 0.1 * k * spread);
  return out;
}

// Part A rows where each constant mode's variance is exactly d_k s^2 (times
// 1 + none_error for the unscaled one), with tight standard errors; in the
// initialised layer, unscaled attention at d_k 1024 sharp (max_weight 0.85)
// and the others near uniform, and ||dL/dS|| over 8 draws: `none_scores`
// for the unscaled one at d_k 1024 (by default clearly below the others' 2.8).
std::vector<InitRow> ideal_rows(double none_error,
                                const std::vector<double>& none_scores = score_draws(1.0, 0.1)) {
  std::vector<InitRow> rows;
  for (const std::string& mode : study_modes())
    for (int64_t d : {4, 1024}) {
      InitRow r;
      r.mode = mode, r.d_k = d, r.n_keys = 64, r.draws = 256;
      double s = mode == "none" || mode == kControl ? 1
                 : mode == "inv_dk"                 ? 1.0 / d
                 : mode == "inv_2sqrt_dk"           ? 0.5 / std::sqrt(d)
                                                    : 1 / std::sqrt(d);
      r.logit_var_theory = d * s * s;
      r.logit_var =
          mean_and_se(d * s * s * (mode == "none" ? 1 + none_error : 1), 1e-4 * d * s * s, 256);
      const bool flat = mode == "inv_dk" && d == 1024, peaked = mode == "none" && d == 1024;
      r.entropy_norm = mean_and_se(flat                     ? 0.9999
                                   : peaked                 ? 0.03
                                   : mode == "inv_2sqrt_dk" ? 0.97
                                                            : 0.9,
                                   1e-4, 256);
      r.max_weight = mean_and_se(flat ? 0.017 : peaked ? 0.95 : 0.1, 1e-4, 256);
      r.jacobian_norm = mean_and_se(flat     ? std::sqrt(1.0 / 64 - 1.0 / 4096)
                                    : peaked ? 0.06
                                             : 0.18,
                                    1e-4, 256);
      r.layer_draws = 8;
      r.layer_entropy_norm = mean_and_se(peaked ? 0.1 : 0.987, 1e-3, 8);
      r.layer_max_weight = mean_and_se(peaked ? 0.85 : 0.033, 1e-3, 8);
      r.layer_jacobian_norm = mean_and_se(peaked ? 0.17 : 0.13, 1e-3, 8);
      r.grad_norm_scores_draws = peaked ? none_scores : score_draws(2.8, 0.1);
      r.grad_norm_scores = mean_and_se(r.grad_norm_scores_draws);
      r.grad_ratio_qv = mean_and_se(0.4, 0.01, 8);
      rows.push_back(r);
    }
  return rows;
}

// The verdict with this id, an identity or the claim.
const Verdict& verdict_of_id(const std::vector<Verdict>& v, const std::string& id, bool identity) {
  for (const Verdict& x : v)
    if (x.id == id && x.identity == identity) return x;
  throw std::runtime_error("no verdict " + id);
}

TEST(StudyVerdicts, FollowTheNumbers) {
  std::vector<Verdict> ok = init_claims(ideal_rows(0.01), {});
  // C1 to C4's variances are identities; C3 and C4 also make a claim.
  ASSERT_EQ(ok.size(), 8u);
  EXPECT_EQ(verdict_of_id(ok, "C1", true).verdict, "holds");  // 1% off: equivalent within 5%
  EXPECT_EQ(verdict_of_id(ok, "C2", true).verdict, "holds");
  EXPECT_EQ(verdict_of_id(ok, "C3", true).verdict, "holds");
  EXPECT_EQ(verdict_of_id(ok, "C4", true).verdict, "holds");
  EXPECT_EQ(verdict_of_id(ok, "C3", false).verdict, "holds");  // without training: flatness
  EXPECT_EQ(verdict_of_id(ok, "C5", false).verdict, "holds");  // saturated, small Jacobian
  EXPECT_EQ(verdict_of_id(ok, "C6", false).verdict, "holds");
  EXPECT_EQ(train_claims({}, {}, {})[0].verdict, "unclear");  // C7 needs training
  std::vector<Verdict> off = init_claims(ideal_rows(0.2), {});
  EXPECT_EQ(off[0].verdict, "does not hold");  // a 20% error, well outside 1 +- 5%
  EXPECT_NE(off[0].reason.find("1.2"), std::string::npos) << off[0].reason;
  std::vector<Verdict> edge = init_claims(ideal_rows(0.049), {});
  // TOST: 1.049 +- 1.645 x 1e-4 x 1.049 (the 90% interval) lies within
  // [0.95, 1.05]: equivalent, holds; at 5.5% the 95% interval is wholly outside.
  EXPECT_EQ(edge[0].verdict, "holds");
  EXPECT_EQ(init_claims(ideal_rows(0.055), {})[0].verdict, "does not hold");
  // 5.0% off with se 1e-4: neither shown equivalent nor wholly outside.
  EXPECT_EQ(init_claims(ideal_rows(0.05), {})[0].verdict, "unclear");
}

// C5's criterion on the gradient at the scores is judged draw by draw
// (the same layers for every mode), never from the means alone.
TEST(StudyVerdicts, C5ComparesTheScoresDrawByDraw) {
  auto scores_row = [](const Verdict& v) {
    for (const CriterionResult& r : v.results)
      if (r.criterion == "c") return r;
    throw std::runtime_error("no row for C5's criterion c");
  };
  // Clearly smaller (the default rows): holds, as above.
  const std::vector<Verdict> ideal = init_claims(ideal_rows(0.01), {});
  EXPECT_TRUE(scores_row(verdict_of_id(ideal, "C5", false)).passed);
  // A mean below 1/sqrt(d_k)'s 2.8, the paired interval across 0: not smaller.
  std::vector<Verdict> crossing = init_claims(ideal_rows(0.01, score_draws(2.79, 4.0)), {});
  const Verdict& v = verdict_of_id(crossing, "C5", false);
  EXPECT_EQ(v.verdict, "partly holds");
  const CriterionResult c = scores_row(v);
  EXPECT_FALSE(c.passed);
  EXPECT_LT(c.estimate.lo, 0);
  EXPECT_GT(c.estimate.hi, 0);
  EXPECT_NE(v.reason.find("no detectable difference"), std::string::npos) << v.reason;
}

// C3 in training is judged on the focus the claim names (the key layer's
// entropy over steps 10 to 50, 1/d_k against 1/sqrt(d_k), paired by seed)
// and on the learning (the loss over training at the largest d_k): its row's
// criteria (b) and (c), computed from the train part's rows.
TEST(StudyVerdicts, C3JudgesTheFocusAndTheLearningInTraining) {
  auto train_with = [](double flatter_by, double worse_by) {
    TrainResult b;
    for (const char* task : {"reverse", "recall"})
      for (const char* mode : {"inv_dk", kDefaultMode})
        for (int seed = 0; seed < 3; ++seed) {
          const bool flat = mode == std::string("inv_dk");
          for (int64_t step = 0; step <= 80; step += 2) {
            LayerRow r{.run = {task, mode, 256, seed}, .step = step, .layer = key_layer(task)};
            r.entropy_norm = 0.5 + 0.01 * seed + (flat ? flatter_by : 0);
            b.layers.push_back(r);
          }
          b.finals.push_back({.run = {task, mode, 256, seed},
                              .loss_auc_budget = 0.5 + 0.02 * seed + (flat ? worse_by : 0)});
        }
    return b;
  };
  const TrainResult flat = train_with(0.3, 0.2), close = train_with(0.05, 0.2),
                    same = train_with(0.3, 0.0);
  // The verdicts are kept: verdict_of_id returns a reference into them.
  const std::vector<Verdict> with_flat = init_claims(ideal_rows(0.01), {}, &flat),
                             with_close = init_claims(ideal_rows(0.01), {}, &close),
                             with_same = init_claims(ideal_rows(0.01), {}, &same),
                             untrained = init_claims(ideal_rows(0.01), {});
  const Verdict& holds = verdict_of_id(with_flat, "C3", false);
  EXPECT_EQ(holds.verdict, "holds") << holds.reason;
  // Flatter by less than the margin: 3 of 5 rows (the start, and the loss on both tasks).
  const Verdict& partly = verdict_of_id(with_close, "C3", false);
  EXPECT_EQ(partly.verdict, "partly holds") << partly.reason;
  for (const CriterionResult& r : partly.results)
    EXPECT_EQ(r.passed, r.criterion != "b") << r.criterion << " " << r.task;
  // Flat, but learning as well: the learning criterion fails.
  EXPECT_EQ(verdict_of_id(with_same, "C3", false).verdict, "partly holds");
  // Without training it is judged at initialisation, and says the rest was not tested.
  const Verdict& init_only = verdict_of_id(untrained, "C3", false);
  EXPECT_EQ(init_only.verdict, "holds");
  EXPECT_NE(init_only.reason.find("not tested in this run"), std::string::npos);
}

// An 8-layer stack of (mode, placement) over 8 draws: whole blocks' token
// cosine from `first` to first + `rise`, the rise since layer 1 paired by
// draw with a spread across draws that grows with `spread`; attention alone
// from `pure_first` to 1.
void add_stack(std::vector<DepthRow>& rows, const std::string& mode, const std::string& placement,
               double first, double rise, double spread, double pure_first) {
  for (int64_t l = 0; l < 8; ++l) {
    const double f = static_cast<double>(l) / 7;
    DepthRow r;
    r.mode = mode, r.norm_placement = placement, r.layers = 8, r.layer = l, r.draws = 8;
    r.grad_norm_wq = r.grad_norm_wv = r.grad_norm_ff = mean_and_se(1.0, 0.01, 8);
    r.token_cosine = mean_and_se(first + f * rise, 0.002, 8);
    r.pure_attention_cosine = mean_and_se(pure_first + f * (1 - pure_first), 0.001, 8);
    std::vector<double> d;
    for (double k : {-3.5, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 3.5})
      d.push_back(f * (rise + 0.1 * k * spread));
    r.token_cosine_rise = t_interval(d);
    rows.push_back(r);
  }
}

// 1/sqrt(d_k)'s stacks with these rises; 1/d_k and unscaled attention alone
// for C15's last criterion (1/d_k's more alike after one layer).
std::vector<DepthRow> depth_rows(double pre_rise, double post_rise, double spread) {
  std::vector<DepthRow> rows;
  add_stack(rows, kDefaultMode, "pre_ln", 0.023, pre_rise, spread, 0.78);
  add_stack(rows, kDefaultMode, "post_ln", 0.027, post_rise, spread, 0.78);
  add_stack(rows, "inv_dk", "pre_ln", 0.02, 0.01, 0.01, 0.996);
  add_stack(rows, "none", "pre_ln", 0.02, 0.01, 0.01, 0.14);
  return rows;
}

// C15's criterion "whole blocks still grow alike": the paired rise from
// layer 1 to the last above 0 in both placements. Both outcomes, and the
// finding's title with them.
TEST(StudyVerdicts, C15AsksWhetherWholeBlocksStillGrowAlike) {
  auto rise_rows = [](const Verdict& v) {
    std::string out;
    for (const CriterionResult& r : v.results)
      if (r.criterion == "c") out += r.task + (r.passed ? " yes " : " no ");
    return out;
  };
  {
    // Rising in both (0.058 and 0.13, paired half-widths about 0.004): holds.
    const Section s = depth_section(DepthOptions{}, depth_rows(0.058, 0.13, 0.02));
    const Verdict& v = verdict_of_id(s.claims, "C15", false);
    EXPECT_EQ(v.verdict, "holds") << v.reason;
    EXPECT_EQ(rise_rows(v), "pre-LN yes post-LN yes ");
    EXPECT_EQ(finding_from(v).title, claim("C15").plain);
  }
  {
    // pre-LN's rise 0.004 with a paired half-width of about 0.04: no
    // detectable rise there, so that row fails and C15 partly holds.
    const Section s = depth_section(DepthOptions{}, depth_rows(0.004, 0.13, 0.2));
    const Verdict& v = verdict_of_id(s.claims, "C15", false);
    EXPECT_EQ(v.verdict, "partly holds") << v.reason;
    EXPECT_EQ(rise_rows(v), "pre-LN no post-LN yes ");
    EXPECT_EQ(finding_from(v).title, "Partly: " + claim("C15").plain);
  }
}

TEST(StudyVerdicts, C7WeighsThePairedComparisons) {
  std::vector<FinalRow> rows;
  for (int64_t seed = 0; seed < 3; ++seed) {
    rows.push_back(run("reverse", 64, "inv_sqrt_dk", seed, 0.99 - 0.01 * seed, 0.5, 100));
    rows.push_back(run("reverse", 64, "none", seed, 0.70 - 0.02 * seed, 1.5, 250));
    rows.push_back(run("reverse", 64, "inv_dk", seed, 0.99 - 0.011 * seed, 0.5, 100));
  }
  std::vector<Verdict> v = train_claims(summarise_training(rows), rows, {});
  EXPECT_EQ(v[0].verdict, "holds") << v[0].measured;  // none worse, nothing better
  // Make inv_dk clearly better than 1/sqrt(d_k): C7 then only partly holds.
  for (FinalRow& r : rows)
    if (r.run.mode == "inv_dk") r.final_accuracy += 0.005, r.loss_auc = 0.3 + 0.01 * r.run.seed;
  v = train_claims(summarise_training(rows), rows, {});
  EXPECT_EQ(v[0].verdict, "partly holds") << v[0].measured;
  EXPECT_NE(v[0].measured.find("inv_dk"), std::string::npos) << v[0].measured;
}

}  // namespace
}  // namespace gradflow::study
