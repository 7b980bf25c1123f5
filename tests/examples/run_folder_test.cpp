// One run per --out folder (examples/common/run_lock.h).
#include "examples/common/run_lock.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "examples/common/args.h"
#include "tests/examples/run_program.h"

namespace gradflow::testing {
namespace {

namespace fs = std::filesystem;

using RunFolderTest = ProgramTest;

TEST_F(RunFolderTest, TheLockNamesItsHolderAndGoesWithIt) {
  const std::string dir = path("run");
  fs::create_directories(dir);
  {
    cli::RunLock first(dir);
    try {
      cli::RunLock second(dir);
      FAIL() << "no throw";
    } catch (const cli::UsageError& e) {
      EXPECT_EQ(std::string(e.what()), "--out " + dir + " is in use by another run (pid " +
                                           std::to_string(::getpid()) +
                                           "): wait for it to end or choose another --out");
    }
  }
  cli::RunLock again(dir);  // released with the first
  EXPECT_TRUE(fs::exists(dir + "/run.lock"));
}

}  // namespace
}  // namespace gradflow::testing
