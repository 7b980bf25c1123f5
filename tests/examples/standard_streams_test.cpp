// The standard streams at the edges: every program started with descriptors
// 0-2 closed keeps its files clean (the descriptors are reopened on
// /dev/null, so no log or lock takes their place), and output that cannot be
// written is exit code 1 and "write error", as coreutils say it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/examples/run_program.h"

namespace gradflow::testing {
namespace {

namespace fs = std::filesystem;

using StandardStreamsTest = ProgramTest;

// A log row starts with its step; the header with "step,".
void expect_only_csv(const std::string& log) {
  std::istringstream in(log);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  EXPECT_EQ(line.rfind("step,", 0), 0u) << log;
  while (std::getline(in, line))
    EXPECT_TRUE(!line.empty() && std::isdigit(static_cast<unsigned char>(line[0])))
        << "not a log row: " << line;
}

// `prog ... >&- 2>&-` (and with 0 closed too): the banner and the progress
// went into run.lock and log.csv, which then could not be resumed.
TEST_F(StandardStreamsTest, EveryTrainingProgramStartedWithClosedStreamsKeepsItsFilesClean) {
  for (const ListedProgram& p : programs_of_kind("training")) {
    for (const std::vector<int>& closed : {std::vector<int>{1, 2}, std::vector<int>{0, 1, 2}}) {
      SCOPED_TRACE(p.name + " with " + std::to_string(closed.size()) + " streams closed");
      const std::string out = path(p.name + std::to_string(closed.size()));
      Result r = wait(spawn(p.path, tiny_run_args(p.name, out, "2"), {.closed = closed}));
      ASSERT_EQ(r.code, 0);
      expect_only_csv(read(out + "/log.csv"));
      const std::string lock = read(out + "/run.lock");
      EXPECT_TRUE(!lock.empty() && lock.find_first_not_of("0123456789\n") == std::string::npos)
          << "run.lock holds: " << lock;
      Result resumed = run(p.path, {"--resume", out, "--steps", "3"}, tiny_flags(p.name).session);
      EXPECT_EQ(resumed.code, 0) << resumed.err;
    }
  }
}

// Every program with a command line: its help on /dev/full is exit 1 with
// one line naming the write error (it was exit 0).
TEST_F(StandardStreamsTest, EveryProgramReportsAWriteErrorOnStandardOutput) {
  for (const ListedProgram& p : listed_programs()) {
    if (p.kind == "standalone") continue;
    SCOPED_TRACE(p.name);
    Result r = wait(spawn(p.path, {"--help"}, {.stdout_path = "/dev/full"}));
    EXPECT_EQ(r.code, 1) << r.err;
    // The reason, when the failing write's errno is still known, follows.
    EXPECT_EQ(r.err.rfind(p.name + ": error: write error on standard output", 0), 0u) << r.err;
    EXPECT_EQ(lines(r.err), 1u) << r.err;
  }
}

// A training run whose report cannot be printed still saves its files, and
// says the report was lost with exit code 1.
TEST_F(StandardStreamsTest, ATrainingRunOnAFullStandardOutputSavesAndExitsOne) {
  Result r =
      wait(spawn(kCharlm, tiny_run_args("charlm", path("run"), "2"), {.stdout_path = "/dev/full"}));
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("charlm: error: write error on standard output"), std::string::npos)
      << r.err;
  EXPECT_TRUE(fs::exists(path("run/checkpoint.safetensors")));
  EXPECT_TRUE(fs::exists(path("run/model.safetensors")));
}

}  // namespace
}  // namespace gradflow::testing
