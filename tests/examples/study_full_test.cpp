// The --full parts: the sensitivity, best-lr and warm-up summaries against
// hand-computed values, and tiny runs of each grid through to the report.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "examples/study/parts.h"
#include "tensor/parallel.h"

namespace gradflow::study {
namespace {

FinalRow run(const std::string& mode, int64_t d_k, int64_t seed, double lr, double loss,
             double initial = 3.0) {
  FinalRow f;
  f.run = {"reverse", mode, d_k, seed};
  f.lr = lr, f.final_loss = loss, f.initial_loss = initial;
  f.diverged = !std::isfinite(loss);
  return f;
}

TEST(StudyFull, CappedLossCountsADivergedRunAtItsInitialLoss) {
  EXPECT_EQ(capped_loss(run("none", 16, 0, 1e-3, 0.5)), 0.5);
  EXPECT_EQ(capped_loss(run("none", 16, 0, 1e-3, 4.0)), 3.0);  // worse than at the start
  EXPECT_EQ(capped_loss(run("none", 16, 0, 1e-3, NAN)), 3.0);
}

TEST(StudyFull, SensitivityByHand) {
  // Seed 0, inv_sqrt_dk over lrs {1e-3, 1e-2, 1e-1}: losses 1.0, 0.5, diverged (3.0):
  // best 0.5, sensitivity (0.5 + 0 + 2.5) / 3 = 1.0. Seed 1: 1.2, 0.6, 0.9: (0.6 + 0 + 0.3) / 3
  // = 0.3. qk_norm: seed 0 0.7, 0.5, 0.6 -> 0.1; seed 1 0.8, 0.6, 0.7 -> 0.1.
  std::vector<FinalRow> rows = {
      run("inv_sqrt_dk", 16, 0, 1e-3, 1.0), run("inv_sqrt_dk", 16, 0, 1e-2, 0.5),
      run("inv_sqrt_dk", 16, 0, 1e-1, NAN), run("inv_sqrt_dk", 16, 1, 1e-3, 1.2),
      run("inv_sqrt_dk", 16, 1, 1e-2, 0.6), run("inv_sqrt_dk", 16, 1, 1e-1, 0.9),
      run("qk_norm", 16, 0, 1e-3, 0.7),     run("qk_norm", 16, 0, 1e-2, 0.5),
      run("qk_norm", 16, 0, 1e-1, 0.6),     run("qk_norm", 16, 1, 1e-3, 0.8),
      run("qk_norm", 16, 1, 1e-2, 0.6),     run("qk_norm", 16, 1, 1e-1, 0.7)};
  std::vector<Sensitivity> s = lr_sensitivity(rows);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_NEAR(s[0].sensitivity.mean, (1.0 + 0.3) / 2, 1e-12);
  EXPECT_NEAR(s[1].sensitivity.mean, 0.1, 1e-12);
  EXPECT_NEAR(s[1].vs_default.mean, 0.1 - 0.65, 1e-12);  // paired by seed: -0.9, -0.2
  EXPECT_EQ(s[0].best_lr, 1e-2);                         // mean losses 1.1, 0.55, 1.95
  EXPECT_NEAR(s[0].best_loss, 0.55, 1e-12);
}

TEST(StudyFull, BestLearningRatePerWidthAndSlopes) {
  std::vector<WidthRow> rows;
  for (int64_t d : {32, 64})
    for (double lr : {1e-3, 1e-2})
      for (int64_t seed : {0, 1}) {
        // The best lr falls with width: 1e-2 at 32, 1e-3 at 64.
        const double loss = (d == 32) == (lr == 1e-2) ? 0.2 + 0.01 * seed : 0.9;
        WidthRow w{"sp_inv_sqrt_dk", d, run("inv_sqrt_dk", d / 2, seed, lr, loss)};
        w.run.qk_std_init = std::sqrt(d / 2.0), w.run.qk_std = d / 2.0;
        rows.push_back(w);
      }
  std::vector<BestLr> best = best_lr_by_width(rows);
  ASSERT_EQ(best.size(), 2u);
  EXPECT_EQ(best[0].best_lr, 1e-2);
  EXPECT_EQ(best[1].best_lr, 1e-3);
  EXPECT_EQ(best[1].per_seed, (std::vector<double>{1e-3, 1e-3}));
  EXPECT_EQ(best_lr_spread(best, "sp_inv_sqrt_dk", {1e-3, 3e-3, 1e-2}), 2);
  EXPECT_NEAR(log_log_slope({16, 32}, {best[0].qk_std_init, best[1].qk_std_init}), 0.5, 1e-12);
  EXPECT_NEAR(log_log_slope({16, 32}, {best[0].qk_std, best[1].qk_std}), 1.0, 1e-12);
}

TEST(StudyFull, WarmupEffectIsPairedBySeed) {
  DepthTrainResult depth;
  for (int64_t seed : {0, 1, 2}) {
    depth.runs.push_back({"post_ln", true, run("none", 32, seed, 1e-2, 0.3)});
    depth.runs.push_back({"post_ln", false, run("none", 32, seed, 1e-2, 1.3 + 0.1 * seed)});
  }
  std::vector<WarmupEffect> e = warmup_effects(depth);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_NEAR(e[0].no_warmup_minus_warmup.mean, 1.1, 1e-12);  // 1.0, 1.1, 1.2
  EXPECT_EQ(e[0].verdict, Comparison::Worse);
}

TEST(StudyFull, TinyGridsRunAndReport) {
  set_num_threads(1);
  LrOptions lr;
  lr.task.steps = 8;
  lr.d_ks = {8};
  lr.lrs = {1e-3, 1e-1};
  lr.modes = {"inv_sqrt_dk", "qk_norm"};
  lr.seeds = 2;
  WidthOptions width;
  width.d_models = {16, 32};
  width.lrs = {1e-3, 1e-2};
  width.seeds = 1, width.steps = 8, width.batch = 8;
  DepthTrainOptions depth;
  depth.layers = 2, depth.seeds = 1, depth.steps = 8;
  const Settings settings;
  struct {
    std::vector<FinalRow> sweep;
    std::vector<WidthRow> width;
    DepthTrainResult depth;
  } full{run_lr(settings, lr), run_width(settings, width), run_depth_train(settings, depth)};
  EXPECT_EQ(full.sweep.size(), 2u * 2 * 2);
  EXPECT_EQ(full.width.size(), 3u * 2 * 2);
  EXPECT_EQ(full.depth.runs.size(), 2u * 2 * 3);
  // Block rows run from the input side: enc0 first.
  EXPECT_EQ(full.depth.rows.front().layer, "enc0");
  // C8 is the train part's, and reads the lr part's runs.
  std::vector<Verdict> claims = train_claims({}, {}, full.sweep);
  ASSERT_EQ(claims.size(), 2u);
  EXPECT_EQ(claims[1].id, "C8");
  for (const Verdict& v : lr_claims(full.sweep)) claims.push_back(v);
  claims.push_back(width_claim(full.width));
  claims.push_back(warmup_claim(full.depth));
  ASSERT_GE(claims.size(), 5u);
  // One seed each: C10 and C11 have nothing to judge by (C10 "held" from one
  // seed of two steps before).
  EXPECT_EQ(claims[claims.size() - 2].verdict, "unclear") << claims[claims.size() - 2].reason;
  EXPECT_EQ(claims.back().verdict, "unclear") << claims.back().reason;
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("gradflow_full_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  write_report(dir.string(), {},
               {lr_section(lr, full.sweep), width_section(width, full.width),
                depth_train_section(depth, full.depth)});
  for (const char* file : {"lr_sweep.csv", "width_sweep.csv", "depth_train.csv", "report.md",
                           "lr_sensitivity.svg", "width_lr.svg", "depth_train_loss.svg"})
    EXPECT_TRUE(std::filesystem::is_regular_file(dir / file)) << file;
  // A new study can clear every file an old one wrote.
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    EXPECT_NE(std::find(study_files().begin(), study_files().end(), entry.path().filename()),
              study_files().end())
        << entry.path();
  std::ifstream header(dir / "lr_sweep.csv");
  std::string line;
  std::getline(header, line);
  EXPECT_EQ(line.rfind("mode,d_k,lr,seed,final_loss,max_logit,diverged", 0), 0u) << line;
  std::ifstream width_header(dir / "width_sweep.csv");
  std::getline(width_header, line);
  EXPECT_EQ(line.rfind("parametrization,d_model,lr,seed,final_loss,qk_std", 0), 0u) << line;
  std::ifstream depth_header(dir / "depth_train.csv");
  std::getline(depth_header, line);
  EXPECT_EQ(line, "norm_placement,warmup,mode,seed,step,loss,layer,grad_norm");
  std::stringstream report;
  report << std::ifstream(dir / "report.md").rdbuf();
  for (const char* text : {"### C9", "### C11", "## lr", "## width", "## depth-train"})
    EXPECT_NE(report.str().find(text), std::string::npos) << text;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gradflow::study
