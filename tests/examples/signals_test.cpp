// The stop signals (examples/toolkit/cli/signals.h): what the guard records and
// restores, and the programs as a scheduler, `timeout`, `kill` or a closed
// terminal stops them: SIGTERM and SIGHUP save a checkpoint that resumes,
// as Ctrl-C does, and the study stops its jobs promptly.
#include "examples/toolkit/cli/signals.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "tests/examples/run_program.h"

namespace gradflow::testing {
namespace {

namespace fs = std::filesystem;

TEST(StopSignals, RecordTheFirstSignalAndRestoreTheDispositions) {
  for (int signal : {SIGINT, SIGTERM, SIGHUP}) std::signal(signal, SIG_DFL);
  {
    cli::StopSignals outer;
    EXPECT_EQ(cli::stop_signal(), 0);
    std::raise(SIGTERM);  // the handler runs before raise returns
    EXPECT_EQ(cli::stop_signal(), SIGTERM);
    {
      cli::StopSignals inner;  // nested: the outer guard's state stays
      EXPECT_EQ(cli::stop_signal(), SIGTERM);
    }
    EXPECT_EQ(cli::stop_signal(), SIGTERM);
  }
  EXPECT_EQ(cli::stop_signal(), 0);
  for (int signal : {SIGINT, SIGTERM, SIGHUP}) EXPECT_EQ(std::signal(signal, SIG_DFL), SIG_DFL);
  EXPECT_EQ(cli::signal_name(SIGHUP), "SIGHUP");
  EXPECT_EQ(cli::exit_code_for_signal(SIGTERM), 143);
}

// nohup ignores SIGHUP, and a program started under it must go on ignoring it.
TEST(StopSignals, AnIgnoredSignalStaysIgnored) {
  std::signal(SIGHUP, SIG_IGN);
  {
    cli::StopSignals guard;
    std::raise(SIGHUP);
    EXPECT_EQ(cli::stop_signal(), 0);
  }
  EXPECT_EQ(std::signal(SIGHUP, SIG_DFL), SIG_IGN);
}

// The first signal waits for the step; a second ends the process at once,
// killed by that signal, as if no handler were there.
TEST(StopSignals, ASecondSignalEndsTheProcessAtOnce) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::signal(SIGTERM, SIG_DFL);
    cli::StopSignals guard;
    std::raise(SIGTERM);
    if (cli::stop_signal() != SIGTERM) ::_exit(3);
    std::raise(SIGTERM);
    ::_exit(4);  // not reached
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit code " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
}

using SignalsTest = ProgramTest;

// Each training program, stopped by SIGTERM and by SIGHUP once training is
// under way: it ends the step, saves, says so in one line, exits with
// 128 + the signal, and the run resumes from the checkpoint.
TEST_F(SignalsTest, SigtermAndSighupSaveACheckpointThatResumes) {
  for (const ListedProgram& listed : programs_of_kind("training")) {
    const std::string& program = listed.path;
    const std::vector<std::string> extra = tiny_extra(listed.name);
    for (const auto& [signal, name] : {std::pair{SIGTERM, "SIGTERM"}, {SIGHUP, "SIGHUP"}}) {
      const std::string out = path(listed.name + name);
      SCOPED_TRACE(out);
      std::vector<std::string> args = {"--steps",      "100000", "--eval-every", "0",
                                       "--save-every", "0",      "--out",        out};
      args.insert(args.end(), kTiny.begin(), kTiny.end());
      args.insert(args.end(), extra.begin(), extra.end());
      const pid_t pid = spawn(program, args);
      wait_for_rows(out + "/log.csv", 2);
      ::kill(pid, signal);
      Result r = wait(pid);
      EXPECT_EQ(r.code, 128 + signal) << r.err;
      EXPECT_EQ(r.killed_by, 0) << "it died instead of stopping";
      EXPECT_NE(r.err.find("interrupted at step"), std::string::npos) << r.err;
      EXPECT_NE(r.err.find(std::string("(") + name + "); checkpoint saved"), std::string::npos)
          << r.err;
      EXPECT_NE(r.err.find("--resume " + out + "\n"), std::string::npos) << r.err;
      const size_t rows = lines(read(out + "/log.csv")) - 1;
      Result more = run(program, {"--resume", out, "--steps", std::to_string(rows + 2)}, extra);
      EXPECT_EQ(more.code, 0) << more.err;
      EXPECT_EQ(lines(read(out + "/log.csv")) - 1, rows + 2);
    }
  }
}

// The study has no checkpoint: a signal stops its jobs within a step (runs
// poll it), it writes nothing (a partial report would read as a finished
// study), says so in one line and exits with 128 + the signal.
TEST_F(SignalsTest, TheStudyStopsPromptlyAndWritesNothing) {
  const std::string out = path("study");
  const pid_t pid = spawn(kScalingStudy,
                          {"--parts", "train", "--tasks", "reverse", "--d-ks", "8", "--modes",
                           "inv_sqrt_dk,none", "--seeds", "2", "--steps", "1000000", "--out", out});
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // its runs are under way
  const auto start = std::chrono::steady_clock::now();
  ::kill(pid, SIGTERM);
  Result r = wait(pid);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.code, 143) << r.err;
  EXPECT_EQ(r.killed_by, 0);
  EXPECT_LT(seconds, 10);
  // In its runs, or, on a slow machine (a sanitizer build under load), still
  // in the half-second calibration before them: either way a prompt stop.
  const bool in_runs = r.err.find(
                           "scaling_study: interrupted by SIGTERM in train (0 of 4 done); "
                           "nothing written to " +
                           out + "\n") != std::string::npos;
  const bool in_calibration =
      r.err.find(
          "scaling_study: interrupted by SIGTERM in the calibration (0 of 1 done); nothing "
          "written to " +
          out + "\n") != std::string::npos;
  EXPECT_TRUE(in_runs || in_calibration) << r.err;
  EXPECT_FALSE(fs::exists(out + "/report.md"));
  EXPECT_FALSE(fs::exists(out + "/final_metrics.csv"));
}

}  // namespace
}  // namespace gradflow::testing
