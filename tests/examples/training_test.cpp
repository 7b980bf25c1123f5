// The shared training loop of the example programs: bitwise resume, the
// non-finite guard, Ctrl-C, and the flags a checkpoint restores.
#include "examples/toolkit/training/training.h"

#include <gtest/gtest.h>

#include <unistd.h>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "autograd/ops.h"
#include "nn/data/toy_tasks.h"
#include "nn/loss.h"
#include "nn/optim/optim.h"
#include "tensor/creation.h"
#include "tests/examples/tiny_run.h"
#include "tests/tensor/threads_for.h"

namespace gradflow::training {
namespace {

TEST(TrainingLoop, WritesLogCheckpointAndWeights) {
  TempDir dir("files");
  TinyRun run(1);
  TrainResult r = run.train(run.options(dir.str(), 4));
  EXPECT_EQ(r.outcome, Outcome::kFinished);
  EXPECT_EQ(r.step, 4);
  ASSERT_EQ(r.metrics.size(), 1u);
  auto rows = read_csv(dir.str("log.csv"));
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[0],
            (std::vector<std::string>{"step", "loss", "lr", "grad_norm", "skipped", "val_loss"}));
  EXPECT_EQ(rows[1][0], "1");
  EXPECT_EQ(rows[1][5], "");  // no evaluation at step 1
  EXPECT_NE(rows[3][5], "");  // eval_every 3
  EXPECT_NE(rows[4][5], "");  // and at the end
  EXPECT_EQ(rows[4][4], "false");
  EXPECT_TRUE(fs::is_regular_file(dir.str("model.safetensors")));
  nn::Metadata meta = nn::read_checkpoint_metadata(checkpoint_path(dir.str()));
  EXPECT_EQ(nn::metadata_value(meta, "step"), "4");
  EXPECT_EQ(nn::metadata_value(meta, "program"), "test");
}

TEST(TrainingLoop, ResumedRunContinuesBitwise) {
  TempDir one("one"), two("two");
  TinyRun a(3);
  a.train(a.options(one.str(), 8));
  // Half the run, then a fresh process's worth of objects from other seeds.
  TinyRun b(3);
  b.train(b.options(two.str(), 4));
  TinyRun c(99);
  LoopOptions o = c.options(two.str(), 8);
  o.resume_dir = two.str();
  TrainResult r = c.train(o);
  EXPECT_EQ(r.step, 8);
  auto whole = read_csv(one.str("log.csv")), resumed = read_csv(two.str("log.csv"));
  ASSERT_EQ(resumed.size(), 9u);  // appended, not truncated
  EXPECT_EQ(step_columns(resumed), step_columns(whole));
  EXPECT_EQ(resumed[6][5], whole[6][5]);  // val_loss after step 6
  EXPECT_EQ(resumed[8][5], whole[8][5]);
  EXPECT_EQ(weights(c.model), weights(a.model));
  EXPECT_EQ(c.optimizer.step_count(), 8);
}

// Two parts of each batch at once: the same run as one part up to float
// rounding, and bitwise the same whether the parts share one thread or run on
// two (each part's kernels run on its own thread either way).
TEST(TrainingLoop, PartsOfTheBatchTrainLikeTheWholeBatch) {
  std::vector<std::vector<double>> final_weights;
  std::vector<std::vector<std::vector<std::string>>> logs;
  for (auto [parts, threads] : {std::pair{1, 1}, {2, 1}, {2, 2}}) {
    TempDir dir("parts" + std::to_string(parts) + std::to_string(threads));
    gradflow::testing::ThreadsFor pool(threads);
    TinyRun run(11);
    LoopOptions o = run.options(dir.str(), 6);
    o.parts = parts;
    EXPECT_EQ(run.train(o).outcome, Outcome::kFinished);
    logs.push_back(read_csv(dir.str("log.csv")));
    if (parts == 2 && threads == 1) final_weights = weights(run.model);
    if (parts == 2 && threads == 2) {
      EXPECT_EQ(weights(run.model), final_weights);
    }
  }
  EXPECT_EQ(logs[1], logs[2]);
  ASSERT_EQ(logs[0].size(), logs[1].size());
  for (size_t row = 1; row < logs[0].size(); ++row)
    for (size_t col : {1, 3}) {  // loss and grad_norm
      const double a = std::stod(logs[0][row][col]), b = std::stod(logs[1][row][col]);
      EXPECT_NEAR(a, b, 1e-5 * std::abs(a)) << "row " << row << " column " << col;
    }
}

TEST(TrainingLoop, ResumeDropsLogRowsAfterTheCheckpoint) {
  // As after a crash: the log reached step 6 but the checkpoint is step 4's.
  TempDir one("crash_a"), two("crash_b");
  TinyRun a(4);
  a.train(a.options(one.str(), 6));
  TinyRun b(4);
  b.train(b.options(two.str(), 4));
  fs::copy_file(checkpoint_path(two.str()), two.str("step4"));
  TinyRun c(4);
  LoopOptions o = c.options(two.str(), 6);
  o.resume_dir = two.str();
  c.train(o);
  fs::copy_file(two.str("step4"), checkpoint_path(two.str()), fs::copy_options::overwrite_existing);
  TinyRun d(4);
  d.train(o);
  EXPECT_EQ(step_columns(read_csv(two.str("log.csv"))), step_columns(read_csv(one.str("log.csv"))));
}

TEST(TrainingLoop, NonFiniteLossSkipsTheUpdate) {
  TempDir dir("nan_loss");
  TinyRun run(5);
  Hooks h = run.hooks();
  auto batch = h.batch;
  std::vector<std::vector<double>> before;
  std::vector<StepInfo> steps;
  h.batch = [&]() -> PartLoss {
    if (steps.size() == 2) before = weights(run.model);
    PartLoss loss = batch();
    return [&steps, loss](int64_t part, int64_t parts) {
      Variable l = loss(part, parts);
      return steps.size() == 2 ? l * std::nan("") : l;
    };
  };
  h.after_step = [&](const StepInfo& info) {
    steps.push_back(info);
    if (info.step == 3) {
      EXPECT_EQ(weights(run.model), before) << "parameters changed";
    }
  };
  TrainResult r = run.train(run.options(dir.str(), 4), h);
  EXPECT_EQ(r.outcome, Outcome::kFinished);
  EXPECT_EQ(r.skipped, 1);
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_TRUE(steps[2].skipped);
  EXPECT_TRUE(std::isnan(steps[2].loss));
  EXPECT_FALSE(steps[3].skipped);
  EXPECT_EQ(run.optimizer.step_count(), 3);
  EXPECT_NE(run.err.str().find("step 3: non-finite loss; update skipped"), std::string::npos)
      << run.err.str();
  EXPECT_EQ(read_csv(dir.str("log.csv"))[3][4], "true");
}

TEST(TrainingLoop, NonFiniteGradientSkipsTheUpdateAndStopOnNanStops) {
  TempDir dir("nan_grad");
  TinyRun run(6);
  Hooks h = run.hooks();
  auto batch = h.batch;
  int calls = 0;
  std::vector<std::vector<double>> before;
  h.batch = [&]() -> PartLoss {
    PartLoss loss = batch();
    if (++calls != 2) return loss;
    before = weights(run.model);
    return [loss](int64_t part, int64_t parts) {
      Variable l = loss(part, parts);
      l.register_hook([](const Tensor& g) { return full(g.shape(), HUGE_VAL, g.dtype()); });
      return l;
    };
  };
  LoopOptions o = run.options(dir.str(), 4);
  o.stop_on_nan = true;
  TrainResult r = run.train(o, h);
  EXPECT_EQ(r.outcome, Outcome::kStoppedOnNan);
  EXPECT_EQ(exit_code(r), 1);
  EXPECT_EQ(r.step, 2);
  EXPECT_EQ(weights(run.model), before);
  EXPECT_NE(run.err.str().find("non-finite gradient norm"), std::string::npos) << run.err.str();
  EXPECT_EQ(nn::metadata_value(nn::read_checkpoint_metadata(checkpoint_path(dir.str())), "step"),
            "2");
}

TEST(TrainingLoop, SigintFinishesTheStepSavesAndReturnsInterrupted) {
  std::signal(SIGINT, SIG_DFL);  // as a terminal starts it, whatever this process inherited
  TempDir dir("sigint");
  TinyRun run(7);
  Hooks h = run.hooks();
  auto batch = h.batch;
  int calls = 0;
  h.batch = [&] {
    if (++calls == 3) std::raise(SIGINT);  // as Ctrl-C during step 3
    return batch();
  };
  TrainResult r = run.train(run.options(dir.str(), 8), h);
  EXPECT_EQ(r.outcome, Outcome::kInterrupted);
  EXPECT_EQ(exit_code(r), 130);
  EXPECT_EQ(r.step, 3);
  EXPECT_EQ(run.optimizer.step_count(), 3);  // the step was finished
  EXPECT_NE(run.err.str().find("interrupted at step 3"), std::string::npos) << run.err.str();
  EXPECT_EQ(nn::metadata_value(nn::read_checkpoint_metadata(checkpoint_path(dir.str())), "step"),
            "3");
  // The handler is gone again and the run resumes from the checkpoint.
  EXPECT_EQ(std::signal(SIGINT, SIG_DFL), SIG_DFL);
  TinyRun again(70);
  LoopOptions o = again.options(dir.str(), 8);
  o.resume_dir = dir.str();
  EXPECT_EQ(again.train(o).outcome, Outcome::kFinished);
  EXPECT_EQ(read_csv(dir.str("log.csv")).size(), 9u);
}

TEST(TrainingLoop, ResumingAFinishedRunDoesNothing) {
  TempDir dir("done");
  TinyRun run(8);
  run.train(run.options(dir.str(), 2));
  TinyRun again(8);
  LoopOptions o = again.options(dir.str(), 2);
  o.resume_dir = dir.str();
  TrainResult r = again.train(o);
  EXPECT_EQ(r.step, 2);
  EXPECT_TRUE(r.metrics.empty());
  EXPECT_NE(again.err.str().find("nothing to do"), std::string::npos);
  EXPECT_EQ(read_csv(dir.str("log.csv")).size(), 3u);
}

TEST(RunFlags, RestoreTakesTheCheckpointsValuesAndRejectsContradictions) {
  auto make = [](cli::ArgParser& args, RunFlags& run, CommonFlags& f, std::string& task) {
    run.add_choice("--task", &task, {"copy", "reverse"}, "task");
    add_common_flags(args, run, f);
  };
  cli::ArgParser args1("t", "");
  RunFlags run1(args1);
  CommonFlags f1;
  std::string task1 = "copy";
  make(args1, run1, f1, task1);
  args1.parse({"--task", "reverse", "--d-model", "32", "--lr", "0.1", "--steps", "10"});
  nn::Metadata saved = run1.to_metadata();

  cli::ArgParser args2("t", "");
  RunFlags run2(args2);
  CommonFlags f2;
  std::string task2 = "copy";
  make(args2, run2, f2, task2);
  run2.restore(saved, {"--steps", "20", "--threads", "2", "--lr", "0.1"});
  EXPECT_EQ(task2, "reverse");
  EXPECT_EQ(f2.model.d_model, 32);
  EXPECT_EQ(f2.lr, 0.1);
  EXPECT_EQ(f2.steps, 20);  // may change
  EXPECT_EQ(f2.threads, 2);

  cli::ArgParser args3("t", "");
  RunFlags run3(args3);
  CommonFlags f3;
  std::string task3;
  make(args3, run3, f3, task3);
  try {
    run3.restore(saved, {"--d-model", "64"});
    FAIL() << "no throw";
  } catch (const cli::UsageError& e) {
    EXPECT_STREQ(e.what(),
                 "--d-model 64 differs from the checkpoint's 32 (a resumed run keeps its "
                 "settings; only --steps may change)");
  }
}

// A checkpoint written before a flag existed ran with that flag's default:
// it resumes with the default, and another value on the command line is a
// contradiction like any other.
TEST(RunFlags, AFlagTheCheckpointPredatesTakesItsDefault) {
  auto make = [](cli::ArgParser& args, RunFlags& run, CommonFlags& f) {
    add_common_flags(args, run, f);
  };
  cli::ArgParser args1("t", "");
  RunFlags run1(args1);
  CommonFlags f1;
  make(args1, run1, f1);
  args1.parse({"--d-model", "32", "--steps", "10"});
  nn::Metadata old;
  for (const auto& kv : run1.to_metadata())
    if (kv.first != "flag.--head-dim") old.push_back(kv);
  ASSERT_EQ(old.size() + 1, run1.to_metadata().size());

  cli::ArgParser args2("t", "");
  RunFlags run2(args2);
  CommonFlags f2;
  make(args2, run2, f2);
  run2.restore(old, {"--steps", "20"});
  EXPECT_EQ(f2.model.d_model, 32);
  EXPECT_EQ(f2.model.head_dim, 0);

  cli::ArgParser args3("t", "");
  RunFlags run3(args3);
  CommonFlags f3;
  make(args3, run3, f3);
  EXPECT_THROW(run3.restore(old, {"--head-dim", "8"}), cli::UsageError);
}

TEST(ModelConfigMetadata, RoundTrips) {
  nn::ModelConfig c;
  c.vocab = 7, c.d_model = 24, c.heads = 3, c.layers = 5, c.d_ff = 40, c.max_len = 9;
  c.scale = nn::ScaleMode::parse("const:0.3");
  c.norm = nn::NormPlacement::Post, c.dropout = 0.1, c.positional = "sinusoidal", c.head_dim = 5;
  nn::ModelConfig d = config_from_metadata(config_metadata(c));
  EXPECT_EQ(config_metadata(d), config_metadata(c));
  EXPECT_EQ(d.head_dim, 5);
  // A checkpoint from before head_dim was saved: d_k = d_model / heads.
  nn::Metadata old;
  for (const auto& kv : config_metadata(c))
    if (kv.first != "config.head_dim") old.push_back(kv);
  EXPECT_EQ(config_from_metadata(old).head_dim, 0);
  EXPECT_TRUE(d.scale.is("const"));
  EXPECT_EQ(d.scale.constant(), 0.3);
  nn::Metadata bad = config_metadata(c);
  bad[1].second = "x";
  EXPECT_THROW(config_from_metadata(bad), cli::UsageError);
}

}  // namespace
}  // namespace gradflow::training
