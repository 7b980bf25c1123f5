// A checkpoint is checked both ways: a state no run could resume from (NaN
// weights or moments) is never written, and a damaged file (non-finite
// values, an update count beyond its steps, a step past 2^53, an all-zero
// generator) is refused on load by name, leaving the model as it was.
#include "nn/io/checkpoint.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>

#include "nn/io/atomic_file.h"
#include "nn/io/safetensors.h"
#include "nn/models.h"

namespace gradflow::nn {
namespace {

namespace fs = std::filesystem;

struct TinyRun {
  Generator gen{3}, data{4};
  DecoderLM model;
  AdamW optimizer;
  TinyRun() : model(config(), gen), optimizer(model.parameters(), 1e-3) {}
  static ModelConfig config() {
    ModelConfig c;
    c.vocab = 7, c.d_model = 8, c.heads = 2, c.layers = 1, c.d_ff = 16, c.max_len = 5;
    return c;
  }
};

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (fs::temp_directory_path() / ("gradflow_ckpt_" + std::to_string(::getpid()))).string();
    TinyRun run;
    save_checkpoint(path_, run.model, run.optimizer, {{"data", &run.data}}, 5, {{"k", "v"}});
    saved_ = read_file(path_, 1 << 20);
  }
  void TearDown() override { fs::remove(path_); }

  // Rewrites the saved checkpoint with `edit` applied to its tensors and
  // metadata, then returns the error loading it gives ("" if it loads).
  std::string load_after(const std::function<void(SafetensorsFile&)>& edit) {
    SafetensorsFile file = decode_safetensors(saved_);
    edit(file);
    save_safetensors(path_, file.tensors, file.metadata);
    TinyRun fresh;
    const std::vector<double> before = fresh.model.state_dict()[0].second.to_vector();
    try {
      load_checkpoint(path_, fresh.model, fresh.optimizer, {{"data", &fresh.data}});
    } catch (const Error& e) {
      EXPECT_EQ(fresh.model.state_dict()[0].second.to_vector(), before) << "changed on failure";
      return e.what();
    }
    return "";
  }
  static Tensor& tensor(SafetensorsFile& file, const std::string& name) {
    for (auto& [n, t] : file.tensors)
      if (n == name) return t;
    throw Error("no tensor " + name);
  }

  std::string path_, saved_;
};

TEST_F(CheckpointTest, AGoodCheckpointLoads) {
  EXPECT_EQ(load_after([](SafetensorsFile&) {}), "");
}

TEST_F(CheckpointTest, NonFiniteWeightsAndMomentsAreRefused) {
  std::string e = load_after(
      [](SafetensorsFile& f) { tensor(f, "model.lm_head.weight").data<float>()[3] = NAN; });
  EXPECT_NE(e.find("weight 'lm_head.weight' holds a non-finite value"), std::string::npos) << e;
  e = load_after(
      [](SafetensorsFile& f) { tensor(f, "optim.exp_avg_sq.0").data<float>()[0] = INFINITY; });
  EXPECT_NE(e.find("optimizer state 'exp_avg_sq.0' holds a non-finite value"), std::string::npos)
      << e;
}

TEST_F(CheckpointTest, StepsOutOfRangeAreRefused) {
  std::string e = load_after(
      [](SafetensorsFile& f) { tensor(f, "optim.step").data<int64_t>()[0] = int64_t{1} << 62; });
  EXPECT_NE(e.find("optim.step is 4611686018427387904, outside [0, step = 5]"), std::string::npos)
      << e;
  e = load_after([](SafetensorsFile& f) {
    for (auto& [k, v] : f.metadata)
      if (k == "step") v = std::to_string((int64_t{1} << 53) + 1);
  });
  EXPECT_NE(e.find("bad step '9007199254740993'"), std::string::npos) << e;
  // Only the digits save_checkpoint writes: strtoll took these.
  for (const std::string bad : {" 3", "+3", "3 ", "-0", "0x3"}) {
    e = load_after([&](SafetensorsFile& f) {
      for (auto& [k, v] : f.metadata)
        if (k == "step") v = bad;
    });
    EXPECT_NE(e.find("bad step '" + bad + "'"), std::string::npos) << e;
  }
}

TEST_F(CheckpointTest, AnAllZeroGeneratorStateIsRefused) {
  const std::string e = load_after([](SafetensorsFile& f) {
    std::memset(tensor(f, "rng.data").data<int64_t>(), 0, 4 * sizeof(int64_t));
  });
  EXPECT_NE(e.find("the state of generator 'data' is all zero"), std::string::npos) << e;
}

// Found by tests/fuzz/checkpoint_fuzz.cpp: the model was loaded before the
// optimizer's state was checked, so a state the optimizer refused left the model
// holding the file's weights. load_after checks the model is as it was.
TEST_F(CheckpointTest, AnOptimizerStateThatIsRefusedLeavesTheModelAsItWas) {
  const std::string e = load_after([](SafetensorsFile& f) {
    f.tensors[0].second.data<float>()[0] += 1;  // the weight load_after watches
    Tensor& steps = tensor(f, "optim.param_steps");
    steps = steps.to(DType::Float64);
  });
  EXPECT_NE(e.find("\"param_steps\" is float64"), std::string::npos) << e;
}

// Found by tests/fuzz/checkpoint_fuzz.cpp: a tensor name or a metadata value
// holding a control byte went into the message as it was, breaking its line.
TEST_F(CheckpointTest, NamesAndValuesWithControlBytesAreShownOnOneLine) {
  std::string e = load_after([](SafetensorsFile& f) {
    for (auto& [name, t] : f.tensors)
      if (name == "model.lm_head.weight") name = "model.lm\nhead";
  });
  EXPECT_NE(e.find("unexpected tensor 'model.lm\\x0ahead'"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  e = load_after([](SafetensorsFile& f) {
    for (auto& [k, v] : f.metadata)
      if (k == "step") v = "5\x1b[2J";
  });
  EXPECT_NE(e.find("bad step '5\\x1b[2J'"), std::string::npos) << e;

  SafetensorsFile file = decode_safetensors(saved_);
  NamedTensors weights;
  for (auto& [name, t] : file.tensors)
    if (name.starts_with("model.")) weights.emplace_back(name.substr(6), t);
  weights.emplace_back("extra\r", weights[0].second);
  save_safetensors(path_, weights);
  TinyRun fresh;
  try {
    load_weights(path_, fresh.model);
    ADD_FAILURE() << "loaded";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("unexpected tensor 'extra\\x0d'"), std::string::npos)
        << error.what();
  }
}

// A NaN reached the weights: the save throws before writing, and the file on
// disk stays the last good checkpoint.
TEST_F(CheckpointTest, ANonFiniteStateIsNotSaved) {
  TinyRun run;
  Tensor w = run.model.parameters()[0].data();
  w.data<float>()[0] = NAN;
  EXPECT_THROW(save_checkpoint(path_, run.model, run.optimizer, {{"data", &run.data}}, 6),
               NonFiniteStateError);
  EXPECT_EQ(read_file(path_, 1 << 20), saved_);
}

}  // namespace
}  // namespace gradflow::nn
