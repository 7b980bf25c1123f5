// --norm-type and --ffn in every training program: a run with RMSNorm and
// SwiGLU trains, its model and checkpoint say so in their metadata and hold
// the layers' parameters (an fc3 per block, no norm biases), it resumes,
// and a resume asking for the other norm or feed-forward is refused.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "nn/io/checkpoint.h"
#include "nn/io/safetensors.h"
#include "tests/examples/run_program.h"

namespace gradflow::testing {
namespace {

using NormFfnProgramsTest = ProgramTest;

TEST_F(NormFfnProgramsTest, RmsNormAndSwigluTrainCheckpointAndResumeInEveryProgram) {
  for (const ListedProgram& listed : programs_of_kind("training")) {
    SCOPED_TRACE(listed.name);
    const std::string out = path(listed.name);
    std::vector<std::string> args = tiny_run_args(listed.name, out, "3");
    args.insert(args.end(), {"--norm-type", "rmsnorm", "--ffn", "swiglu"});
    Result r = run(listed.path, args);
    ASSERT_EQ(r.code, 0) << r.err;
    for (const char* file : {"/model.safetensors", "/checkpoint.safetensors"}) {
      nn::SafetensorsFile saved = nn::load_safetensors(out + file);
      for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
               {"config.norm_type", "rmsnorm"}, {"config.ffn", "swiglu"}})
        EXPECT_EQ(nn::metadata_value(saved.metadata, key), value) << file << " " << key;
      int64_t fc3 = 0, norm_weights = 0;
      for (const auto& [name, t] : saved.tensors) {
        EXPECT_EQ(name.find("norm.bias"), std::string::npos) << file << " " << name;
        fc3 += name.find(".ff.fc3.weight") != std::string::npos;
        norm_weights += name.find("norm.weight") != std::string::npos;
      }
      EXPECT_GE(fc3, 1) << file;
      EXPECT_GE(norm_weights, 3) << file;  // a block's two and the final norm, at least
    }
    Result more =
        run(listed.path, {"--resume", out, "--steps", "5"}, tiny_flags(listed.name).session);
    ASSERT_EQ(more.code, 0) << more.err;
    EXPECT_NE(read(out + "/log.csv").find("\n5,"), std::string::npos);
    expect_usage_error(listed.path, {"--resume", out, "--steps", "6", "--norm-type", "layernorm"});
    expect_usage_error(listed.path, {"--resume", out, "--steps", "6", "--ffn", "mlp"});
  }
}

// DyT and a soft cap together (the rows dyt and softcap): every training
// program trains with them, writes them (the cap's value too, so a later
// change of the default cannot change a file), resumes with the bare name
// (the same c = 30) and refuses another cap or norm.
TEST_F(NormFfnProgramsTest, DytAndSoftcapTrainCheckpointAndResumeInEveryProgram) {
  for (const ListedProgram& listed : programs_of_kind("training")) {
    SCOPED_TRACE(listed.name);
    const std::string out = path(listed.name);
    std::vector<std::string> args = tiny_run_args(listed.name, out, "3");
    args.insert(args.end(), {"--norm-type", "dyt", "--scale", "softcap"});
    Result r = run(listed.path, args);
    ASSERT_EQ(r.code, 0) << r.err;
    for (const char* file : {"/model.safetensors", "/checkpoint.safetensors"}) {
      nn::SafetensorsFile saved = nn::load_safetensors(out + file);
      EXPECT_EQ(nn::metadata_value(saved.metadata, "config.norm_type"), "dyt") << file;
      EXPECT_EQ(nn::metadata_value(saved.metadata, "config.scale"), "softcap:30") << file;
      int64_t alphas = 0;
      for (const auto& [name, t] : saved.tensors)
        alphas += name.find("norm.alpha") != std::string::npos;
      EXPECT_GE(alphas, 3) << file;  // a block's two and the final norm, at least
    }
    Result more = run(listed.path, {"--resume", out, "--steps", "5", "--scale", "softcap"},
                      tiny_flags(listed.name).session);
    ASSERT_EQ(more.code, 0) << more.err;
    EXPECT_NE(read(out + "/log.csv").find("\n5,"), std::string::npos);
    expect_usage_error(listed.path, {"--resume", out, "--steps", "6", "--scale", "softcap:2"});
    expect_usage_error(listed.path, {"--resume", out, "--steps", "6", "--norm-type", "rmsnorm"});
  }
}

// SwiGLU's gate is silu: --activation relu beside it would do nothing, so it
// is refused in one line before anything runs.
TEST_F(NormFfnProgramsTest, AnActivationWithSwigluIsRefused) {
  for (const ListedProgram& listed : programs_of_kind("training"))
    expect_usage_error(listed.path,
                       {"--ffn", "swiglu", "--activation", "relu", "--out", path(listed.name)});
}

}  // namespace
}  // namespace gradflow::testing
