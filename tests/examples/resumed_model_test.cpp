// The programs' files build their model from the file alone (nn/io/model_file.h),
// the checkpoints of older code included; and a resume checks the
// checkpoint's tensors against its config before building anything, so an
// edit of both config.* and flag.* (a million layers, another d_ff) is
// refused in one line at once instead of allocating for minutes or resuming
// as another model.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "nn/io/model_file.h"
#include "tests/examples/run_program.h"
#include "tests/tensor/testing.h"

namespace gradflow::testing {
namespace {

namespace fs = std::filesystem;

using ResumedModelTest = ProgramTest;

const fs::path kFixtures = fs::path(GRADFLOW_SOURCE_DIR) / "tests/data/old_checkpoints";

// The model load_model built holds the file's weights (under `prefix`), bit for bit.
void expect_file_weights(const nn::LoadedModel& loaded, const std::string& file,
                         const std::string& prefix) {
  const NamedTensors state = loaded.module->state_dict();
  size_t found = 0;
  for (const auto& [name, t] : nn::load_safetensors(file).tensors) {
    if (name.rfind(prefix, 0) != 0) continue;
    ++found;
    auto it = std::find_if(state.begin(), state.end(),
                           [&](const auto& kv) { return kv.first == name.substr(prefix.size()); });
    ASSERT_NE(it, state.end()) << name;
    EXPECT_TRUE(same_bytes(it->second, t)) << name;
  }
  EXPECT_EQ(found, state.size());
}

TEST_F(ResumedModelTest, OldCheckpointsBuildTheirModelFromTheFileAlone) {
  const std::vector<std::pair<std::string, nn::ModelKind>> programs = {
      {"charlm", nn::ModelKind::kDecoder},
      {"recall", nn::ModelKind::kDecoder},
      {"seq2seq", nn::ModelKind::kEncoderDecoder},
      {"classify", nn::ModelKind::kClassifier}};
  for (const auto& [program, kind] : programs) {
    SCOPED_TRACE(program);
    const std::string file = (kFixtures / program / "checkpoint.safetensors").string();
    const nn::LoadedModel loaded = nn::load_model(file);
    EXPECT_EQ(loaded.spec.kind, kind);
    expect_file_weights(loaded, file, "model.");
    EXPECT_EQ(loaded.spec.classes, program == "classify" ? 2 : 0);
  }
}

class TamperedCheckpoint : public ResumedModelTest {
 protected:
  // A 2-step charlm run in `out` of the smallest model, whose million layers
  // would fit in memory and take minutes to build; returns its checkpoint.
  std::string train(const std::string& out) {
    Result r = run(kCharlm, {"--d-model", "4",  "--heads",        "2", "--layers",        "1",
                             "--d-ff",    "4",  "--batch",        "4", "--corpus-chars",  "3000",
                             "--context", "16", "--eval-batches", "1", "--sample-tokens", "0",
                             "--steps",   "2",  "--out",          out});
    EXPECT_EQ(r.code, 0) << r.err;
    return out + "/checkpoint.safetensors";
  }
  // Sets config.<field> and its flag alike, as a careful edit would.
  static void edit(const std::string& checkpoint, const std::string& field, const std::string& flag,
                   const std::string& value) {
    nn::SafetensorsFile file = nn::load_safetensors(checkpoint);
    for (auto& [key, v] : file.metadata)
      if (key == "config." + field || key == "flag." + flag) v = value;
    nn::save_safetensors(checkpoint, file.tensors, file.metadata);
  }
  // The one-line usage error of resuming `out`.
  std::string resume_error(const std::string& out) {
    Result r = run(kCharlm, {"--resume", out, "--steps", "2", "--sample-tokens", "0"});
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_EQ(lines(r.err), 1u) << r.err;
    return r.err;
  }
};

TEST_F(TamperedCheckpoint, AMillionLayersIsRefusedBeforeTheModelIsBuilt) {
  const std::string out = path("run"), checkpoint = train(out);
  const nn::LoadedModel trained = nn::load_model(out + "/model.safetensors");
  EXPECT_EQ(trained.spec.kind, nn::ModelKind::kDecoder);
  expect_file_weights(trained, out + "/model.safetensors", "");

  edit(checkpoint, "layers", "--layers", "1000000");
  EXPECT_EQ(resume_error(out), "charlm: error: --resume \"" + checkpoint +
                                   "\": no tensor 'decoder.layers.1.ff.fc1.bias' in the file, "
                                   "which the config implies (config.layers 1000000)\n");
}

TEST_F(TamperedCheckpoint, AnotherDffInBothConfigAndFlagIsRefusedByTheTensorShapes) {
  const std::string out = path("run"), checkpoint = train(out);
  edit(checkpoint, "d_ff", "--d-ff", "8");
  EXPECT_EQ(resume_error(out), "charlm: error: --resume \"" + checkpoint +
                                   "\": tensor 'decoder.layers.0.ff.fc1.bias' is (4) in the "
                                   "file, the config implies (8)\n");
}

}  // namespace
}  // namespace gradflow::testing
