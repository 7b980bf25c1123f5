// One run per --out folder, kept whole (examples/toolkit/training/run_lock.h and the
// log digest of training.h): a second run at once is refused naming the
// first, a kill -9 leaves no stale lock, a folder's run is not replaced
// without --overwrite, a resume refuses another run's log, and the temporary
// files of killed saves do not pile up.
#include "examples/toolkit/training/run_lock.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "examples/toolkit/cli/args.h"
#include "tests/examples/run_program.h"

namespace gradflow::testing {
namespace {

namespace fs = std::filesystem;

using RunFolderTest = ProgramTest;

std::vector<std::string> tiny(std::vector<std::string> more) {
  std::vector<std::string> args = kTiny;
  args.insert(args.end(), {"--max-len", "4", "--eval-examples", "16", "--show", "0"});
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

TEST_F(RunFolderTest, TheLockNamesItsHolderAndGoesWithIt) {
  const std::string dir = path("run");
  fs::create_directories(dir);
  {
    training::RunLock first(dir);
    try {
      training::RunLock second(dir);
      FAIL() << "no throw";
    } catch (const cli::UsageError& e) {
      EXPECT_EQ(std::string(e.what()), "--out \"" + dir + "\" is in use by another run (pid " +
                                           std::to_string(::getpid()) +
                                           "): wait for it to end or choose another --out");
    }
  }
  training::RunLock again(dir);  // released with the first
  EXPECT_TRUE(fs::exists(dir + "/run.lock"));
}

// Two runs into one folder at once would garble its log: the second is
// refused, naming the first; a kill -9 of the first leaves no stale lock.
TEST_F(RunFolderTest, ASecondRunAtOnceIsRefusedAndKillLeavesNoStaleLock) {
  const std::string out = path("run");
  const pid_t first =
      spawn(kSeq2seq,
            tiny({"--steps", "100000", "--eval-every", "0", "--save-every", "5", "--out", out}));
  wait_for_rows(out + "/log.csv", 6);  // a checkpoint exists
  const std::string holder = "is in use by another run (pid " + std::to_string(first) + ")";
  for (const std::vector<std::string>& args :
       {tiny({"--steps", "10", "--out", out}), tiny({"--steps", "10", "--out", out, "--overwrite"}),
        std::vector<std::string>{"--resume", out, "--steps", "100001"}}) {
    Result r = run(kSeq2seq, args);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_EQ(lines(r.err), 1u) << r.err;
    EXPECT_NE(r.err.find(holder), std::string::npos) << r.err;
  }
  ::kill(first, SIGKILL);
  EXPECT_EQ(wait(first).killed_by, SIGKILL);
  // Already past step 1: it locks, checks the log and the checkpoint, and ends.
  Result resumed =
      run(kSeq2seq, {"--resume", out, "--steps", "1", "--eval-examples", "16", "--show", "0"});
  EXPECT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("nothing to do"), std::string::npos) << resumed.err;
}

// A folder's run is replaced only on --overwrite, which removes its files
// first; resuming into another folder that holds a run needs it too.
TEST_F(RunFolderTest, ARunIsNotOverwrittenWithoutOverwrite) {
  const std::string out = path("run"), other = path("other");
  ASSERT_EQ(run(kSeq2seq, tiny({"--steps", "4", "--out", out})).code, 0);
  const std::string checkpoint = read(out + "/checkpoint.safetensors");
  Result r = run(kSeq2seq, tiny({"--steps", "2", "--seed", "1", "--out", out}));
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("--out \"" + out +
                       "\" already holds a run (log.csv): continue it with "
                       "--resume \"" +
                       out + "\", or replace it with --overwrite"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(read(out + "/checkpoint.safetensors") == checkpoint);

  ASSERT_EQ(run(kSeq2seq, tiny({"--steps", "2", "--out", other})).code, 0);
  r = run(kSeq2seq, {"--resume", out, "--out", other, "--steps", "6"});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("already holds a run"), std::string::npos) << r.err;

  r = run(kSeq2seq, tiny({"--steps", "2", "--seed", "1", "--out", out, "--overwrite"}));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("--overwrite: removed the previous run's 5 files"), std::string::npos)
      << r.err;
  EXPECT_EQ(lines(read(out + "/log.csv")), 3u);
  EXPECT_FALSE(read(out + "/checkpoint.safetensors") == checkpoint);
}

// A resume takes only the log its checkpoint was saved with: another run's
// log is refused; a deleted one is a warning and a new log; another
// --threads is a warning too (the run continues, not bitwise).
TEST_F(RunFolderTest, AResumeRefusesAnotherRunsLog) {
  const std::string a = path("a"), b = path("b");
  ASSERT_EQ(run(kSeq2seq, tiny({"--steps", "6", "--out", a})).code, 0);
  ASSERT_EQ(run(kSeq2seq, tiny({"--steps", "6", "--seed", "1", "--out", b})).code, 0);
  fs::copy_file(b + "/log.csv", a + "/log.csv", fs::copy_options::overwrite_existing);
  Result r = run(kSeq2seq, {"--resume", a, "--steps", "8"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(lines(r.err), 2u) << r.err;  // "resuming from ...", then the error
  EXPECT_NE(r.err.find("log.csv does not belong with checkpoint.safetensors"), std::string::npos)
      << r.err;

  fs::remove(a + "/log.csv");
  r = run(kSeq2seq, {"--resume", a, "--steps", "8", "--threads", "2"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("warning: \"" + a + "/log.csv\" is missing: a new log starts at step 7"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("warning: --threads 2 differs from the checkpoint's 1"), std::string::npos)
      << r.err;
  EXPECT_EQ(lines(read(a + "/log.csv")), 3u);
}

// Kills during saves leave temporary files; the next start in the folder
// removes them (and plants of the same names), and only them.
TEST_F(RunFolderTest, TemporaryFilesOfKilledSavesAreRemoved) {
  const std::string out = path("run");
  std::vector<std::string> args = {
      "--d-model",    "64",  "--heads",      "2",  "--layers",        "2",
      "--d-ff",       "256", "--context",    "64", "--corpus-chars",  "20000",
      "--eval-every", "0",   "--save-every", "1",  "--sample-tokens", "0"};
  for (int session = 0; session < 5; ++session) {
    std::vector<std::string> flags = args;
    flags.insert(flags.end(), {"--steps", "100000", session == 0 ? "--out" : "--resume", out});
    const pid_t pid = spawn(kCharlm, flags);
    wait_for_rows(out + "/log.csv", static_cast<size_t>(2 * session + 2));
    std::this_thread::sleep_for(std::chrono::milliseconds(7 * session));  // kill mid-save, maybe
    ::kill(pid, SIGKILL);
    wait(pid);
  }
  for (const char* name : {"checkpoint.safetensors.gradflow-tmp.99999.0",
                           "model.safetensors.gradflow-tmp.3.14", "log.csv.gradflow-tmp.12.0",
                           "checkpoint.safetensors.gradflow-tmp.mine", "log.csv.tmp.2024.01"})
    std::ofstream(out + "/" + name) << "partial";
  Result r = run(kCharlm, {"--resume", out, "--steps", "1"}, {"--sample-tokens", "0"});
  EXPECT_NE(r.err.find("temporary file"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("that an interrupted save left in \"" + out + "\""), std::string::npos)
      << r.err;
  std::vector<std::string> left;
  for (const auto& entry : fs::directory_iterator(out))
    if (entry.path().filename().string().find("tmp") != std::string::npos)
      left.push_back(entry.path().filename().string());
  std::sort(left.begin(), left.end());
  // A user's file that only looks like a temporary stays.
  EXPECT_EQ(left, (std::vector<std::string>{"checkpoint.safetensors.gradflow-tmp.mine",
                                            "log.csv.tmp.2024.01"}));
}

// `ln -s ../victim r/run.lock` made a run write its pid into victim
// (CWE-59); a hard link did the same. Both are refused in one line and the
// file they lead to is left as it was.
TEST_F(RunFolderTest, TheLockFileRefusesASymlinkOrAHardLink) {
  std::ofstream(path("victim")) << "precious\n";
  for (const bool hard : {false, true}) {
    SCOPED_TRACE(hard ? "hard link" : "symlink");
    const std::string out = path(hard ? "hard" : "soft");
    fs::create_directories(out);
    if (hard)
      fs::create_hard_link(path("victim"), out + "/run.lock");
    else
      fs::create_symlink("../victim", out + "/run.lock");
    expect_usage_error(kSeq2seq, tiny({"--steps", "1", "--out", out}));
    EXPECT_NE(run(kSeq2seq, tiny({"--steps", "1", "--out", out})).err.find("run.lock"),
              std::string::npos);
    EXPECT_EQ(read(path("victim")), "precious\n");
    EXPECT_FALSE(fs::exists(out + "/log.csv"));
  }
}

}  // namespace
}  // namespace gradflow::testing
