// What the programs refuse or stop on before a result would be wrong:
// floats that do not fit in float32, runs whose every step is skipped, and
// input files too large or endless; and what they recover from: charlm's
// default prompt on a text without it. Exit codes as docs/programs.md lists them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/examples/run_program.h"

namespace gradflow::testing {
namespace {

namespace fs = std::filesystem;

using ProgramGuardsTest = ProgramTest;

// Each in the dtype it is used in: 1e300 would be infinity there.
TEST_F(ProgramGuardsTest, FloatsMustFitInFloat32) {
  for (const ListedProgram& listed : programs_of_kind("training")) {
    const std::string& program = listed.path;
    expect_usage_error(program, {"--scale", "const:1e300"});
    expect_usage_error(program, {"--lr", "1e39"});
    expect_usage_error(program, {"--weight-decay", "1e39"});
    expect_usage_error(program, {"--clip", "1e39"});
  }
  Result r = run(kCharlm, {"--scale", "const:1e300"});
  EXPECT_NE(r.err.find("does not fit in float32"), std::string::npos) << r.err;
}

// const:3e38 overflows every attention logit, so every step is skipped:
// --max-skipped-steps stops the run (exit code 2) with its checkpoint, and
// --stop-on-nan stops at the first (exit code 1), in every program alike.
TEST_F(ProgramGuardsTest, RunsThatCannotTrainStopWithTheirCodes) {
  for (const ListedProgram& listed : programs_of_kind("training")) {
    const std::string& program = listed.path;
    const std::string out = path(listed.name);
    std::vector<std::string> args = kTiny;
    args.insert(args.end(), {"--scale", "const:3e38", "--eval-every", "0", "--out", out});
    Result r = run(program, args, {"--steps", "1000", "--max-skipped-steps", "5"});
    EXPECT_EQ(r.code, 2) << program << "\n" << r.err;
    EXPECT_NE(r.err.find("stopped at step 5: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("skipped for non-finite values (--max-skipped-steps 5"), std::string::npos)
        << r.err;
    EXPECT_TRUE(fs::exists(out + "/checkpoint.safetensors")) << program;

    r = run(program, args, {"--steps", "20", "--overwrite"});  // shorter than the limit
    EXPECT_EQ(r.code, 2) << program << "\n" << r.err;
    EXPECT_NE(r.err.find("every one of this run's 20 steps was skipped"), std::string::npos)
        << r.err;

    r = run(program, args, {"--steps", "20", "--overwrite", "--stop-on-nan"});
    EXPECT_EQ(r.code, 1) << program << "\n" << r.err;
    EXPECT_NE(r.err.find("stopped at step 1 on a non-finite value"), std::string::npos) << r.err;
  }
}

// The default prompt "The " needs a T; a text without one prompts with its
// own first word instead of failing.
TEST_F(ProgramGuardsTest, CharlmPromptsFromATextWithoutTheDefaultsLetters) {
  std::ofstream text(path("lower.txt"));
  for (int i = 0; i < 200; ++i) text << "the cat sat on the mat. a dog ran. ";
  text.close();
  Result r = run(kCharlm, kTiny,
                 {"--text", path("lower.txt"), "--context", "16", "--steps", "2", "--sample-tokens",
                  "20", "--eval-batches", "1", "--out", path("run")});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("sample (temperature 0.8, top-k 0):\nthe "), std::string::npos) << r.out;
  expect_usage_error(kCharlm, {"--text", path("lower.txt"), "--prompt", "The "});
}

// A text file's size is checked before it is read, and a device is no text:
// a huge sparse file and /dev/zero are refused at once, reading nothing.
TEST_F(ProgramGuardsTest, InputFilesAreSizeCheckedBeforeReading) {
  { std::ofstream big(path("big.txt")); }
  fs::resize_file(path("big.txt"), (uint64_t{1} << 30) + 1);  // sparse: no disk used
  // What charlm holds when it refuses a file it cannot open, reading
  // nothing: its own size (larger under AddressSanitizer). Refusing the
  // big file may add little to it, far less than the 1 GiB a read would.
  const Result missing = run(kCharlm, {"--text", path("missing.txt"), "--out", path("run")});
  ASSERT_EQ(missing.code, 2) << missing.err;
  const long baseline_kb = missing.max_rss_kb;
  for (const std::string& file : {path("big.txt"), std::string("/dev/zero")}) {
    const auto start = std::chrono::steady_clock::now();
    Result r = run(kCharlm, {"--text", file, "--out", path("run")});
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_EQ(lines(r.err), 1u) << r.err;
    EXPECT_LT(r.max_rss_kb, baseline_kb + 64 * 1024)
        << file << " (refusing a missing file: " << baseline_kb << " kB)";
    EXPECT_LT(seconds, 5) << file;
  }
  EXPECT_NE(run(kCharlm, {"--text", path("big.txt")}).err.find("more than the limit of 1073741824"),
            std::string::npos);
  EXPECT_NE(run(kCharlm, {"--text", "/dev/zero"}).err.find("is a device"), std::string::npos);
}

}  // namespace
}  // namespace gradflow::testing
