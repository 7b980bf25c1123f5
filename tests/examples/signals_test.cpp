// The stop signals (examples/common/signals.h): what the guard records and
// restores.
#include "examples/common/signals.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>


namespace gradflow::testing {
namespace {

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

}  // namespace
}  // namespace gradflow::testing
