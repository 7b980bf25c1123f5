// The training programs end to end, run as a user would (without a shell):
// help, one-line errors with exit code 2, a tiny run's files, --resume, and
// Ctrl-C. The helpers that run them are in run_program.h.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "nn/io/checkpoint.h"
#include "nn/io/safetensors.h"
#include "tests/examples/run_program.h"

namespace gradflow::testing {
namespace {

namespace fs = std::filesystem;

using ProgramsTest = ProgramTest;

// The list examples/CMakeLists.txt generates holds every program, each built.
TEST_F(ProgramsTest, TheListHoldsEveryProgramBuilt) {
  std::vector<std::string> names;
  for (const ListedProgram& p : listed_programs()) {
    names.push_back(p.name);
    EXPECT_TRUE(p.kind == "training" || p.kind == "tool" || p.kind == "standalone") << p.kind;
    EXPECT_EQ(fs::path(p.path).filename(), p.name);
    EXPECT_EQ(::access(p.path.c_str(), X_OK), 0) << p.path;
  }
  for (const char* name : {"seq2seq", "charlm", "classify", "recall", "inspect_checkpoint",
                           "scaling_study", "minimal_train"})
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
  for (const auto& [name, flags] : kTinyFlags)
    EXPECT_EQ(std::count(names.begin(), names.end(), name), 1) << name << " in kTinyFlags";
}

// Every program, minimal_train included: --help answers on stdout with exit 0,
// and an unknown flag is one line on stderr with exit 2.
TEST_F(ProgramsTest, EveryProgramAnswersHelpAndRefusesAnUnknownFlag) {
  for (const ListedProgram& p : listed_programs()) {
    SCOPED_TRACE(p.name);
    Result r = run(p.path, {"--help"});
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out.rfind("usage: " + p.name + " ", 0), 0u) << r.out;
    EXPECT_EQ(r.err, "");
    EXPECT_EQ(run(p.path, {"-h"}).out, r.out);
    expect_usage_error(p.path, {"--no-such-flag"});
  }
}

// A bad GRADFLOW_GEMM is one line and exit code 2 in minimal_train too (it aborted, 134, on the
// uncaught Error), and --version still answers, naming the problem (it exited 2).
TEST_F(ProgramsTest, ABadGradflowGemmIsOneLineAndVersionStillAnswers) {
  // This process reads GRADFLOW_GEMM once, at its first call (the harness's note filter): first.
  (void)generic_core_note();
  ::setenv("GRADFLOW_GEMM", "garbage", 1);
  const Result minimal = run(program_path("minimal_train"), {});
  const Result version = run(kSeq2seq, {"--version"});
  ::unsetenv("GRADFLOW_GEMM");
  EXPECT_EQ(minimal.code, 2);
  EXPECT_EQ(minimal.err,
            "minimal_train: error: GRADFLOW_GEMM: expected own or blas, got 'garbage'\n");
  EXPECT_EQ(version.code, 0) << version.err;
  EXPECT_NE(version.out.find("matrix products: GRADFLOW_GEMM: expected own or blas, got "
                             "'garbage'"),
            std::string::npos)
      << version.out;
}

// What README.md and docs/programs.md say of the programs, on every program
// of the generated list: each is in the README's table of programs (a lesson
// in docs/lessons/README.md's table of lessons); the
// training programs and scaling_study take --seed and --threads; a program
// whose usage names a FILE refuses, in one line with exit code 2, to run
// without one.
TEST_F(ProgramsTest, ProgramsDoWhatTheReadmeSays) {
  std::ifstream file(std::string(GRADFLOW_SOURCE_DIR) + "/README.md");
  const std::string readme((std::istreambuf_iterator<char>(file)),
                           std::istreambuf_iterator<char>());
  ASSERT_FALSE(readme.empty());
  std::ifstream lessons_file(std::string(GRADFLOW_SOURCE_DIR) + "/docs/lessons/README.md");
  const std::string lessons((std::istreambuf_iterator<char>(lessons_file)),
                            std::istreambuf_iterator<char>());
  int reads_a_file = 0;
  for (const ListedProgram& p : listed_programs()) {
    SCOPED_TRACE(p.name);
    const bool lesson = p.name.rfind("lesson_", 0) == 0;
    EXPECT_NE((lesson ? lessons : readme).find("| `" + p.name), std::string::npos)
        << (lesson ? "not in docs/lessons/README.md's table" : "not in the README's table");
    const Result help = run(p.path, {"--help"});
    if (p.kind == "training" || p.name == "scaling_study") {
      EXPECT_NE(help.out.find("--seed"), std::string::npos);
      EXPECT_NE(help.out.find("--threads"), std::string::npos);
    }
    const std::string usage = help.out.substr(0, help.out.find('\n'));
    if (usage.find("FILE") != std::string::npos) {
      ++reads_a_file;
      expect_usage_error(p.path, {});
      EXPECT_NE(run(p.path, {}).err.find("FILE"), std::string::npos);
    }
  }
  EXPECT_EQ(reads_a_file, 1);  // inspect_checkpoint
}

TEST_F(ProgramsTest, HelpExitsZeroAndListsTheFlags) {
  for (const ListedProgram& program : programs_of_kind("training")) {
    Result r = run(program.path, {"--help"});
    EXPECT_EQ(r.code, 0) << program.name;
    for (const char* flag :
         {"--seed",       "--threads",     "--steps",      "--lr",         "--scale",
          "--d-model",    "--heads",       "--layers",     "--d-ff",       "--schedule",
          "--warmup",     "--clip",        "--eval-every", "--save-every", "--out",
          "--resume",     "--stop-on-nan", "--reference",  "--positional", "--norm",
          "--activation", "--dropout",     "--head-dim",   "--overwrite",  "--max-skipped-steps",
          "--batch"})
      EXPECT_NE(r.out.find(flag), std::string::npos) << program.name << " lacks " << flag;
  }
  EXPECT_NE(run(kSeq2seq, {"-h"}).out.find("--task"), std::string::npos);
  Result lm = run(kCharlm, {"--help"});
  for (const char* flag : {"--text", "--temperature", "--top-k", "--sample-tokens", "--prompt"})
    EXPECT_NE(lm.out.find(flag), std::string::npos) << flag;
  EXPECT_NE(run(kClassify, {"--help"}).out.find("first symbol"), std::string::npos);
  Result recall = run(kRecall, {"--help"});
  for (const char* flag : {"--keys", "--pairs", "--queries", "--eval-examples", "--show"})
    EXPECT_NE(recall.out.find(flag), std::string::npos) << flag;
}

TEST_F(ProgramsTest, BadFlagsAndValuesAreOneLineErrorsWithExitCode2) {
  // Each with an --out of its own in the test's folder: a value refused after
  // the run claimed its folder (--schedule noam --warmup 0) left
  // runs/<program>/run.lock in the directory the tests ran from.
  auto refused = [this](const std::string& program, std::vector<std::string> args) {
    args.insert(args.end(), {"--out", path("refused")});
    ProgramTest::expect_usage_error(program, args);
  };
  for (const ListedProgram& program : programs_of_kind("training")) {
    SCOPED_TRACE(program.name);
    refused(program.path, {"--steps", "abc"});
    refused(program.path, {"--steps", "0"});
    refused(program.path, {"--d-model", "30", "--heads", "4"});
    refused(program.path, {"--heads", "0"});
    refused(program.path, {"--scale", "sqrt"});
    refused(program.path, {"--schedule", "noam", "--warmup", "0"});
    refused(program.path, {"--resume", path("nowhere")});
  }
  fs::create_directories(path("bad"));
  std::ofstream(path("bad/checkpoint.safetensors")) << "not a checkpoint";
  refused(kSeq2seq, {"--resume", path("bad")});
  refused(kSeq2seq, {"--task", "sort", "--min-len", "5", "--max-len", "3"});
  refused(kCharlm, {"--text", path("nonexistent.txt")});
  std::ofstream(path("empty.txt")).flush();
  refused(kCharlm, {"--text", path("empty.txt")});
  std::ofstream(path("short.txt")) << "too short";
  refused(kCharlm, {"--text", path("short.txt")});
  refused(kCharlm, {"--prompt", "\x01"});
  refused(kClassify, {"--min-len", "9", "--max-len", "5"});
  refused(kRecall, {"--pairs", "40", "--keys", "32"});
  refused(kRecall, {"--pairs", "4", "--queries", "5"});
  refused(kRecall, {"--keys", "0"});
  refused(kRecall, {"--pairs", "2048", "--keys", "4096"});  // 8192 tokens
}

// A tiny run writes its three files; --resume continues it in place.
TEST_F(ProgramsTest, TinyRunsWriteTheirFilesAndResume) {
  for (const ListedProgram& program : programs_of_kind("training")) {
    SCOPED_TRACE(program.name);
    const std::string out = path(program.name);
    std::vector<std::string> args = {"--steps", "20", "--eval-every", "10", "--out", out};
    args.insert(args.end(), kTiny.begin(), kTiny.end());
    Result r = run(program.path, args, tiny_extra(program.name));
    ASSERT_EQ(r.code, 0) << r.err;
    // The run's page last: the file to open.
    EXPECT_NE(r.out.find("wrote " + out + "/log.csv " + out + "/attention_grads.csv " + out +
                         "/checkpoint.safetensors " + out + "/model.safetensors " + out +
                         "/index.html\n"),
              std::string::npos)
        << r.out;
    for (const char* file : {"log.csv", "model.safetensors", "checkpoint.safetensors",
                             "attention_grads.csv", "index.html"})
      EXPECT_TRUE(fs::is_regular_file(out + "/" + file)) << file;
    std::string log = read(out + "/log.csv");
    EXPECT_EQ(lines(log), 21u) << log;
    EXPECT_EQ(log.rfind("step,loss,lr,grad_norm,skipped,", 0), 0u) << log;

    // The settings come from the checkpoint; a contradiction is refused.
    Result more =
        run(program.path, {"--resume", out, "--steps", "25"}, tiny_flags(program.name).session);
    ASSERT_EQ(more.code, 0) << more.err;
    EXPECT_EQ(lines(read(out + "/log.csv")), 26u);
    expect_usage_error(program.path, {"--resume", out, "--steps", "30", "--d-model", "32"});
  }
  // --resume also takes the checkpoint file; a checkpoint of another program is refused.
  Result file =
      run(kSeq2seq, {"--resume", path("seq2seq/checkpoint.safetensors"), "--steps", "27"});
  EXPECT_EQ(file.code, 0) << file.err;
  EXPECT_EQ(lines(read(path("seq2seq/log.csv"))), 28u);
  expect_usage_error(kCharlm, {"--resume", path("seq2seq")});
  // recall's task flags are run flags: the checkpoint keeps them.
  expect_usage_error(kRecall, {"--resume", path("recall"), "--steps", "30", "--keys", "9"});
}

// recall scores only the answers and shows some held-out sequences with the
// model's answers: "  k3:v7 k1:v0 k5:v2 | k1 -> v0, k5 -> v6 (want v2)  (1/2 right)".
TEST_F(ProgramsTest, RecallShowsHeldOutSequencesWithTheModelsAnswers) {
  Result r = run(kRecall, kTiny,
                 {"--steps", "2", "--keys", "8", "--pairs", "3", "--queries", "2",
                  "--eval-examples", "8", "--show", "3", "--out", path("recall")});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("held-out (8 sequences, 16 answers): accuracy "), std::string::npos)
      << r.out;
  size_t shown = 0;
  for (size_t at = r.out.find(" | k"); at != std::string::npos; at = r.out.find(" | k", at + 1)) {
    EXPECT_LT(r.out.find("/2 right)", at), r.out.find('\n', at)) << r.out;
    ++shown;
  }
  EXPECT_EQ(shown, 3u) << r.out;
}

