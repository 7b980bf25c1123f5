// The training loop's guards, in process: every stop signal ends a run like
// Ctrl-C; a run of skipped steps stops it; a state with a NaN is never saved;
// a resume takes only its own log, says when the log is gone, and when
// --threads changed.
#include <gtest/gtest.h>

#include <cmath>
#include <csignal>
#include <filesystem>
#include <string>

#include "autograd/ops.h"
#include "examples/toolkit/cli/csv_log.h"
#include "tests/examples/tiny_run.h"

namespace gradflow::training {
namespace {

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// SIGTERM and SIGHUP end the step, save and report 128 + the signal, as
// SIGINT does; the handlers are gone afterwards.
TEST(TrainingGuards, SigtermAndSighupStopLikeSigint) {
  for (int signal : {SIGTERM, SIGHUP}) {
    std::signal(signal, SIG_DFL);
    TempDir dir("signal" + std::to_string(signal));
    TinyRun run(7);
    Hooks h = run.hooks();
    auto batch = h.batch;
    int calls = 0;
    h.batch = [&] {
      if (++calls == 2) std::raise(signal);
      return batch();
    };
    TrainResult r = run.train(run.options(dir.str(), 8), h);
    EXPECT_EQ(r.outcome, Outcome::kInterrupted);
    EXPECT_EQ(r.signal, signal);
    EXPECT_EQ(exit_code(r), 128 + signal);
    EXPECT_EQ(r.step, 2);
    const std::string name = signal == SIGTERM ? "SIGTERM" : "SIGHUP";
    EXPECT_NE(run.err.str().find("interrupted at step 2 (" + name + ")"), std::string::npos)
        << run.err.str();
    EXPECT_EQ(nn::metadata_value(nn::read_checkpoint_metadata(checkpoint_path(dir.str())), "step"),
              "2");
    EXPECT_EQ(std::signal(signal, SIG_DFL), SIG_DFL);
  }
}

// A loss that is never finite: the run stops after max_skipped_steps skipped
// steps in a row with exit code 2, its checkpoint the last good state.
TEST(TrainingGuards, TooManySkippedStepsInARowStopTheRun) {
  TempDir dir("skipped");
  TinyRun run(5);
  Hooks h = run.hooks();
  auto batch = h.batch;
  int calls = 0;
  h.batch = [&]() -> PartLoss {
    PartLoss loss = batch();
    if (++calls <= 2) return loss;  // two good steps, then only NaN
    return [loss](int64_t part, int64_t parts) { return loss(part, parts) * std::nan(""); };
  };
  LoopOptions o = run.options(dir.str(), 100);
  o.max_skipped_steps = 4;
  TrainResult r = run.train(o, h);
  EXPECT_EQ(r.outcome, Outcome::kTooManySkipped);
  EXPECT_EQ(exit_code(r), 2);
  EXPECT_EQ(r.step, 6);
  EXPECT_EQ(run.optimizer.step_count(), 2);
  EXPECT_NE(run.err.str().find("stopped at step 6: the last 4 steps were skipped"),
            std::string::npos)
      << run.err.str();
  EXPECT_EQ(nn::metadata_value(nn::read_checkpoint_metadata(checkpoint_path(dir.str())), "step"),
            "6");

  // A run shorter than the limit whose every step was skipped ends so too.
  TempDir short_dir("all_skipped");
  TinyRun again(5);
  Hooks nan = again.hooks();
  auto draw = nan.batch;
  nan.batch = [&]() -> PartLoss {
    PartLoss loss = draw();
    return [loss](int64_t part, int64_t parts) { return loss(part, parts) * std::nan(""); };
  };
  LoopOptions s = again.options(short_dir.str(), 3);
  s.max_skipped_steps = 100;
  EXPECT_EQ(again.train(s, nan).outcome, Outcome::kTooManySkipped);
  EXPECT_NE(again.err.str().find("every one of this run's 3 steps was skipped"), std::string::npos)
      << again.err.str();
}

// Weights turned NaN by a step that looked finite: nothing is saved over the
// last good checkpoint, and the run says so.
TEST(TrainingGuards, ANonFiniteStateIsNeverSaved) {
  TempDir dir("nan_state");
  TinyRun run(9);
  Hooks h = run.hooks();
  h.after_step = [&](const StepInfo& info) {
    if (info.step == 3) {
      Tensor w = run.model.parameters()[0].data();
      w.data<float>()[0] = NAN;
    }
  };
  LoopOptions o = run.options(dir.str(), 4);  // saves every 2 steps
  run.train(o, h);
  EXPECT_EQ(nn::metadata_value(nn::read_checkpoint_metadata(checkpoint_path(dir.str())), "step"),
            "2");
  EXPECT_NE(run.err.str().find("not saved: 'model."), std::string::npos) << run.err.str();
  EXPECT_NE(run.err.str().find("keeps step 2"), std::string::npos) << run.err.str();
}

// The checkpoint records its log's digest: another run's log is refused, a
// missing one is a warning and a new log, and another --threads a warning.
TEST(TrainingGuards, AResumeTakesOnlyItsOwnLog) {
  TempDir a("log_a"), b("log_b");
  TinyRun first(1), second(2);
  first.train(first.options(a.str(), 4));
  second.train(second.options(b.str(), 4));
  EXPECT_EQ(
      nn::metadata_value(nn::read_checkpoint_metadata(checkpoint_path(a.str())), "log_digest"),
      cli::digest_hex(cli::log_digest(read(a.str("log.csv")))));
  std::filesystem::copy_file(b.str("log.csv"), a.str("log.csv"),
                             std::filesystem::copy_options::overwrite_existing);
  TinyRun resumed(1);
  LoopOptions o = resumed.options(a.str(), 6);
  o.resume_dir = a.str();
  try {
    resumed.train(o);
    FAIL() << "no throw";
  } catch (const cli::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("log.csv does not belong with checkpoint.safetensors"),
              std::string::npos)
        << e.what();
  }

  std::filesystem::remove(a.str("log.csv"));
  TinyRun again(1);
  o.err = &again.err;
  o.threads = 2;
  EXPECT_EQ(again.train(o).outcome, Outcome::kFinished);
  EXPECT_NE(again.err.str().find("warning: \"" + a.str("log.csv") +
                                 "\" is missing: a new log starts at step 5"),
            std::string::npos)
      << again.err.str();
  EXPECT_NE(again.err.str().find("warning: --threads 2 differs from the checkpoint's 1"),
            std::string::npos)
      << again.err.str();
  const auto rows = read_csv(a.str("log.csv"));
  ASSERT_EQ(rows.size(), 3u);  // the header, steps 5 and 6
  EXPECT_EQ(rows[1][0], "5");
}

}  // namespace
}  // namespace gradflow::training
