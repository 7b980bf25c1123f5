// What runs the products (tensor/kernels/blas_info.h): the path follows
// GRADFLOW_GEMM, and a program on OpenBLAS's generic core says so in one
// line on stderr. The generic core is forced with OPENBLAS_CORETYPE=Prescott
// in a fixture program (blas_probe.cpp), as on a CPU OpenBLAS does not know.
#include "tensor/kernels/blas_info.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern char** environ;

namespace gradflow {
namespace {

struct ProbeRun {
  int exit_code = -1;
  std::string out, err;
};

std::string read_all(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Runs blas_probe with this environment, minus OPENBLAS_CORETYPE and
// GRADFLOW_GEMM, plus `extra`; its streams go to a temporary folder.
ProbeRun run_probe(const std::vector<std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    if (entry.rfind("OPENBLAS_CORETYPE=", 0) != 0 && entry.rfind("GRADFLOW_GEMM=", 0) != 0)
      env.push_back(entry);
  }
  env.insert(env.end(), extra.begin(), extra.end());
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  std::string folder_template = (std::filesystem::temp_directory_path() / "blas_probe.XXXXXX");
  const std::filesystem::path folder = mkdtemp(folder_template.data());
  const std::string out = folder / "stdout", err = folder / "stderr";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::string program = GRADFLOW_BLAS_PROBE;
  char* argv[] = {program.data(), nullptr};
  pid_t pid = 0;
  ProbeRun run;
  if (posix_spawn(&pid, program.c_str(), &actions, nullptr, argv, envp.data()) == 0) {
    int status = 0;
    waitpid(pid, &status, 0);
    run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  posix_spawn_file_actions_destroy(&actions);
  run.out = read_all(out);
  run.err = read_all(err);
  std::filesystem::remove_all(folder);
  return run;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(BlasInfo, AGenericCoreGetsOneLineAndGradflowsOwnGemm) {
  if (blas_info().cpu_vectors == "sse") GTEST_SKIP() << "no AVX2 here: Prescott is not generic";
  const ProbeRun run = run_probe({"OPENBLAS_CORETYPE=Prescott"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(has(run.out, "blas_core=Prescott")) << run.out;
  EXPECT_TRUE(has(run.out, "gemm=own")) << run.out;
  EXPECT_TRUE(has(run.err, "note: OpenBLAS ")) << run.err;
  EXPECT_TRUE(has(run.err, "runs its generic Prescott kernels")) << run.err;
  EXPECT_TRUE(has(run.err, "GRADFLOW_GEMM=blas")) << run.err;
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
}

TEST(BlasInfo, ForcedBlasOnAGenericCoreSaysWhatItCosts) {
  if (blas_info().cpu_vectors == "sse") GTEST_SKIP() << "no AVX2 here: Prescott is not generic";
  const ProbeRun run = run_probe({"OPENBLAS_CORETYPE=Prescott", "GRADFLOW_GEMM=blas"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(has(run.out, "gemm=blas")) << run.out;
  EXPECT_TRUE(has(run.err, "slower")) << run.err;
  EXPECT_TRUE(has(run.err, "unset it")) << run.err;
}

TEST(BlasInfo, TheNativeCoreIsQuiet) {
  const ProbeRun run = run_probe({});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  if (blas_info().generic_core) GTEST_SKIP() << "OpenBLAS does not know this CPU either";
  EXPECT_EQ(run.err, "");
  EXPECT_TRUE(has(run.out, "gemm=blas")) << run.out;
}

TEST(BlasInfo, GradflowGemmForcesOurOwnGemm) {
  const ProbeRun run = run_probe({"GRADFLOW_GEMM=own"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(has(run.out, "gemm=own")) << run.out;
}

TEST(BlasInfo, ABadGradflowGemmIsAnError) {
  const ProbeRun run = run_probe({"GRADFLOW_GEMM=fast"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(run.err, "error: GRADFLOW_GEMM: expected own or blas, got 'fast'\n");
}

// This process's own path: what the GEMM tests of this run exercise (ctest
// runs them again under GRADFLOW_GEMM=own and =blas, tests/CMakeLists.txt).
TEST(BlasInfo, ThisProcessFollowsGradflowGemm) {
  const char* env = std::getenv("GRADFLOW_GEMM");
  const std::string forced = env ? env : "";
  const GemmPath expected = forced == "own"            ? GemmPath::kOwn
                            : forced == "blas"         ? GemmPath::kBlas
                            : blas_info().generic_core ? GemmPath::kOwn
                                                       : GemmPath::kBlas;
  EXPECT_EQ(blas_info().gemm, expected);
  EXPECT_TRUE(has(blas_summary(), expected == GemmPath::kOwn ? "gemm=own" : "gemm=blas"));
}

}  // namespace
}  // namespace gradflow
