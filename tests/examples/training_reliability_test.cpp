// What a user met running the training programs (issues #35 and #36): an
// address-space limit that hung them, a log.csv that is not a file, a thread
// that cannot start, resuming a run still training, the end of an
// interrupted run, paths that can be copied, raising --steps on resume and
// the threads a resume keeps. docs/reliability.md names each guarantee.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <sstream>
#include <thread>

#include "examples/study/study.h"
#include "examples/toolkit/cli/args.h"
#include "examples/toolkit/cli/progress.h"
#include "examples/toolkit/training/address_space.h"
#include "tests/examples/run_program.h"

namespace gradflow::testing {
namespace {

namespace fs = std::filesystem;

// AddressSanitizer reserves terabytes of address space for its shadow, so
// under `ulimit -v` a sanitizer build cannot even load its libraries: the
// tests of a limit run in the ordinary build only.
#if defined(__SANITIZE_ADDRESS__)
#define SKIP_UNDER_ASAN() GTEST_SKIP() << "AddressSanitizer's shadow memory exceeds any ulimit -v"
#else
#define SKIP_UNDER_ASAN() (void)0
#endif

class TrainingReliabilityTest : public ProgramTest {
 protected:
  // `program args` run by sh after `limits` (e.g. "ulimit -v 100000"). A
  // program that has not ended after 120 s is hung, which is the failure
  // these tests look for: it is killed and reported.
  Result run_limited(const std::string& limits, const std::string& program,
                     const std::vector<std::string>& args) {
    std::vector<std::string> sh = {"-c", limits + "; exec \"$0\" \"$@\"", program};
    sh.insert(sh.end(), args.begin(), args.end());
    const pid_t pid = spawn("/bin/sh", sh);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    siginfo_t info{};
    while (std::chrono::steady_clock::now() < deadline) {
      info.si_pid = 0;
      if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
          info.si_pid == pid)
        return wait(pid);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ::kill(pid, SIGKILL);
    ADD_FAILURE() << program << " under `" << limits << "` hung (killed after 120 s)";
    return wait(pid);
  }

