// The study's qk-rate part (examples/study/qk_rate*.cpp): the best
// multiplier's parabola, alpha recovered from planted exponents, the failure
// boundary of planted runs, a run's start set to sigma0 and its multiplier
// reaching W_Q and W_K, and a tiny part that writes its rows, verdicts and
// what it cannot separate.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include "examples/study/claims.h"
#include "examples/study/qk_rate.h"

namespace gradflow::study {
namespace {

TEST(StudyQkRate, TheBestPowerIsTheParabolasVertexOrTheGridsEnd) {
  const std::vector<int> powers = {-3, -2, -1, 0, 1};
  std::vector<double> auc;
  for (int p : powers) auc.push_back(0.4 + (p + 0.6) * (p + 0.6));  // vertex at -0.6
  const BestPower b = best_power(powers, auc);
  EXPECT_NEAR(b.power, -0.6, 1e-12);
  EXPECT_FALSE(b.at_edge);
  const BestPower edge = best_power(powers, {0.1, 0.2, 0.3, 0.4, 0.5});
  EXPECT_EQ(edge.power, -3);
  EXPECT_TRUE(edge.at_edge);
  EXPECT_THROW(best_power(powers, {1, 2}), Error);
}

TEST(StudyQkRate, AlphaIsTheSlopeOfLogMStarAgainstLogDk) {
  // m* = 4^p = 3 d_k^(-1/4): p = (log 3 - log(d_k) / 4) / log 4.
  std::vector<double> d_ks = {16, 32, 64, 128}, powers;
  for (double d : d_ks) powers.push_back((std::log(3.0) - 0.25 * std::log(d)) / std::log(4.0));
  EXPECT_NEAR(fitted_alpha(d_ks, powers), -0.25, 1e-12);
  EXPECT_NEAR(fitted_alpha(d_ks, {-1, -1, -1, -1}), 0.0, 1e-12);
}

// Runs whose loss AUC is a parabola in the power around p*(d_k), with noise:
// p* planted as alpha log(d_k) / log 4 + c.
std::vector<QkRateRow> planted(double alpha, double noise, int64_t seeds) {
  std::mt19937_64 gen(7);
  std::normal_distribution<double> normal(0, noise);
  std::vector<QkRateRow> rows;
  for (int64_t d_model : {64, 128, 256, 512})
    for (int64_t seed = 0; seed < seeds; ++seed)
      for (int power : {-3, -2, -1, 0, 1}) {
        const double best = alpha * std::log(d_model / 4.0) / std::log(4.0);
        QkRateRow r{.task = "recall",
                    .arm = "none",
                    .d_model = d_model,
                    .d_k = d_model / 4,
                    .seed = seed,
                    .sigma0 = 1,
                    .power = power};
        r.run.loss_auc_budget = 0.5 + 0.2 * (power - best) * (power - best) + normal(gen);
        rows.push_back(r);
      }
  return rows;
}

TEST(StudyQkRate, APlantedExponentIsRecoveredWithAnIntervalAroundIt) {
  for (double alpha : {0.0, -0.25}) {
    const AlphaFit fit = fit_alpha(planted(alpha, 0.01, 10), "recall", 0.95, 0);
    ASSERT_EQ(fit.d_ks.size(), 4u);
    EXPECT_NEAR(fit.alpha.mean, alpha, 0.03) << alpha;
    EXPECT_LT(fit.alpha.lo, alpha) << alpha;
    EXPECT_GT(fit.alpha.hi, alpha) << alpha;
    EXPECT_LT(fit.alpha.hi - fit.alpha.lo, 0.2) << alpha;
  }
  // Noise as large as the parabola's depth leaves a wide interval.
  const AlphaFit noisy = fit_alpha(planted(0, 0.5, 3), "recall", 0.95, 0);
  EXPECT_GT(noisy.alpha.hi - noisy.alpha.lo, 0.2);
  // One seed: no interval.
  EXPECT_TRUE(std::isnan(fit_alpha(planted(0, 0.01, 1), "recall", 0.95, 0).alpha.lo));
}

// Recall runs over a grid whose solved ones are those with a logit step below
// `edge(d_model)`: the boundary found is between the neighbours around it.
std::vector<QkRateRow> boundary_runs(double edge_64, double edge_512) {
  std::vector<QkRateRow> rows;
  for (int64_t d_model : {64, 512})
    for (int64_t seed = 0; seed < 4; ++seed)
      for (int power : {-3, -2, -1, 0, 1}) {
        const double step = 0.05 * std::pow(4.0, power + 3) * (1 + 0.01 * seed);  // 0.05 .. 12.8
        QkRateRow r{.task = "recall",
                    .arm = "none",
                    .d_model = d_model,
                    .d_k = d_model / 4,
                    .seed = seed,
                    .sigma0 = 1,
                    .power = power};
        r.logit_step = step;
        r.solved = step < (d_model == 64 ? edge_64 : edge_512);
        r.run.loss_auc_budget = r.solved ? 0.1 : 2.0;
        r.run.qk_std_init = 1;
        rows.push_back(r);
      }
  return rows;
}

TEST(StudyQkRate, TheFailureBoundaryIsWhereSolvedRunsGiveWayToUnsolvedOnes) {
  const std::vector<QkRateRow> same = boundary_runs(1.0, 1.0);
  // Solved up to 0.8 (power -1), unsolved from 3.2 (power 0): the boundary is
  // the geometric midpoint of the seeds' steps around it, near sqrt(0.8 3.2) = 1.6.
  EXPECT_NEAR(failure_boundary(same, 64), 1.6, 0.05);
  const Interval equal = boundary_ratio(same, 0.90, 0);
  EXPECT_NEAR(equal.mean, 1.0, 0.02);
  EXPECT_EQ(qk_rate_boundary_claim(same, 0).verdict, "holds");
  // At d_model 512 the runs fail a grid step earlier: a ratio of 4.
  const Interval apart = boundary_ratio(boundary_runs(1.0, 0.3), 0.90, 0);
  EXPECT_NEAR(apart.mean, 4.0, 0.1);
  EXPECT_EQ(qk_rate_boundary_claim(boundary_runs(1.0, 0.3), 0).verdict, "does not hold");
  // No run fails: no boundary.
  EXPECT_TRUE(std::isnan(failure_boundary(boundary_runs(100, 100), 64)));
}

TEST(StudyQkRate, ARunStartsAtSigma0AndItsMultiplierMovesTheLogits) {
  QkRateOptions o;
  o.tasks = {"recall", "charlm"};
  o.d_models = {16};
  o.sigmas = {3};
  o.powers = {-3, 1};
  o.references = {};
  o.seeds = o.other_seeds = o.few_seeds = 1;
  o.recall_steps = o.charlm_steps = 20;
  const std::vector<RunSpec> runs = qk_rate_runs(Settings{}, o);
  ASSERT_EQ(runs.size(), 4u);
  std::vector<double> steps;
  for (const RunSpec& spec : runs) {
    EXPECT_EQ(spec.key.d_k, 4);
    EXPECT_EQ(spec.task.model.heads, 4);
    const RunOutput out = train_one(spec);
    // Each layer's q.k std set to 3 on the held-out batch; their mean is 3.
    EXPECT_NEAR(out.final.qk_std_init, 3.0, 3e-5) << spec.key.task;
    double sum = 0, n = 0;
    for (const LayerRow& r : out.layers)
      if (r.layer == key_layer(spec.key.task) && r.step < 20) sum += r.logit_change, ++n;
    steps.push_back(sum / n);
  }
  // m = 4 against m = 1/64: 256 times W_Q's and W_K's rate moves the logits
  // further, though not 256 times: the embeddings and norms, at the full
  // rate, move them too (2.3x and 2.7x here, over 20 steps at d_model 16).
  EXPECT_GT(steps[1], 1.5 * steps[0]) << steps[0] << " " << steps[1];
  EXPECT_GT(steps[3], 1.5 * steps[2]) << steps[2] << " " << steps[3];
}

TEST(StudyQkRate, ATinyPartWritesARowPerRunAndJudgesItsThreeClaims) {
  QkRateOptions o;
  o.d_models = {8, 16};
  o.sigmas = {1};
  o.powers = {-1, 0, 1};
  o.references = {"inv_sqrt_dk"};
  o.seeds = o.other_seeds = o.few_seeds = 2;
  o.recall_steps = o.charlm_steps = 6;
  Settings settings;
  settings.threads = 2;
  const std::vector<QkRateRow> rows = run_qk_rate(settings, o);
  // 2 tasks x 2 widths x 4 cells x 2 seeds.
  ASSERT_EQ(rows.size(), 32u);
  const Section sec = qk_rate_section(o, rows, 0);
  ASSERT_EQ(sec.csvs.size(), 1u);
  EXPECT_EQ(sec.csvs[0].rows.size(), 32u);
  std::set<std::string> ids;
  for (const Verdict& v : sec.claims) ids.insert(v.id);
  EXPECT_EQ(ids, (std::set<std::string>{"C28", "C29", "C30"}));
  // Every start that was set is sigma0's: the check passes in any run.
  for (const Verdict& v : sec.claims)
    for (const CriterionResult& r : v.results)
      if (r.criterion == "start") {
        EXPECT_TRUE(r.passed) << v.id << ": " << r.text;
      }
  EXPECT_NE(sec.markdown.find("| recall | 2 | none, sigma0 1, m 1/4 | 2 |"), std::string::npos)
      << sec.markdown;
  // The terminal's line gives alpha per task and the boundary ratio, each with its interval.
  EXPECT_EQ(sec.terminal_summary.find("qk-rate: alpha in m* ~ d_k^alpha, 90% interval: recall "),
            0u)
      << sec.terminal_summary;
  EXPECT_NE(sec.terminal_summary.find(", charlm "), std::string::npos) << sec.terminal_summary;
  EXPECT_NE(sec.terminal_summary.find("; recall's failure boundary, largest over smallest: "),
            std::string::npos)
      << sec.terminal_summary;
  ASSERT_EQ(sec.plots.size(), 1u);
  EXPECT_NE(sec.plots[0].svg.find("</svg>"), std::string::npos);

  // Its report says what this part cannot separate, not the default run's list (d_model 32);
  // beside a part that shares the study's design, both.
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / "gradflow_qk_rate_report";
  auto report = [&](const std::vector<Section>& sections) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    write_report(dir.string(), {.command = "scaling_study --parts qk-rate"}, sections);
    std::ifstream in(dir / "report.md");
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  };
  const std::string alone = report({sec});
  EXPECT_NE(alone.find("- **The Q/K rate and the rest of the model's (qk-rate).**"),
            std::string::npos)
      << alone;
  EXPECT_NE(alone.find("own seeds, 2 at d_model 16"), std::string::npos) << alone;
  EXPECT_EQ(alone.find("d_k above d_model"), std::string::npos) << alone;
  const std::string beside = report({Section{.part = "init"}, sec});
  EXPECT_NE(beside.find("(qk-rate).**"), std::string::npos);
  EXPECT_NE(beside.find("- **d_k above d_model.**"), std::string::npos) << beside;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gradflow::study
