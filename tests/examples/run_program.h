// Runs the programs as a user would (without a shell), for the tests that
// drive them end to end. The programs are those examples/CMakeLists.txt
// lists with gradflow_program; tests/CMakeLists.txt generates their list,
// tests/examples/programs_list.h in the build tree.
#pragma once

#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tensor/kernels/blas_info.h"
#include "tests/examples/programs_list.h"

extern char** environ;

namespace gradflow::testing {

// The path of a listed program. Throws for another name (also from the
// constants below, before any test runs).
inline std::string program_path(const std::string& name) {
  for (const ListedProgram& p : listed_programs())
    if (p.name == name) return p.path;
  throw std::logic_error(name + " is not a gradflow_program of examples/CMakeLists.txt");
}

// The listed programs of one kind ("training", "tool" or "standalone").
inline std::vector<ListedProgram> programs_of_kind(const std::string& kind) {
  std::vector<ListedProgram> out;
  for (const ListedProgram& p : listed_programs())
    if (p.kind == kind) out.push_back(p);
  return out;
}

// The programs with tests of their own, beside those every program gets.
inline const std::string kSeq2seq = program_path("seq2seq");
inline const std::string kCharlm = program_path("charlm");
inline const std::string kClassify = program_path("classify");
inline const std::string kRecall = program_path("recall");
inline const std::string kScalingStudy = program_path("scaling_study");
inline const std::string kTrainBench = GRADFLOW_TRAIN_BENCH;

// Small enough that a run takes a moment even under the sanitizers.
inline const std::vector<std::string> kTiny = {"--d-model", "16", "--heads", "2", "--layers", "1",
                                               "--d-ff",    "32", "--batch", "8"};

// What else keeps a training program's run tiny: small data (run flags, which
// the checkpoint keeps) and a small evaluation (session flags, given to each
// session). A training program not listed here runs with kTiny and its own
// defaults for the rest, which then should take seconds, not minutes.
struct TinyFlags {
  std::vector<std::string> data, session;
};
inline const std::map<std::string, TinyFlags> kTinyFlags = {
    {"seq2seq", {{"--max-len", "4"}, {"--eval-examples", "16", "--show", "0"}}},
    {"charlm",
     {{"--corpus-chars", "3000", "--context", "16"},
      {"--eval-batches", "1", "--sample-tokens", "0"}}},
    {"classify", {{"--max-len", "6"}, {"--eval-examples", "32", "--show", "0"}}},
    {"recall",
     {{"--keys", "8", "--pairs", "3", "--queries", "2"},
      {"--eval-examples", "16", "--show", "0"}}}};
inline TinyFlags tiny_flags(const std::string& program) {
  auto it = kTinyFlags.find(program);
  return it == kTinyFlags.end() ? TinyFlags{} : it->second;
}
// data and session together.
inline std::vector<std::string> tiny_extra(const std::string& program) {
  TinyFlags f = tiny_flags(program);
  f.data.insert(f.data.end(), f.session.begin(), f.session.end());
  return f.data;
}

// A tiny run of `program` into `out` for `steps` steps, without evaluations.
inline std::vector<std::string> tiny_run_args(const std::string& program, const std::string& out,
                                              const std::string& steps) {
  std::vector<std::string> args = kTiny;
  const std::vector<std::string> extra = tiny_extra(program);
  args.insert(args.end(), extra.begin(), extra.end());
  args.insert(args.end(), {"--steps", steps, "--eval-every", "0", "--out", out});
  return args;
}

// How spawn sets up the standard streams: by default stdout and stderr go
// to the files "stdout" and "stderr" of the test's directory.
struct Streams {
  std::vector<int> closed = {};  // descriptors the program starts without (`>&-`)
  std::string stdout_path = "";  // instead of the file "stdout" (e.g. /dev/full)
  std::string cwd = "";          // the program's working directory, if not this one's
};

// A fresh directory per test, removed afterwards; a program's stdout and
// stderr go to files in it.
class ProgramTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           ("gradflow_" + std::string(info->test_suite_name()) + "_" + info->name() + "_" +
            std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  struct Result {
    int code = -1;
    std::string out, err;
    long max_rss_kb = 0;  // the program's peak resident memory
    int killed_by = 0;    // the signal that ended it, if one did (code is then 128 + it)
  };

  // Starts the program with stdout and stderr going to files; returns its pid.
  pid_t spawn(const std::string& program, const std::vector<std::string>& args,
              const Streams& streams = {}) {
    std::vector<std::string> all = {program};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    const std::string out = streams.stdout_path.empty() ? path("stdout") : streams.stdout_path;
    posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, path("stderr").c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    for (int fd : streams.closed) posix_spawn_file_actions_addclose(&actions, fd);
    if (!streams.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, streams.cwd.c_str());
    // The stop signals start at their default action, whatever this process
    // inherited (a shell's background job ignores SIGINT, nohup SIGHUP).
    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    sigset_t defaults;
    sigemptyset(&defaults);
    for (int signal : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&defaults, signal);
    posix_spawnattr_setsigdefault(&attributes, &defaults);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGDEF);
    pid_t pid = -1;
    int rc = posix_spawn(&pid, program.c_str(), &actions, &attributes, argv.data(), environ);
    posix_spawnattr_destroy(&attributes);
    posix_spawn_file_actions_destroy(&actions);
    EXPECT_EQ(rc, 0) << "cannot start " << program;
    return pid;
  }
  // On a machine whose OpenBLAS runs a generic core the programs say so
  // first, in one line on stderr (tensor/kernels/blas_info.h; BlasInfo.*
  // test it): the tests of everything else read stderr without it.
  static std::string without_blas_note(const std::string& err) {
    const std::string note = generic_core_note();
    if (note.empty()) return err;
    std::string out;
    size_t at = 0;
    while (at < err.size()) {
      size_t end = err.find('\n', at);
      end = end == std::string::npos ? err.size() : end + 1;
      if (err.compare(at, end - at, note + "\n") != 0) out += err.substr(at, end - at);
      at = end;
    }
    return out;
  }
  Result wait(pid_t pid) {
    int status = 0;
    Result r;
    rusage usage{};
    if (pid > 0 && wait4(pid, &status, 0, &usage) == pid) {
      r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      r.killed_by = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
      r.max_rss_kb = usage.ru_maxrss;  // Linux counts KiB
    }
    r.out = read(path("stdout"));
    r.err = without_blas_note(read(path("stderr")));
    return r;
  }
  Result run(const std::string& program, std::vector<std::string> args,
             const std::vector<std::string>& more = {}) {
    args.insert(args.end(), more.begin(), more.end());
    return wait(spawn(program, args));
  }
  static std::string read(const std::string& file) {
    std::ifstream in(file, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  // Waits up to 60 s for the program's log at `log` to have `rows` rows.
  static void wait_for_rows(const std::string& log, size_t rows) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (lines(read(log)) < rows + 1 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  static size_t lines(const std::string& text) {
    return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
  }
  void expect_usage_error(const std::string& program, const std::vector<std::string>& args) {
    Result r = run(program, args);
    std::string name = std::filesystem::path(program).filename().string(), cmd = name;
    for (const auto& a : args) cmd += " " + a;
    EXPECT_EQ(r.code, 2) << cmd << "\n" << r.err;
    EXPECT_EQ(lines(r.err), 1u) << cmd << "\n" << r.err;
    EXPECT_EQ(r.err.rfind(name + ": error: ", 0), 0u) << cmd << "\n" << r.err;
  }

  std::filesystem::path dir_;
};

}  // namespace gradflow::testing
