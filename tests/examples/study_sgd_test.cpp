// The study's sgd part (examples/study/sgd*.cpp) and the optimizer a run
// names: SGD's update by hand, the names refused, a tiny SGD run that learns,
// the runs of its two stages, the rate chosen on selection seeds only, C13's
// criteria and the finding's title on runs made by hand, and the files the
// part writes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "examples/study/claims.h"
#include "examples/study/parts.h"
#include "tensor/creation.h"
#include "tensor/error.h"
#include "tensor/parallel.h"

namespace gradflow::study {
namespace {

namespace fs = std::filesystem;

TEST(StudySgd, TheFirstStepIsTheClippedGradientAndMomentumIsPointNine) {
  // p = (1, -2), grad (3, 4): norm 5, clipped to norm 1 as train_one does:
  // (0.6, 0.8). SGD's first momentum step is the gradient itself:
  // p = p - 0.1 (0.6, 0.8) = (0.94, -2.08).
  Variable p(from_vector({1.0, -2.0}, DType::Float64), true);
  std::unique_ptr<nn::Optimizer> sgd = make_optimizer("sgd", {p}, 0.1);
  EXPECT_EQ(sgd->name(), "SGD");
  p.set_grad(from_vector({3.0, 4.0}, DType::Float64));
  nn::clip_grad_norm({p}, 1.0);
  sgd->step();
  EXPECT_NEAR(p.data().at({0}), 0.94, 1e-6);
  EXPECT_NEAR(p.data().at({1}), -2.08, 1e-6);
  // Then grad (0.3, 0), not clipped: b = 0.9 (0.6, 0.8) + (0.3, 0) =
  // (0.84, 0.72), p = (0.94 - 0.084, -2.08 - 0.072): momentum 0.9, no
  // Nesterov (which would step by g + 0.9 b), no weight decay.
  p.set_grad(from_vector({0.3, 0.0}, DType::Float64));
  nn::clip_grad_norm({p}, 1.0);
  sgd->step();
  EXPECT_NEAR(p.data().at({0}), 0.856, 1e-6);
  EXPECT_NEAR(p.data().at({1}), -2.152, 1e-6);
  EXPECT_EQ(make_optimizer("adamw", {p}, 0.1)->name(), "AdamW");
}

RunSpec tiny_sgd_run() {
  RunSpec spec;
  spec.key = {"reverse", kDefaultMode, 16, 0};
  spec.task = reverse_setup();
  spec.task.steps = 30;
  spec.task.lr = 0.1;
  spec.batch = 16, spec.eval_every = 10, spec.eval_examples = 32;
  spec.optimizer = "sgd";
  return spec;
}

TEST(StudySgd, UnknownNamesAndParametrisationsSgdCannotTakeAreRefused) {
  Variable p(from_vector({1.0}), true);
  EXPECT_THROW(make_optimizer("adam", {p}, 0.1), Error);
  EXPECT_THROW(make_optimizer("", {p}, 0.1), Error);
  set_num_threads(1);
  RunSpec spec = tiny_sgd_run();
  spec.task.steps = 1;
  spec.optimizer = "SGD";  // names are exact
  EXPECT_THROW(train_one(spec), Error);
  spec.optimizer = "sgd";
  spec.key.mode = kReparam;  // its second learning rate is derived from Adam's step
  EXPECT_THROW(train_one(spec), Error);
  spec.key.mode = kDefaultMode;
  spec.parametrization = Parametrization::MuP;
  EXPECT_THROW(train_one(spec), Error);
}

TEST(StudySgd, ATinyRunLearnsAndRecordsItsOptimizer) {
  set_num_threads(1);
  const RunOutput out = train_one(tiny_sgd_run());
  EXPECT_EQ(out.final.optimizer, "sgd");
  EXPECT_FALSE(out.final.diverged);
  ASSERT_GE(out.curves.size(), 2u);
  EXPECT_LT(out.curves.back().eval_loss, 0.9 * out.curves.front().eval_loss);  // 2.62 to 1.83
  EXPECT_EQ(train_one([] {
              RunSpec adam = tiny_sgd_run();
              adam.task.steps = 1;
              adam.optimizer = "adamw";
              return adam;
            }())
                .final.optimizer,
            "adamw");
}

TEST(StudySgd, ThePartsRunsChooseOnSelectionSeedsAndCompareOnOthers) {
  Settings settings;
  const SgdOptions o = sgd_options(settings);
  // The comparison seeds C13's criteria ask for (claims_parts.cpp).
  EXPECT_EQ(o.seeds, criterion("C13", "a").seeds);
  EXPECT_EQ(o.seeds, 10);
  EXPECT_EQ(o.selection_seeds, 2);
  const std::vector<RunSpec> selection = sgd_selection_runs(settings, o);
  EXPECT_EQ(selection.size(), o.d_ks.size() * o.modes.size() * o.lrs.size() * 2);
  for (const RunSpec& r : selection) {
    EXPECT_EQ(r.optimizer, "sgd");
    EXPECT_EQ(r.clip, 1.0);
    EXPECT_GE(r.key.seed, 100);  // never a comparison seed (0 to 9)
  }
  // Chosen: 0.1 for both arms at d_k 16, none 0.03 and inv_sqrt_dk 0.1 at
  // 256. Per seed: each arm clipped at its chosen rate; at 256 also
  // unclipped, and none at the common 0.1 (inv_sqrt_dk's chosen rate is it).
  const std::vector<SgdBest> best = {{"none", 16, 0.1, 1, 2},
                                     {kDefaultMode, 16, 0.1, 1, 2},
                                     {"none", 256, 0.03, 1, 2},
                                     {kDefaultMode, 256, 0.1, 1, 2},
                                     {"inv_dk", 256, 0.3, 1, 2}};
  const std::vector<RunSpec> comparison = sgd_comparison_runs(settings, o, best);
  EXPECT_EQ(comparison.size(), 10u * (2 + 3 + 2));
  int64_t unclipped = 0, common = 0;
  for (const RunSpec& r : comparison) {
    EXPECT_LT(r.key.seed, 10);
    EXPECT_NE(r.key.mode, "inv_dk");  // not compared in the default run
    unclipped += r.clip == 0;
    EXPECT_TRUE(r.clip > 0 || r.key.d_k == 256) << r.key.d_k;
    common += r.key.mode == "none" && r.key.d_k == 256 && r.task.lr == kSgdCommonLr;
  }
  EXPECT_EQ(unclipped, 20);
  EXPECT_EQ(common, 10);
  // The plan, before anything is chosen, counts the comparison at its most.
  EXPECT_EQ(sgd_runs(settings, o).size(), selection.size() + 10u * (2 + 3 + 3));
  settings.full = true;
  EXPECT_EQ(sgd_options(settings).seeds, 10);
  EXPECT_EQ(sgd_options(settings).selection_seeds, 3);
  EXPECT_EQ(sgd_options(settings).compared.size(), 3u);
  settings.seeds = 1, settings.steps = 7;
  EXPECT_EQ(sgd_options(settings).seeds, 1);
  EXPECT_EQ(sgd_options(settings).selection_seeds, 1);
  EXPECT_EQ(sgd_options(settings).task.steps, 7);
  settings.seeds = 150;  // the two sets still never meet
  EXPECT_EQ(sgd_options(settings).selection_first_seed, 150);
}

// One run's summary as the claim reads it.
SgdRow run(const std::string& mode, int64_t d_k, double lr, int64_t seed, double loss, double ratio,
           double clip = 1.0) {
  SgdRow row;
  FinalRow& r = row.final;
  r.run = {"reverse", mode, d_k, seed};
  r.optimizer = "sgd";
  r.lr = lr;
  r.initial_loss = 2.5;
  r.final_loss = loss;
  r.final_accuracy = 1 - loss / 2.5;
  r.grad_ratio_qv = ratio;
  r.clipped_fraction = clip > 0 ? 0.5 : 0;
  r.qk_grad_share = mode == "none" ? 0.5 : 0.25;
  row.selection = seed >= 100;
  row.clip = clip;
  return row;
}

TEST(StudySgd, TheChosenRateIsTheSelectionSeedsBest) {
  // On the selection seeds (100, 101) lr 0.1 is best; on the comparison
  // seeds (0 to 2) 0.3 is far better. Choosing on every seed would take 0.3.
  std::vector<SgdRow> rows;
  for (int64_t seed : {100, 101}) {
    rows.push_back(run("none", 256, 0.1, seed, 1.0, 0.5));
    rows.push_back(run("none", 256, 0.3, seed, 1.2, 0.5));
  }
  for (int64_t seed : {0, 1, 2}) {
    rows.push_back(run("none", 256, 0.1, seed, 2.0, 0.5));
    rows.push_back(run("none", 256, 0.3, seed, 0.1, 0.5));
  }
  const std::vector<SgdBest> best = sgd_best(rows);
  ASSERT_EQ(best.size(), 1u);
  EXPECT_EQ(best[0].best_lr, 0.1);
  EXPECT_DOUBLE_EQ(best[0].best_loss, 1.0);
  EXPECT_EQ(best[0].seeds, 2);
}

// none and inv_sqrt_dk at d_k 16 and 256. Selection seeds 100 and 101 over
// lr 0.03 and 0.1: inv_sqrt_dk chooses 0.1 everywhere, none 0.03 at 256 and
// 0.1 at 16. Comparison seeds 0 to 2 at the chosen rates, clipped, and at
// 256 also unclipped and none at the common 0.1. inv_sqrt_dk's losses 0.10, 0.11, 0.12
// (ratio 0.5); none at 256 at 0.03 adds `gap_256` (ratio `ratio_chosen`),
// at 0.1 its ratio is `ratio_common`; at 16 none adds `gap_16` + 0.01 seed.
std::vector<SgdRow> sweep(double gap_256, double ratio_chosen, double ratio_common, double gap_16) {
  std::vector<SgdRow> out;
  for (int64_t d_k : {16, 256}) {
    const double none_lr = d_k == 256 ? 0.03 : 0.1;
    for (int64_t seed : {100, 101}) {
      out.push_back(run(kDefaultMode, d_k, 0.1, seed, 0.1, 0.5));
      out.push_back(run(kDefaultMode, d_k, 0.03, seed, 0.5, 0.5));
      out.push_back(run("none", d_k, none_lr, seed, 1.0, 0.5));
      out.push_back(run("none", d_k, none_lr == 0.1 ? 0.03 : 0.1, seed, 2.0, 0.5));
    }
    for (int64_t seed = 0; seed < 3; ++seed) {
      const double ref = 0.10 + 0.01 * static_cast<double>(seed);
      for (double clip : {1.0, 0.0}) {
        if (d_k == 16 && clip == 0) continue;
        out.push_back(run(kDefaultMode, d_k, 0.1, seed, ref, 0.5, clip));
        if (d_k == 256)
          out.push_back(run("none", d_k, none_lr, seed, ref + gap_256, ratio_chosen, clip));
        else
          out.push_back(run("none", d_k, none_lr, seed,
                            ref + gap_16 + 0.01 * static_cast<double>(seed), 0.5, clip));
      }
      if (d_k == 256) out.push_back(run("none", d_k, 0.1, seed, 2.0, ratio_common));
    }
  }
  return out;
}

TEST(StudySgd, C13FollowsItsCriteria) {
  // Every criterion met: none's ratio 50 times smaller at both rates, 0.9
  // nats worse at 256 (interval 0.9 +- 0), the gap at 16 0.05 to 0.07.
  const std::vector<SgdRow> holds = sweep(0.9, 0.01, 0.01, 0.05);
  const std::vector<SgdBest> best = sgd_best(holds);
  ASSERT_EQ(best.size(), 4u);
  for (const SgdBest& b : best)
    EXPECT_EQ(b.best_lr, b.mode == "none" && b.d_k == 256 ? 0.03 : 0.1) << b.mode << " " << b.d_k;
  Verdict v = sgd_claim(holds);
  EXPECT_EQ(v.id, "C13");
  EXPECT_EQ(v.verdict, "holds") << v.reason;
  // The premise is reported, from the runs' own numbers: clipped in 50% of
  // steps, W_Q and W_K 50% of none's squared norm against 25%.
  EXPECT_NE(v.measured.find("fired in 50% of none's steps"), std::string::npos) << v.measured;
  EXPECT_NE(v.measured.find("the larger share is none's"), std::string::npos) << v.measured;
  auto outcomes = [](const Verdict& x) {
    std::string out;
    for (const CriterionResult& r : x.results) out += r.criterion + (r.passed ? "y" : "n");
    return out;
  };
  EXPECT_EQ(outcomes(v), "aybycydy");
  // The ratio lower at the common rate only: (b) fails, the rest holds.
  v = sgd_claim(sweep(0.9, 0.5, 0.01, 0.05));
  EXPECT_EQ(v.verdict, "partly holds") << v.reason;
  EXPECT_EQ(outcomes(v), "aybncydy");
  // none as good as 1/sqrt(d_k) at 256, its ratio the same, the gap at 16
  // larger: nothing holds.
  v = sgd_claim(sweep(0.0, 0.5, 0.5, 0.2));
  EXPECT_EQ(v.verdict, "does not hold") << v.reason;
  // Worse by 0.04 nats only, within the margin: (c) fails; the gap at 16
  // is -0.01 to 0.01, so (d) passes.
  v = sgd_claim(sweep(0.04, 0.01, 0.01, -0.01));
  EXPECT_EQ(v.verdict, "partly holds") << v.reason;
  EXPECT_EQ(outcomes(v), "aybycndy");
  // Without d_k 16 nothing can be judged.
  std::vector<SgdRow> only_256 = holds;
  std::erase_if(only_256, [](const SgdRow& r) { return r.final.run.d_k == 16; });
  EXPECT_EQ(sgd_claim(only_256).verdict, "unclear");
  // One comparison seed: no interval, so no verdict, whatever the means say.
  std::vector<SgdRow> one_seed = holds;
  std::erase_if(one_seed, [](const SgdRow& r) { return !r.selection && r.final.run.seed != 0; });
  v = sgd_claim(one_seed);
  EXPECT_EQ(v.verdict, "unclear") << v.reason;
  for (const CriterionResult& r : v.results) EXPECT_TRUE(r.missing) << r.criterion;
}

// Its finding is the claim's plain words, qualified by the verdict.
TEST(StudySgd, ItsFindingIsTitledByTheVerdict) {
  const SgdOptions o;
  Section s = sgd_section(o, sweep(0.9, 0.01, 0.01, 0.05));
  EXPECT_EQ(finding_from(s.claims.front()).title, claim("C13").plain);
  EXPECT_EQ(finding_from(s.claims.front()).figure, "sgd_lr.svg");
  s = sgd_section(o, sweep(0.04, 0.01, 0.01, 0.05));
  EXPECT_EQ(finding_from(s.claims.front()).title, "Partly: " + claim("C13").plain);
}

TEST(StudySgd, WritesItsTablesCsvAndFigure) {
  const fs::path dir =
      fs::temp_directory_path() / ("gradflow_study_sgd_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  SgdOptions o;
  o.lrs = {0.03, 0.1};
  o.modes = {"none", kDefaultMode};
  o.seeds = 3;
  write_report(dir.string(), {.command = "scaling_study --test"},
               {sgd_section(o, sweep(0.9, 0.01, 0.01, 0.05))});
  std::ifstream csv(dir / "sgd_sweep.csv");
  std::string header;
  std::getline(csv, header);
  EXPECT_EQ(header,
            "mode,optimizer,d_k,lr,seed,final_loss,max_logit,diverged,task,initial_loss,"
            "min_entropy,spikes,collapse_step,first_spike_step,seed_set,clip,accuracy,"
            "grad_ratio_qv,clipped_fraction,qk_grad_share");
  std::string row;
  std::getline(csv, row);  // sweep's first: inv_sqrt_dk at 16, lr 0.1, selection seed 100
  EXPECT_EQ(row.rfind(std::string(kDefaultMode) + ",sgd,16,0.1,100,0.1,", 0), 0u) << row;
  EXPECT_NE(row.find(",selection,1,0.96,0.5,0.5,0.25"), std::string::npos) << row;
  bool unclipped_comparison = false;
  while (std::getline(csv, row))
    unclipped_comparison |= row.find(",comparison,0,") != std::string::npos;
  EXPECT_TRUE(unclipped_comparison);
  EXPECT_TRUE(fs::is_regular_file(dir / "sgd_lr.svg"));
  std::ifstream in(dir / "report.md");
  const std::string report((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(report.find("### C13"), std::string::npos);
  EXPECT_NE(report.find("| 256 | none | **0.03** (chosen) |"), std::string::npos) << report;
  EXPECT_NE(report.find("| 256 | none | 0.03 (chosen) | none |"), std::string::npos) << report;
  EXPECT_NE(report.find("| 256 | none | 0.1 (common) | 1 |"), std::string::npos) << report;
  for (const auto& entry : fs::directory_iterator(dir))
    EXPECT_NE(std::find(study_files().begin(), study_files().end(), entry.path().filename()),
              study_files().end())
        << entry.path().filename();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gradflow::study
