// The train part's mechanism claims (C20 on, claims_mechanism.cpp) judged
// on hand-built rows, both outcomes, from their declared criteria alone; and
// the factorial's effects (factorial.cpp) by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "examples/study/claims.h"
#include "examples/study/parts.h"

namespace gradflow::study {
namespace {

// Key-layer rows of (task, mode) at d_k 256 for `seeds` seeds: at steps 0,
// 2, ..., 48, then 60, 70, ..., 190; `value(seed, step)` for the gradient at
// the logits, the entropy and the transmission, logit_change `step_size`.
void add_rows(TrainResult& b, const std::string& task, const std::string& mode, int seeds,
              const std::function<double(int, int64_t)>& value, double step_size = 1) {
  for (int seed = 0; seed < seeds; ++seed) {
    std::vector<int64_t> steps;
    for (int64_t s = 0; s < 50; s += 2) steps.push_back(s);
    for (int64_t s = 60; s < 200; s += 10) steps.push_back(s);
    for (int64_t step : steps) {
      LayerRow r{.run = {task, mode, 256, seed}, .step = step, .layer = key_layer(task)};
      r.grad_norm_logits = r.entropy_norm = r.transmission = r.correct_key_weight =
          value(seed, step);
      r.logit_change = step_size * (1 + 0.01 * seed);
      b.layers.push_back(r);
    }
    b.finals.push_back({.run = {task, mode, 256, seed}});
  }
}

const CriterionResult* row_of(const Verdict& v, const std::string& criterion,
                              const std::string& task) {
  for (const CriterionResult& r : v.results)
    if (r.criterion == criterion && r.task == task) return &r;
  return nullptr;
}

TEST(StudyMechanism, C20AsksForAFallAgainstTheArmsOwnStart) {
  // The unscaled gradient at the scores falls to a tenth of its own start.
  TrainResult falls;
  for (const char* task : {"reverse", "recall"})
    add_rows(falls, task, "none", 3,
             [](int seed, int64_t step) { return (step < 20 ? 1.0 : 0.1) * (1.0 + 0.1 * seed); });
  Verdict v = judge_on_runs("C20", falls);
  EXPECT_EQ(v.verdict, "holds") << v.reason;
  const CriterionResult* r = row_of(v, "a", "reverse");
  ASSERT_NE(r, nullptr);
  EXPECT_NEAR(std::exp(r->estimate.mean), 0.1,
              1e-9);  // the log of the window's mean, minus the start's
  EXPECT_EQ(r->estimate.n, 3);

  // Unscaled attention's gradient grows while 1/sqrt(d_k)'s grows more: its
  // ratio to the reference falls, but it does not collapse. C20 does not hold.
  TrainResult grows;
  for (const char* task : {"reverse", "recall"}) {
    add_rows(grows, task, "none", 3,
             [](int seed, int64_t step) { return (step < 20 ? 1.0 : 1.4) * (1.0 + 0.1 * seed); });
    add_rows(grows, task, kDefaultMode, 3,
             [](int seed, int64_t step) { return (step < 20 ? 1.0 : 10.0) * (1.0 + 0.2 * seed); });
  }
  EXPECT_EQ(judge_on_runs("C20", grows).verdict, "does not hold");
  // ... and that is C23(b): the gradient at the input grows less than 1/sqrt(d_k)'s.
  const Verdict c23 = judge_on_runs("C23", grows);
  const CriterionResult* growth = row_of(c23, "b", "recall");
  ASSERT_NE(growth, nullptr);
  EXPECT_NEAR(std::exp(growth->estimate.mean), 0.14, 1e-9);
  EXPECT_TRUE(growth->passed);

  // One seed: no interval, no verdict.
  TrainResult one;
  add_rows(one, "reverse", "none", 1, [](int, int64_t step) { return step < 20 ? 1.0 : 0.1; });
  EXPECT_EQ(judge_on_runs("C20", one).verdict, "unclear");
  // No arm of it trained: not tested, and mechanism_claims does not mention it.
  TrainResult other;
  add_rows(other, "reverse", "inv_dk", 3, [](int, int64_t) { return 1.0; });
  for (const Verdict& m : mechanism_claims(other)) EXPECT_NE(m.id, "C20");
}

TEST(StudyMechanism, C21CountsItsChecksApartFromItsEvidence) {
  TrainResult b;
  for (const char* task : {"reverse", "recall"}) {
    // The same start; the control's logits move 4x as far and its entropy falls.
    add_rows(b, task, kReparam, 3, [](int seed, int64_t) { return 0.9 - 0.01 * seed; });
    add_rows(
        b, task, kControl, 3,
        [](int seed, int64_t step) { return (step == 0 ? 0.9 : 0.3) - 0.01 * seed; }, 4);
  }
  Verdict v = judge_on_runs("C21", b);
  EXPECT_EQ(v.verdict, "holds") << v.reason;
  // The checks are printed apart, never in the reason the verdict counts.
  EXPECT_NE(v.checks.find("(a)"), std::string::npos) << v.checks;
  EXPECT_NE(v.checks.find("(b)"), std::string::npos) << v.checks;
  EXPECT_EQ(v.reason.find("(a)"), std::string::npos) << v.reason;
  EXPECT_NEAR(std::exp(row_of(v, "b", "reverse")->estimate.mean), 4, 1e-9);

  // Different starts: the arms are not what the claim declared, so no
  // verdict, however the evidence reads.
  TrainResult apart;
  add_rows(apart, "reverse", kReparam, 3, [](int seed, int64_t) { return 0.9 - 0.01 * seed; });
  add_rows(
      apart, "reverse", kControl, 3,
      [](int seed, int64_t step) { return (step == 0 ? 0.8 : 0.3) - 0.01 * seed; }, 4);
  v = judge_on_runs("C21", apart);
  EXPECT_EQ(v.verdict, "unclear") << v.reason;
  EXPECT_NE(v.reason.find("manipulation check failed"), std::string::npos) << v.reason;

  // The same steps, a sharper control by only 0.05: the evidence fails.
  TrainResult close;
  add_rows(close, "recall", kReparam, 3, [](int seed, int64_t) { return 0.9 - 0.01 * seed; });
  add_rows(
      close, "recall", kControl, 3,
      [](int seed, int64_t step) { return (step == 0 ? 0.9 : 0.85) - 0.01 * seed; }, 4);
  EXPECT_EQ(judge_on_runs("C21", close).verdict, "does not hold");
}

// A "solved" criterion compares two arms' shares of solved runs, each over
// its own runs, with Newcombe's interval.
TEST(StudyMechanism, ASolvedCriterionComparesShares) {
  TrainResult b;
  for (int seed = 0; seed < 10; ++seed) {
    b.finals.push_back({.run = {"recall", "none", 256, seed}, .reached_99 = false});
    b.finals.push_back({.run = {"recall", kDefaultMode, 256, seed}, .reached_99 = true});
  }
  const std::vector<CriterionResult> rows = evaluate("C22", criterion("C22", "c"), b);
  ASSERT_EQ(rows.size(), 1u);
  const Interval expected = proportion_difference(0, 10, 10, 10);
  EXPECT_DOUBLE_EQ(rows[0].estimate.mean, -1);
  EXPECT_DOUBLE_EQ(rows[0].estimate.hi, expected.hi);
  EXPECT_TRUE(rows[0].passed);
}

// Four arms of one (task, d_k), three seeds: every effect of the 2 x 2 by hand.
TEST(StudyFactorial, EffectsByHand) {
  TrainResult b;
  // seed -> none, slow, control, reparam
  const std::map<int64_t, std::array<double, 4>> accuracy = {
      {0, {0.5, 0.7, 0.9, 1.0}}, {1, {0.4, 0.6, 0.8, 1.0}}, {2, {0.6, 0.7, 0.9, 0.9}}};
  const std::array<const char*, 4> arms = {"none", kSlowQk, kControl, kReparam};
  for (const auto& [seed, y] : accuracy)
    for (size_t c = 0; c < 4; ++c)
      b.finals.push_back({.run = {"reverse", arms[c], 256, seed}, .final_accuracy = y[c]});
  std::vector<FactorialRow> rows = summarise_factorial(b);
  rows.erase(std::remove_if(rows.begin(), rows.end(),
                            [](const FactorialRow& r) {
                              return r.outcome.find("accuracy") == std::string::npos;
                            }),
             rows.end());
  ASSERT_EQ(rows.size(), 1u);
  std::vector<double> start, rate, interaction, start_alone, rate_alone;
  for (const auto& [seed, y] : accuracy) {
    start.push_back((y[2] + y[3] - y[0] - y[1]) / 2);
    rate.push_back((y[1] + y[3] - y[0] - y[2]) / 2);
    interaction.push_back((y[3] - y[2]) - (y[1] - y[0]));
    start_alone.push_back(y[2] - y[0]);
    rate_alone.push_back(y[1] - y[0]);
  }
  const std::map<std::string, std::vector<double>> expected = {{"start", start},
                                                               {"rate", rate},
                                                               {"interaction", interaction},
                                                               {"start alone", start_alone},
                                                               {"rate alone", rate_alone}};
  for (const auto& [name, values] : expected) {
    ASSERT_TRUE(rows[0].effects.count(name)) << name;
    EXPECT_NEAR(rows[0].effects.at(name).mean, t_interval(values).mean, 1e-12) << name;
    EXPECT_NEAR(rows[0].effects.at(name).half_width, t_interval(values).half_width, 1e-12) << name;
  }
  EXPECT_NEAR(rows[0].cells[3].mean, (1.0 + 1.0 + 0.9) / 3, 1e-12);
  EXPECT_NE(factorial_table(rows).find("| reverse | 256 | final accuracy (points) |"),
            std::string::npos);
  // Without the fourth cell there is no factorial.
  b.finals.erase(std::remove_if(b.finals.begin(), b.finals.end(),
                                [](const FinalRow& r) { return r.run.mode == kSlowQk; }),
                 b.finals.end());
  EXPECT_TRUE(summarise_factorial(b).empty());
}

}  // namespace
}  // namespace gradflow::study