  // The lr column (the third) of a log, one value per row.
  static std::vector<double> lr_column(const std::string& log) {
    std::istringstream in(read(log));
    std::string line;
    std::getline(in, line);  // the header
    std::vector<double> lrs;
    while (std::getline(in, line)) {
      std::istringstream row(line);
      std::string cell;
      for (int i = 0; i < 3; ++i) std::getline(row, cell, ',');
      lrs.push_back(std::stod(cell));
    }
    return lrs;
  }
};

// #35 item 6: under `ulimit -v` every training program hung at start
// (OpenBLAS's worker retried a failing 128 MiB mmap forever); now each says
// in one line what the limit leaves and what would do, and exits 2.
TEST_F(TrainingReliabilityTest, AnAddressSpaceLimitTooLowIsRefusedInOneLine) {
  SKIP_UNDER_ASAN();
  for (const ListedProgram& listed : programs_of_kind("training")) {
    for (const char* limit : {"60000", "100000"}) {
      SCOPED_TRACE(listed.name + " under ulimit -v " + limit);
      std::vector<std::string> args = tiny_run_args(listed.name, path(listed.name), "2");
      Result r = run_limited(std::string("ulimit -v ") + limit, listed.path, args);
      EXPECT_EQ(r.code, 2) << r.err;
      EXPECT_EQ(lines(r.err), 1u) << r.err;
      EXPECT_EQ(
          r.err.rfind(listed.name + ": error: the address-space limit (ulimit -v " + limit, 0), 0u)
          << r.err;
      EXPECT_NE(r.err.find("OpenBLAS"), std::string::npos) << r.err;
    }
  }
}

// The study too: `scaling_study --parts sgd` under ulimit -v 300000 hung at
// run 17 of 18 (each job's thread maps OpenBLAS's buffer at its first
// product); now it is refused before it starts, naming the main thread too.
TEST_F(TrainingReliabilityTest, TheStudyUnderALimitTooLowIsRefusedInOneLine) {
  SKIP_UNDER_ASAN();
  Result r = run_limited("ulimit -v 300000", kScalingStudy, {"--parts", "sgd", "--out", path("s")});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_EQ(r.err.rfind("scaling_study: error: the address-space limit (ulimit -v 300000", 0), 0u)
      << r.err;
  EXPECT_NE(r.err.find("--threads 2 and the main thread"), std::string::npos) << r.err;
}

// A limit with room for the run is no reason to refuse it.
TEST_F(TrainingReliabilityTest, ARunThatFitsTheLimitTrains) {
  SKIP_UNDER_ASAN();
  Result r = run_limited("ulimit -v 600000", kSeq2seq, tiny_run_args("seq2seq", path("a"), "2"));
  EXPECT_EQ(r.code, 0) << r.err;
}

// minimal_train links no toolkit and hung under `ulimit -v` too: before
// main, and with one OpenBLAS thread at its first product (up to ulimit -v
// 180000), or it aborted on an uncaught out-of-memory error (181000 to
// 183000). It links examples/start/'s start-up code alone: a limit too low
// is refused in one line with exit code 2, and one with room trains.
TEST_F(TrainingReliabilityTest, MinimalTrainUnderALimitIsRefusedInOneLineOrTrains) {
  SKIP_UNDER_ASAN();
  const std::string minimal_train = program_path("minimal_train");
  const auto expect_refused = [](const Result& r, const std::string& limit) {
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_EQ(lines(r.err), 1u) << r.err;
    EXPECT_EQ(r.err.rfind("minimal_train: error: the address-space limit (ulimit -v " + limit, 0),
              0u)
        << r.err;
    EXPECT_NE(r.err.find("OpenBLAS"), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
  };
  for (const char* limit : {"60000", "100000"}) {
    SCOPED_TRACE(std::string("ulimit -v ") + limit);
    expect_refused(run_limited(std::string("ulimit -v ") + limit, minimal_train, {}), limit);
  }
  {
    // Near the line, which moves with what the libraries map at start
    // (47 MiB of the 144 MiB more it asks for, here): refused or trained.
    SCOPED_TRACE("ulimit -v 180000");
    Result r = run_limited("ulimit -v 180000", minimal_train, {});
    if (r.code == 0)
      EXPECT_NE(r.out.find("held-out greedy accuracy"), std::string::npos) << r.out;
    else
      expect_refused(r, "180000");
  }
  Result r = run_limited("ulimit -v 300000", minimal_train, {});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("held-out greedy accuracy"), std::string::npos) << r.out;
}

TEST(AddressSpace, TheCheckComparesTheLimitWithWhatTheRunMaps) {
  const uint64_t mib = uint64_t{1} << 20;
  EXPECT_NO_THROW(training::check_address_space(1, 10.0 * mib, std::nullopt, 50 * mib));
  EXPECT_NO_THROW(training::check_address_space(1, 10.0 * mib, 400 * mib, 50 * mib));
  try {
    training::check_address_space(2, 10.0 * mib, 350 * mib, 50 * mib);  // 50 + 2 x 128 + 72 + 10
    ADD_FAILURE() << "350 MiB with 50 in use cannot hold two threads' buffers";
  } catch (const cli::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("ulimit -v 358400)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("ulimit -v 397312 or more"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("--threads 2"), std::string::npos) << e.what();
  }
  EXPECT_EQ(training::address_space_needed(2, 10.0 * mib), (256 + 72 + 10) * mib);
}

// #35 item 10: a log.csv that is a FIFO, a folder or a dangling symlink was
// taken for a missing log and replaced; now the resume refuses it, and
// never opens the FIFO (which would block).
TEST_F(TrainingReliabilityTest, AResumedLogThatIsNotAFileIsRefused) {
  for (const std::string kind : {"fifo", "folder", "dangling symlink"}) {
    SCOPED_TRACE(kind);
    const std::string out = path(kind);
    ASSERT_EQ(run(kSeq2seq, tiny_run_args("seq2seq", out, "2")).code, 0);
    const std::string log = out + "/log.csv";
    fs::remove(log);
    if (kind == "fifo") {
      ASSERT_EQ(::mkfifo(log.c_str(), 0644), 0);
    }
    if (kind == "folder") fs::create_directories(log + "/inside");
    if (kind == "dangling symlink") fs::create_symlink(out + "/nowhere.csv", log);
    Result r = run(kSeq2seq, {"--resume", out, "--steps", "3"}, tiny_flags("seq2seq").session);
    EXPECT_EQ(r.code, 2) << r.err;
    // One line of error, the last (after "resuming from ..." and the note
    // on the schedule).
    const size_t error = r.err.find("seq2seq: error: --resume ");
    ASSERT_NE(error, std::string::npos) << r.err;
    EXPECT_EQ(r.err.find('\n', error), r.err.size() - 1) << r.err;
    EXPECT_NE(r.err.find("log.csv\" is a", error), std::string::npos) << r.err;
    const fs::file_type left = fs::symlink_status(log).type();
    EXPECT_EQ(left, kind == "fifo"     ? fs::file_type::fifo
                    : kind == "folder" ? fs::file_type::directory
                                       : fs::file_type::symlink);
  }
}

// #35 item 10: "error: Resource temporarily unavailable" named nothing.
// Stacks too large for the address space keep the worker threads from
// starting (pthread_create's EAGAIN).
TEST_F(TrainingReliabilityTest, AThreadThatCannotStartIsNamed) {
  SKIP_UNDER_ASAN();
  std::vector<std::string> args = tiny_run_args("seq2seq", path("t"), "2");
  args.insert(args.end(), {"--threads", "3"});
  Result r = run_limited("ulimit -v 400000; ulimit -s 300000", kSeq2seq, args);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_NE(r.err.find("--threads 3: cannot start a worker thread: "), std::string::npos) << r.err;
}

// #35 item 5: the study's job runner, when the system starts no thread for
// it, aborted ("terminate called without an active exception"): its vector
// of threads was destroyed holding a joinable one. In a child process whose
// address space leaves no room for a thread's stack, every job must still
// run, on the threads that started or on the caller's, and the child end
// normally.
TEST(StudyJobRunner, JobsRunWhenNoThreadCanStart) {
  SKIP_UNDER_ASAN();
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const uint64_t in_use = training::address_space_in_use();
    const rlimit limit{in_use + (uint64_t{2} << 20), in_use + (uint64_t{2} << 20)};
    if (in_use == 0 || ::setrlimit(RLIMIT_AS, &limit) != 0) ::_exit(3);
    // Threads that wait until the end take the stacks the C library keeps
    // from the parent's finished threads, until no new stack can be mapped.
    std::mutex hold;
    hold.lock();
    std::vector<std::thread> holders;
    bool refused = false;
    try {
      while (holders.size() < 1000) holders.emplace_back([&hold] { std::lock_guard g(hold); });
    } catch (const std::system_error&) {
      refused = true;
    }
    std::atomic<int> done{0};
    if (refused)
      study::run_jobs(
          "test", 6, 3, [&](size_t) { ++done; }, nullptr);
    hold.unlock();
    for (std::thread& t : holders) t.join();
    ::_exit(!refused ? 4 : done == 6 ? 0 : 5);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "ended by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "3: no limit set; 4: threads kept starting; 5: jobs lost";
}

// #36 item 4a: resuming a run still before its first save advised starting
// it again with --overwrite, which then said the folder was in use.
TEST_F(TrainingReliabilityTest, ResumingARunStillTrainingSaysItIsInUse) {
  const std::string out = path("busy");
  std::vector<std::string> args = tiny_run_args("seq2seq", out, "100000");
  args.insert(args.end(), {"--save-every", "0"});
  const pid_t pid = spawn(kSeq2seq, args);
  wait_for_rows(out + "/log.csv", 1);
  ASSERT_FALSE(fs::exists(out + "/checkpoint.safetensors"));
  Result r = run(kSeq2seq, {"--resume", out, "--steps", "5"});
  ::kill(pid, SIGTERM);
  Result first = wait(pid);
  EXPECT_EQ(first.code, 128 + SIGTERM);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("is in use by another run (pid " + std::to_string(pid) + ")"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("--overwrite"), std::string::npos) << r.err;
}

// #36 item 4b: an interrupted run's last progress line said "done 315/1500".
TEST_F(TrainingReliabilityTest, AnInterruptedRunSaysSoAndHowToResume) {
  const std::string out = path("int");
  std::vector<std::string> args = tiny_run_args("seq2seq", out, "100000");
  args.insert(args.end(), {"--save-every", "0"});
  const pid_t pid = spawn(kSeq2seq, args);
  wait_for_rows(out + "/log.csv", 2);
  ::kill(pid, SIGINT);
  Result r = wait(pid);
  EXPECT_EQ(r.code, 130) << r.err;
  EXPECT_EQ(r.err.find("done "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("interrupted at "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("/100000 after "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("continue with: seq2seq --resume " + out + "\n"), std::string::npos)
      << r.err;
}

TEST(ProgressStop, TheLastLineSaysHowTheRunEnded) {
  std::ostringstream out;
  double now = 0;
  cli::Progress progress(1500, out, {.tty = false, .clock = [&now] { return now; }});
  progress.update(315, "loss 1.5");
  now = 40;
  progress.stop("interrupted");
  EXPECT_NE(out.str().find("interrupted at 315/1500 after 40s"), std::string::npos) << out.str();
  EXPECT_EQ(out.str().find("done"), std::string::npos) << out.str();
}

// #36 item 4c: `wrote "runs/gpl"/{log.csv,...}` was no path to copy.
TEST_F(TrainingReliabilityTest, TheWroteLineNamesPathsAShellReadsBack) {
  const std::string out = path("my run");
  Result r = run(kSeq2seq, tiny_run_args("seq2seq", out, "2"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("wrote '" + out + "/log.csv' '" + out + "/attention_grads.csv' '" + out +
                       "/checkpoint.safetensors' '" + out + "/model.safetensors' '" + out +
                       "/index.html'\n"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(cli::shell_word("runs/gpl/log.csv"), "runs/gpl/log.csv");
  EXPECT_EQ(cli::shell_word("it's"), "'it'\\''s'");
  EXPECT_EQ(cli::shell_word(""), "''");
}

// #36 item 4d: raising --steps on resume restarted the cosine's decay (the
// lr jumped from its end value back up); the schedule keeps its horizon.
TEST_F(TrainingReliabilityTest, RaisingStepsOnResumeKeepsTheSchedule) {
  const std::string out = path("longer");
  std::vector<std::string> args = tiny_run_args("seq2seq", out, "4");
  args.insert(args.end(), {"--warmup", "0", "--lr", "0.001"});
  ASSERT_EQ(run(kSeq2seq, args).code, 0);
  Result r = run(kSeq2seq, {"--resume", out, "--steps", "8"}, tiny_flags("seq2seq").session);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::vector<double> lrs = lr_column(out + "/log.csv");
  ASSERT_EQ(lrs.size(), 8u);
  for (size_t i = 4; i < 8; ++i) EXPECT_EQ(lrs[i], lrs[3]) << "step " << i + 1;
  EXPECT_NE(r.err.find("note: --steps 8 runs past the cosine schedule's 4 steps"),
            std::string::npos)
      << r.err;
  // And once more: the second resume still knows the first session's horizon.
  Result again = run(kSeq2seq, {"--resume", out, "--steps", "9"}, tiny_flags("seq2seq").session);
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(lr_column(out + "/log.csv").back(), lrs[3]);
}

// A resume without --threads continues with the run's own, so it goes on
// bitwise (docs/reliability.md), with no warning.
TEST_F(TrainingReliabilityTest, AResumeKeepsTheRunsThreads) {
  const std::string out = path("threads");
  std::vector<std::string> args = tiny_run_args("seq2seq", out, "2");
  args.insert(args.end(), {"--threads", "2"});
  ASSERT_EQ(run(kSeq2seq, args).code, 0);
  Result r = run(kSeq2seq, {"--resume", out, "--steps", "3"}, tiny_flags("seq2seq").session);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err.find("differs"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace gradflow::testing
