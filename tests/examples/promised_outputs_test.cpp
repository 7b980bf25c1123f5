// What a training program promises to write, it writes, or it says what it
// did write and exits non-zero: a final state that cannot be saved, a resume
// into another folder with nothing left to train, a model file removed from
// a finished run.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/examples/run_program.h"

namespace gradflow::testing {
namespace {

namespace fs = std::filesystem;

using PromisedOutputsTest = ProgramTest;

std::vector<std::string> run_files_in(const std::string& dir) {
  std::vector<std::string> names;
  for (const char* f : {"log.csv", "checkpoint.safetensors", "model.safetensors",
                        "attention_grads.csv", "index.html"})
    if (fs::exists(dir + "/" + f)) names.push_back(f);
  return names;
}

// A weight decay that sends the weights to infinity on the last update: the
// state cannot be saved. It said "wrote DIR/{...}" and exited 0 with only
// log.csv there; and the next run in the folder was told to --resume it.
TEST_F(PromisedOutputsTest, AFinalStateThatCannotBeSavedIsExitOneAndNamesOnlyTheLog) {
  for (const ListedProgram& p : programs_of_kind("training")) {
    SCOPED_TRACE(p.name);
    const std::string out = path(p.name);
    Result r =
        run(p.path, tiny_run_args(p.name, out, "1"), {"--lr", "1", "--weight-decay", "3e38"});
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_EQ(r.out.find("wrote"), std::string::npos) << r.out;
    EXPECT_NE(r.err.find("not saved"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("wrote " + out + "/log.csv " + out + "/attention_grads.csv " + out +
                         "/index.html\n"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(run_files_in(out),
              (std::vector<std::string>{"log.csv", "attention_grads.csv", "index.html"}));

    // No checkpoint: nothing to resume, so --overwrite is the one way on.
    Result again = run(p.path, tiny_run_args(p.name, out, "1"));
    EXPECT_EQ(again.code, 2) << again.err;
    EXPECT_EQ(again.err.find("--resume"), std::string::npos) << again.err;
    EXPECT_NE(again.err.find("no checkpoint"), std::string::npos) << again.err;
    EXPECT_NE(again.err.find("--overwrite"), std::string::npos) << again.err;
  }
}

// A finished run resumed into another folder with nothing left to do: that
// folder gets the whole run (it got only log.csv), and a model file removed
// from a finished run is written again by a resume (it never was).
TEST_F(PromisedOutputsTest, AResumeWithNothingToTrainStillWritesWhatItPromises) {
  for (const ListedProgram& p : programs_of_kind("training")) {
    SCOPED_TRACE(p.name);
    const std::string a = path(p.name + "_a"), b = path(p.name + "_b");
    ASSERT_EQ(run(p.path, tiny_run_args(p.name, a, "2")).code, 0);
    Result copy = run(p.path, {"--resume", a, "--out", b}, tiny_flags(p.name).session);
    ASSERT_EQ(copy.code, 0) << copy.err;
    EXPECT_NE(copy.err.find("nothing to do"), std::string::npos) << copy.err;
    EXPECT_NE(
        copy.out.find("wrote " + b + "/log.csv " + b + "/attention_grads.csv " + b +
                      "/checkpoint.safetensors " + b + "/model.safetensors " + b + "/index.html\n"),
        std::string::npos)
        << copy.out;
    EXPECT_EQ(run_files_in(b).size(), 5u);
    EXPECT_EQ(read(b + "/model.safetensors"), read(a + "/model.safetensors"));
    Result from_b = run(p.path, {"--resume", b, "--steps", "3"}, tiny_flags(p.name).session);
    EXPECT_EQ(from_b.code, 0) << from_b.err;

    const std::string model = read(a + "/model.safetensors");
    fs::remove(a + "/model.safetensors");
    Result rebuilt = run(p.path, {"--resume", a}, tiny_flags(p.name).session);
    ASSERT_EQ(rebuilt.code, 0) << rebuilt.err;
    EXPECT_NE(rebuilt.out.find("wrote " + a + "/log.csv " + a + "/attention_grads.csv " + a +
                               "/model.safetensors " + a + "/index.html\n"),
              std::string::npos)
        << rebuilt.out;
    EXPECT_EQ(read(a + "/model.safetensors"), model);
  }
}

}  // namespace
}  // namespace gradflow::testing
