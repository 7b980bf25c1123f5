// A resume trains on what the checkpoint trained on, or refuses: the text's
// absolute path and digest, the evaluation settings, and config.* entries
// that agree with the flag.* entries beside them.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "nn/io/safetensors.h"
#include "tests/examples/run_program.h"

namespace gradflow::testing {
namespace {

namespace fs = std::filesystem;

using ResumeExactnessTest = ProgramTest;

std::string metadata_of(const std::string& checkpoint, const std::string& key) {
  for (const auto& [k, v] : nn::load_safetensors_header(checkpoint).metadata)
    if (k == key) return v;
  return "<absent>";
}

// Rewrites one metadata entry of a checkpoint, as a user's edit would.
void edit_metadata(const std::string& checkpoint, const std::string& key,
                   const std::string& value) {
  nn::SafetensorsFile file = nn::load_safetensors(checkpoint);
  bool found = false;
  for (auto& [k, v] : file.metadata)
    if (k == key) v = value, found = true;
  ASSERT_TRUE(found) << key;
  nn::save_safetensors(checkpoint, file.tensors, file.metadata);
}

std::vector<std::string> tiny_args(const std::string& program, const std::string& out) {
  std::vector<std::string> args = kTiny;
  const std::vector<std::string> extra = tiny_extra(program);
  args.insert(args.end(), extra.begin(), extra.end());
  args.insert(args.end(), {"--steps", "2", "--eval-every", "2", "--out", out});
  return args;
}

// --text was kept as typed: a resume from another directory read another
// file (or none), and a text edited in place with the same characters
// trained on other data without a word.
TEST_F(ResumeExactnessTest, CharlmKeepsTheTextsAbsolutePathAndDigest) {
  fs::create_directories(path("data"));
  std::string text;
  for (int i = 0; i < 100; ++i) text += "the cat sat on the mat. a dog ran far. ";
  std::ofstream(path("data/text.txt")) << text;
  const std::string out = path("run");
  std::vector<std::string> args = kTiny;
  args.insert(args.end(), {"--text", "text.txt", "--context", "16", "--eval-batches", "1",
                           "--sample-tokens", "0", "--steps", "2", "--out", out});
  Result r = wait(spawn(kCharlm, args, {.cwd = path("data")}));
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string checkpoint = out + "/checkpoint.safetensors";
  EXPECT_EQ(metadata_of(checkpoint, "flag.--text"), path("data/text.txt"));
  EXPECT_EQ(metadata_of(checkpoint, "text_digest").size(), 16u);

  Result elsewhere = wait(spawn(kCharlm, {"--resume", out, "--steps", "3", "--sample-tokens", "0"},
                                {.cwd = dir_.string()}));
  EXPECT_EQ(elsewhere.code, 0) << elsewhere.err;

  std::swap(text[0], text[1]);  // the same characters, other data
  std::ofstream(path("data/text.txt")) << text;
  Result edited = run(kCharlm, {"--resume", out, "--steps", "4", "--sample-tokens", "0"});
  EXPECT_EQ(edited.code, 2) << edited.err;
  EXPECT_EQ(lines(edited.err), 1u) << edited.err;
  EXPECT_NE(edited.err.find("digest differs"), std::string::npos) << edited.err;
}

// --eval-every and the evaluation's size were not stored: a resume that
// omitted them changed what val_loss meant in the middle of the log.
TEST_F(ResumeExactnessTest, EveryTrainingProgramKeepsItsEvaluationSettings) {
  for (const ListedProgram& p : programs_of_kind("training")) {
    SCOPED_TRACE(p.name);
    const std::string out = path(p.name);
    ASSERT_EQ(run(p.path, tiny_args(p.name, out)).code, 0);
    const std::string checkpoint = out + "/checkpoint.safetensors";
    EXPECT_EQ(metadata_of(checkpoint, "flag.--eval-every"), "2");
    const std::string size_flag = p.name == "charlm" ? "--eval-batches" : "--eval-examples";
    const TinyFlags tiny = tiny_flags(p.name);
    const auto given = std::find(tiny.session.begin(), tiny.session.end(), size_flag);
    ASSERT_NE(given, tiny.session.end());
    EXPECT_EQ(metadata_of(checkpoint, "flag." + size_flag), *(given + 1));

    // Omitted, they are the checkpoint's; another value is refused.
    const Result more = run(p.path, {"--resume", out, "--steps", "4",
                                     p.name == "charlm" ? "--sample-tokens" : "--show", "0"});
    ASSERT_EQ(more.code, 0) << more.err;
    const std::string log = read(out + "/log.csv");
    EXPECT_NE(log.find("\n4,"), std::string::npos) << log;
    expect_usage_error(p.path, {"--resume", out, "--steps", "5", size_flag, "3"});
    expect_usage_error(p.path, {"--resume", out, "--steps", "5", "--eval-every", "1"});
  }
}

// config.* built the model and flag.* said what the run was, never compared:
// an edited config.activation or config.scale (no weight changes shape)
// resumed another model under the old flags.
TEST_F(ResumeExactnessTest, EveryTrainingProgramRefusesConfigThatDisagreesWithItsFlags) {
  for (const ListedProgram& p : programs_of_kind("training")) {
    SCOPED_TRACE(p.name);
    const std::string out = path(p.name);
    ASSERT_EQ(run(p.path, tiny_args(p.name, out)).code, 0);
    const std::string checkpoint = out + "/checkpoint.safetensors";
    const std::string original = read(checkpoint);
    for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
             {"config.activation", "relu"}, {"config.scale", "inv_dk"}}) {
      edit_metadata(checkpoint, key, value);
      Result r = run(p.path, {"--resume", out, "--steps", "3"}, tiny_flags(p.name).session);
      EXPECT_EQ(r.code, 2) << r.err;
      EXPECT_EQ(lines(r.err), 1u) << r.err;
      EXPECT_NE(r.err.find("the checkpoint's " + key + " " + value + " differs from its flag."),
                std::string::npos)
          << r.err;
      std::ofstream(checkpoint, std::ios::binary) << original;
    }
  }
}

}  // namespace
}  // namespace gradflow::testing