// seq2seq's --steps defaults by task (addition needs many more than copy),
// and --help says so. A resumed run keeps the steps its checkpoint holds.
TEST_F(ProgramsTest, Seq2seqStepsDefaultByTaskAndResumeKeepsThem) {
  Result help = run(kSeq2seq, {"--help"});
  EXPECT_NE(help.out.find("(default: 200 for copy, 400 for reverse, 600 for sort, 3000 for "
                          "addition; >= 1"),
            std::string::npos)
      << help.out;
  const std::string out = path("copy");
  Result r = run(kSeq2seq, kTiny,
                 {"--task", "copy", "--max-len", "4", "--eval-every", "0", "--eval-examples", "8",
                  "--show", "0", "--out", out});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("  200 steps of 8 examples, cosine(peak_lr=0.003, warmup_steps=40, "
                       "total_steps=200, min_lr=0.0003)"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(lines(read(out + "/log.csv")), 201u);
  EXPECT_EQ(
      nn::metadata_value(nn::load_safetensors(out + "/model.safetensors").metadata, "flag.--steps"),
      "200");
  r = run(kSeq2seq, {"--resume", out, "--eval-examples", "8", "--show", "0"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("already at step 200 of 200"), std::string::npos) << r.err;
  r = run(kSeq2seq, {"--resume", out, "--steps", "205", "--eval-examples", "8", "--show", "0"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(lines(read(out + "/log.csv")), 206u);
}

// --head-dim sets d_k in every attention layer, cross-attention included:
// with d_model 64, 2 heads of 16, each q_proj maps 64 to 32.
TEST_F(ProgramsTest, HeadDimReachesEveryAttentionLayer) {
  const std::string out = path("head_dim");
  Result r = run(kSeq2seq,
                 {"--d-model", "64", "--heads", "2", "--head-dim", "16", "--layers", "2", "--d-ff",
                  "32", "--steps", "2", "--eval-examples", "8", "--max-len", "4", "--out", out});
  ASSERT_EQ(r.code, 0) << r.err;
  int q_projections = 0;
  for (const auto& [name, t] : nn::load_safetensors(out + "/model.safetensors").tensors)
    if (name.find("q_proj.weight") != std::string::npos) {
      EXPECT_EQ(t.shape(), (Shape{32, 64})) << name;
      ++q_projections;
    }
  EXPECT_EQ(q_projections, 2 + 2 * 2);  // encoder self; decoder self and cross
  Result resumed = run(kSeq2seq, {"--resume", out, "--steps", "3"});
  EXPECT_EQ(resumed.code, 0) << resumed.err;
}

// Every ModelConfig option from the command line, in every training
// program: the model file keeps them in its metadata, rope adds no position
// table, and a resume restores them (another value contradicts it).
TEST_F(ProgramsTest, ModelOptionsReachEveryProgramAndResume) {
  for (const ListedProgram& listed : programs_of_kind("training")) {
    const std::string& program = listed.path;
    const std::string out = path(listed.name + "_options");
    std::vector<std::string> args = {
        "--steps",      "3",    "--eval-every", "0",    "--threads",    "2",    "--out",     out,
        "--positional", "rope", "--norm",       "post", "--activation", "relu", "--dropout", "0.1"};
    args.insert(args.end(), kTiny.begin(), kTiny.end());
    Result r = run(program, args, tiny_extra(listed.name));
    ASSERT_EQ(r.code, 0) << program << "\n" << r.err;
    nn::SafetensorsFile model = nn::load_safetensors(out + "/model.safetensors");
    for (const auto& [key, value] :
         std::vector<std::pair<std::string, std::string>>{{"config.positional", "rope"},
                                                          {"config.norm", "post"},
                                                          {"config.activation", "relu"},
                                                          {"config.dropout", "0.1"},
                                                          {"flag.--positional", "rope"}})
      EXPECT_EQ(nn::metadata_value(model.metadata, key), value) << program << " " << key;
    for (const auto& [name, t] : model.tensors)
      EXPECT_EQ(name.find("position"), std::string::npos) << program << " " << name;
    Result more = run(program, {"--resume", out, "--steps", "4"});
    EXPECT_EQ(more.code, 0) << program << "\n" << more.err;
    expect_usage_error(program, {"--resume", out, "--steps", "5", "--positional", "learned"});
  }
}

TEST_F(ProgramsTest, CtrlCSavesACheckpointThatResumes) {
  const std::string out = path("run");
  std::vector<std::string> args = {"--steps", "100000", "--eval-every", "0", "--out", out};
  args.insert(args.end(), kTiny.begin(), kTiny.end());
  pid_t pid = spawn(kSeq2seq, args);
  // Wait until training is under way (the log has rows), then Ctrl-C.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (lines(read(out + "/log.csv")) < 3 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ::kill(pid, SIGINT);
  Result r = wait(pid);
  EXPECT_EQ(r.code, 130) << r.err;
  EXPECT_NE(r.err.find("interrupted at step"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--resume " + out + "\n"), std::string::npos) << r.err;
  const size_t rows = lines(read(out + "/log.csv")) - 1;
  Result more = run(kSeq2seq, {"--resume", out, "--steps", std::to_string(rows + 2)});
  EXPECT_EQ(more.code, 0) << more.err;
  EXPECT_EQ(lines(read(out + "/log.csv")) - 1, rows + 2);
}

}  // namespace
}  // namespace gradflow::testing
