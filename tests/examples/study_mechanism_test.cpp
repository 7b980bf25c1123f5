// The train part's mechanism (mechanism.cpp: C20, C21) and factorial
// (factorial.cpp): the criteria on hand-built rows, both outcomes; and the
// numbers the part's findings quote, recomputed from the CSV files the run
// writes (train_csvs), not from the structs the findings were built from.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "examples/study/parts.h"
#include "tensor/parallel.h"

namespace gradflow::study {
namespace {

// Key-layer rows of (task, mode) at d_k 256 for `seeds` seeds: at steps 0,
// 2, ..., 48, then 60, 70, ..., 190; `value(seed, step)` for both the
// gradient at the logits and the entropy, logit_change 1 (times `step_size`).
void add_rows(TrainResult& b, const std::string& task, const std::string& mode, int seeds,
              const std::function<double(int, int64_t)>& value, double step_size = 1) {
  for (int seed = 0; seed < seeds; ++seed) {
    std::vector<int64_t> steps;
    for (int64_t s = 0; s < 50; s += 2) steps.push_back(s);
    for (int64_t s = 60; s < 200; s += 10) steps.push_back(s);
    for (int64_t step : steps) {
      LayerRow r{.run = {task, mode, 256, seed}, .step = step, .layer = key_layer(task)};
      r.grad_norm_logits = value(seed, step);
      r.entropy_norm = value(seed, step);
      r.logit_change = step_size * (1 + 0.01 * seed);
      b.layers.push_back(r);
    }
    b.finals.push_back({.run = {task, mode, 256, seed}});
  }
}

TEST(StudyMechanism, TheGradientAtTheScoresCollapsesInTraining) {
  TrainResult b;
  for (const char* task : {"reverse", "recall"}) {
    add_rows(b, task, kDefaultMode, 3, [](int seed, int64_t) { return 1.0 + 0.1 * seed; });
    // Equal at the start, a tenth from step 20 on.
    add_rows(b, task, "none", 3, [](int seed, int64_t step) {
      return (step < 20 ? 1.0 : 0.1) * (1.0 + 0.1 * seed) * (1 + 0.01 * seed);
    });
  }
  Verdict v = logit_gradient_claim(b);
  EXPECT_EQ(v.id, "C20");
  EXPECT_EQ(v.verdict, "holds") << v.reason;
  EXPECT_NE(v.measured.find("from step 60 on 0.1x"), std::string::npos) << v.measured;

  // Collapsed by half only: not past the factor of 4.
  TrainResult half;
  for (const char* task : {"reverse", "recall"}) {
    add_rows(half, task, kDefaultMode, 3, [](int seed, int64_t) { return 1.0 + 0.1 * seed; });
    add_rows(half, task, "none", 3, [](int seed, int64_t step) {
      return (step < 20 ? 1.0 : 0.5) * (1.0 + 0.1 * seed) * (1 + 0.01 * seed);
    });
  }
  v = logit_gradient_claim(half);
  EXPECT_EQ(v.verdict, "partly holds") << v.reason;
  EXPECT_NE(v.reason.find("collapsed from step 60 on (whole interval below it): no"),
            std::string::npos)
      << v.reason;

  // One seed: no interval, no verdict.
  TrainResult one;
  add_rows(one, "reverse", kDefaultMode, 1, [](int, int64_t) { return 1.0; });
  add_rows(one, "reverse", "none", 1, [](int, int64_t step) { return step < 20 ? 1.0 : 0.1; });
  EXPECT_EQ(logit_gradient_claim(one).verdict, "unclear");
  // Neither arm: nothing to judge.
  EXPECT_EQ(logit_gradient_claim(TrainResult{}).verdict, "unclear");
}

TEST(StudyMechanism, EntropyCollapseFollowsTheStepNotTheStart) {
  TrainResult b;
  for (const char* task : {"reverse", "recall"}) {
    // The same start; the control's logits move 4x as far and its entropy falls.
    add_rows(b, task, kReparam, 3, [](int seed, int64_t) { return 0.9 - 0.01 * seed; });
    add_rows(
        b, task, kControl, 3,
        [](int seed, int64_t step) { return (step == 0 ? 0.9 : 0.3) - 0.01 * seed; }, 4);
  }
  Verdict v = entropy_collapse_claim(b);
  EXPECT_EQ(v.id, "C21");
  EXPECT_EQ(v.verdict, "holds") << v.reason;
  EXPECT_NE(v.measured.find("control over none_reparam 4x"), std::string::npos) << v.measured;

  // Different starts: the comparison no longer isolates the step.
  TrainResult apart;
  add_rows(apart, "reverse", kReparam, 3, [](int seed, int64_t) { return 0.9 - 0.01 * seed; });
  add_rows(
      apart, "reverse", kControl, 3,
      [](int seed, int64_t step) { return (step == 0 ? 0.8 : 0.3) - 0.01 * seed; }, 4);
  v = entropy_collapse_claim(apart);
  EXPECT_EQ(v.verdict, "partly holds") << v.reason;
  EXPECT_NE(v.reason.find("the same entropy at step 0: no"), std::string::npos) << v.reason;
}

// Four arms of one (task, d_k), a seed each: the main effects and the
// interaction by hand.
TEST(StudyFactorial, MainEffectsAndInteractionByHand) {
  TrainResult b;
  // seed -> none, slow, control, reparam
  const std::map<int64_t, std::array<double, 4>> accuracy = {
      {0, {0.5, 0.7, 0.9, 1.0}}, {1, {0.4, 0.6, 0.8, 1.0}}, {2, {0.6, 0.7, 0.9, 0.9}}};
  const std::array<const char*, 4> arms = {"none", kSlowQk, kControl, kReparam};
  for (const auto& [seed, y] : accuracy)
    for (size_t c = 0; c < 4; ++c)
      b.finals.push_back({.run = {"reverse", arms[c], 256, seed}, .final_accuracy = y[c]});
  const std::vector<FactorialRow> rows = summarise_factorial(b);
  ASSERT_EQ(rows.size(), 1u);
  std::vector<double> start, rate, interaction;
  for (const auto& [seed, y] : accuracy) {
    start.push_back((y[2] + y[3] - y[0] - y[1]) / 2);
    rate.push_back((y[1] + y[3] - y[0] - y[2]) / 2);
    interaction.push_back((y[3] - y[2]) - (y[1] - y[0]));
  }
  EXPECT_NEAR(rows[0].start.mean, t_interval(start).mean, 1e-12);
  EXPECT_NEAR(rows[0].start.half_width, t_interval(start).half_width, 1e-12);
  EXPECT_NEAR(rows[0].rate.mean, t_interval(rate).mean, 1e-12);
  EXPECT_NEAR(rows[0].interaction.mean, t_interval(interaction).mean, 1e-12);
  EXPECT_NEAR(rows[0].start_via_control.mean, (0.4 + 0.4 + 0.3) / 3, 1e-12);
  EXPECT_NEAR(rows[0].accuracy[3], (1.0 + 1.0 + 0.9) / 3, 1e-12);
  const Finding f = factorial_finding(rows);
  EXPECT_NE(f.text.find("the small start gains " + significant(100 * rows[0].start.mean, 2)),
            std::string::npos)
      << f.text;
  // Without the fourth cell there is no factorial.
  b.finals.erase(std::remove_if(b.finals.begin(), b.finals.end(),
                                [](const FinalRow& r) { return r.run.mode == kSlowQk; }),
                 b.finals.end());
  EXPECT_TRUE(summarise_factorial(b).empty());
}

// A CSV file of the run as text columns: name -> one string per row.
using Columns = std::map<std::string, std::vector<std::string>>;
Columns columns_of(const std::vector<CsvFile>& files, const std::string& name) {
  for (const CsvFile& f : files)
    if (f.name == name) {
      Columns out;
      for (const CsvRow& row : f.rows)
        for (size_t i = 0; i < row.size(); ++i) out[f.columns[i]].push_back(row[i].text());
      return out;
    }
  ADD_FAILURE() << "no " << name;
  return {};
}

// The numbers the part's findings quote, recomputed from final_metrics.csv
// and train_layers.csv of a small run with the four unscaled arms and the
// reference.
TEST(StudyFindings, TheirNumbersComeFromTheRunsFiles) {
  set_num_threads(1);
  TrainOptions o;
  o.d_ks = {8};
  o.modes = {"none", kDefaultMode, kControl, kReparam, kSlowQk};
  o.seeds = 2;
  o.steps = 12;
  o.eval_every = 4;
  o.eval_examples = 8;
  o.batch = 8;
  Settings settings;
  settings.threads = 2;
  const TrainResult r = run_train(settings, o);
  const std::vector<SettingSummary> summary = summarise_training(r.finals);
  const std::vector<Finding> findings = train_findings(r, summary);
  auto finding = [&](const std::string& figure, const std::string& word) -> const Finding& {
    for (const Finding& f : findings)
      if (f.figure == figure && f.text.find(word) != std::string::npos) return f;
    static const Finding none;
    ADD_FAILURE() << "no finding with " << figure << " and " << word;
    return none;
  };
  const std::vector<CsvFile> files = train_csvs(r);
  const Columns finals = columns_of(files, "final_metrics.csv");
  const Columns layers = columns_of(files, "train_layers.csv");

  // The failure finding: reverse's mean final accuracy per arm.
  auto mean_accuracy = [&](const std::string& task, const std::string& mode) {
    double total = 0;
    int n = 0;
    for (size_t i = 0; i < finals.at("mode").size(); ++i)
      if (finals.at("task")[i] == task && finals.at("mode")[i] == mode)
        total += std::stod(finals.at("accuracy")[i]), ++n;
    return total / n;
  };
  const Finding& fails = finding("final_accuracy.svg", "held-out accuracy at d_k");
  for (const char* mode : {"none", kDefaultMode})
    EXPECT_NE(fails.text.find(significant(100 * mean_accuracy("reverse", mode), 3) + "%"),
              std::string::npos)
        << mode << ": " << fails.text;

  // C20's finding: the ratio of ||dL/dS|| at step 0, none over 1/sqrt(d_k),
  // the geometric mean over seeds of the key layer's.
  for (const char* task : {"reverse", "recall"}) {
    std::map<std::string, std::map<std::string, double>> at0;  // mode -> seed -> value
    for (size_t i = 0; i < layers.at("mode").size(); ++i)
      if (layers.at("task")[i] == task && layers.at("step")[i] == "0" &&
          layers.at("layer")[i] == key_layer(task))
        at0[layers.at("mode")[i]][layers.at("seed")[i]] =
            std::stod(layers.at("grad_norm_logits")[i]);
    double log_sum = 0;
    for (const auto& [seed, v] : at0["none"]) log_sum += std::log(v / at0[kDefaultMode][seed]);
    const std::string ratio = significant(std::exp(log_sum / 2), 2);
    const Finding& c20 = finding("entropy_and_logit_gradient.svg", "scores S");
    EXPECT_NE(c20.detail.find(task + std::string(" d_k 8 (") + key_layer(task) +
                              "), ||dL/dS|| none over 1/sqrt(d_k), geometric mean of the paired "
                              "ratios: at step 0 " +
                              ratio + "x"),
              std::string::npos)
        << task << " " << ratio << ": " << c20.detail;
  }

  // C21's finding: the control's and none_reparam's key-layer entropy over
  // steps 10 to 50 (each seed's mean, then over seeds), and how much further
  // the control's logits move per step over steps 0 to 50 (the geometric
  // mean over seeds of each seed's mean log ratio, over the steps both logged).
  auto key_rows = [&](const std::string& task, const std::string& mode) {
    std::map<std::string, std::map<int64_t, std::pair<double, double>>> out;  // seed -> step
    for (size_t i = 0; i < layers.at("mode").size(); ++i)
      if (layers.at("task")[i] == task && layers.at("mode")[i] == mode &&
          layers.at("layer")[i] == key_layer(task))
        out[layers.at("seed")[i]][std::stoll(layers.at("step")[i])] = {
            std::stod(layers.at("entropy_norm")[i]), std::stod(layers.at("logit_change")[i])};
    return out;
  };
  const Finding& c21 = finding("entropy_and_logit_gradient.svg", "none_reparam");
  std::vector<std::string> control_entropy, reparam_entropy, further;
  for (const char* task : {"reverse", "recall"}) {
    const auto control = key_rows(task, kControl), reparam = key_rows(task, kReparam);
    auto early_entropy = [](const auto& rows) {
      double total = 0;
      for (const auto& [seed, steps] : rows) {
        double sum = 0;
        int n = 0;
        for (const auto& [step, v] : steps)
          if (step >= 10 && step <= 50) sum += v.first, ++n;
        total += sum / n;
      }
      return total / static_cast<double>(rows.size());
    };
    double log_ratio = 0;
    for (const auto& [seed, steps] : control) {
      double sum = 0;
      int n = 0;
      for (const auto& [step, v] : steps)
        if (step <= 50 && reparam.at(seed).count(step))
          sum += std::log(v.second / reparam.at(seed).at(step).second), ++n;
      log_ratio += sum / n / static_cast<double>(control.size());
    }
    control_entropy.push_back(significant(early_entropy(control), 2));
    reparam_entropy.push_back(significant(early_entropy(reparam), 2));
    further.push_back(significant(std::exp(log_ratio), 2));
  }
  EXPECT_NE(c21.text.find("each step moves the control's logits " + further[0] + " and " +
                          further[1] + " times as far"),
            std::string::npos)
      << c21.text;
  EXPECT_NE(c21.text.find("its attention's entropy is " + control_entropy[0] + " and " +
                          control_entropy[1] + " against " + reparam_entropy[0] + " and " +
                          reparam_entropy[1]),
            std::string::npos)
      << c21.text;

  // The factorial's start effect on reverse: per seed from the four arms.
  std::map<std::string, std::map<std::string, double>> acc;  // seed -> mode -> accuracy
  for (size_t i = 0; i < finals.at("mode").size(); ++i)
    if (finals.at("task")[i] == "reverse")
      acc[finals.at("seed")[i]][finals.at("mode")[i]] = std::stod(finals.at("accuracy")[i]);
  double start = 0;
  for (auto& [seed, m] : acc) start += (m[kControl] + m[kReparam] - m["none"] - m[kSlowQk]) / 2 / 2;
  const Finding& factorial = finding("final_accuracy.svg", "four unscaled arms");
  EXPECT_NE(factorial.text.find("On `reverse` at d_k 8, averaged over the other difference, the "
                                "small start gains " +
                                significant(100 * start, 2) + " points"),
            std::string::npos)
      << factorial.text;

  // The identity's finding: the share of clipped steps of none_reparam on reverse.
  double clipped = 0;
  int n = 0;
  for (size_t i = 0; i < finals.at("mode").size(); ++i)
    if (finals.at("task")[i] == "reverse" && finals.at("mode")[i] == kReparam)
      clipped += std::stod(finals.at("clipped_fraction")[i]), ++n;
  const Finding& reparam = finding("accuracy_curves.svg", "abc-symmetry");
  EXPECT_NE(reparam.text.find("clips " + significant(100 * clipped / n, 3) + "% of its steps"),
            std::string::npos)
      << reparam.text;
}

}  // namespace
}  // namespace gradflow::study
