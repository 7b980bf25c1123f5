// Messages that said the wrong thing: a run killed before its first save was
// to be continued with a --resume that found nothing; a bad value stored in
// a checkpoint read as if typed; model.safetensors resumed the checkpoint
// beside it without a word; a dangling --out said "File exists"; paths were
// not quoted.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "nn/io/safetensors.h"
#include "tests/examples/run_program.h"

namespace gradflow::testing {
namespace {

namespace fs = std::filesystem;

using MessagesTest = ProgramTest;

std::vector<std::string> tiny_args(const std::string& program, const std::string& out) {
  std::vector<std::string> args = kTiny;
  const std::vector<std::string> extra = tiny_extra(program);
  args.insert(args.end(), extra.begin(), extra.end());
  args.insert(args.end(), {"--steps", "2", "--eval-every", "0", "--out", out});
  return args;
}

void set_metadata(const std::string& checkpoint, const std::string& key, const std::string& value) {
  nn::SafetensorsFile file = nn::load_safetensors(checkpoint);
  for (auto& [k, v] : file.metadata)
    if (k == key) v = value;
  nn::save_safetensors(checkpoint, file.tensors, file.metadata);
}

TEST_F(MessagesTest, EveryTrainingProgramSaysWhereAResumeWentWrong) {
  for (const ListedProgram& p : programs_of_kind("training")) {
    SCOPED_TRACE(p.name);
    const std::string out = path(p.name + " run");  // a space: the quotes show where it ends
    ASSERT_EQ(run(p.path, tiny_args(p.name, out)).code, 0);

    // model.safetensors silently resumed checkpoint.safetensors.
    expect_usage_error(p.path, {"--resume", out + "/model.safetensors", "--steps", "3"});
    Result r = run(p.path, {"--resume", out + "/model.safetensors", "--steps", "3"});
    EXPECT_NE(r.err.find("--resume \"" + out + "/model.safetensors\": give the run's folder"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("weights only"), std::string::npos) << r.err;

    // A stored value is the checkpoint's, not the command line's.
    set_metadata(out + "/checkpoint.safetensors", "flag.--steps", "0");
    r = run(p.path, {"--resume", out}, tiny_flags(p.name).session);
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_EQ(r.err.find(p.name + ": error: --steps"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("--resume \"" + out +
                         "/checkpoint.safetensors\": the checkpoint's flag.--steps \"0\" is not "
                         "valid: --steps: must be >= 1, got 0"),
              std::string::npos)
        << r.err;
  }
}

// After a kill before the first save only log.csv is there: the new run was
// told "continue it with --resume r", and --resume r said "no checkpoint".
TEST_F(MessagesTest, ARunKilledBeforeItsFirstSaveIsNotOfferedAResume) {
  const std::string out = path("r");
  fs::create_directories(out);
  std::ofstream(out + "/log.csv") << "step,loss,lr,grad_norm,skipped,val_loss\n1,2.5,0.001,1,0,\n";
  Result fresh = run(kSeq2seq, tiny_args("seq2seq", out));
  EXPECT_EQ(fresh.code, 2);
  EXPECT_EQ(fresh.err.find("--resume"), std::string::npos) << fresh.err;
  EXPECT_NE(fresh.err.find("saved no checkpoint"), std::string::npos) << fresh.err;
  Result resume = run(kSeq2seq, {"--resume", out});
  EXPECT_EQ(resume.code, 2);
  EXPECT_NE(resume.err.find("--resume \"" + out +
                            "\": no checkpoint.safetensors there (the run stopped before its first "
                            "save; start it again with --out \"" +
                            out + "\" --overwrite)"),
            std::string::npos)
      << resume.err;
  EXPECT_EQ(run(kSeq2seq, tiny_args("seq2seq", out), {"--overwrite"}).code, 0);
}

// `--out` a symlink to nothing said "File exists".
TEST_F(MessagesTest, ADanglingOutSymlinkIsNamed) {
  fs::create_symlink(path("nowhere"), path("link"));
  expect_usage_error(kSeq2seq, tiny_args("seq2seq", path("link")));
  const Result r = run(kSeq2seq, tiny_args("seq2seq", path("link")));
  EXPECT_NE(r.err.find("--out \"" + path("link") + "\" is a symbolic link to \"" + path("nowhere") +
                       "\", which does not exist"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find("File exists"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace gradflow::testing
