// A model saved with its config comes back from the file alone, bit for bit,
// as the kind it was; a file whose config and tensors disagree is refused
// before the model is built, naming the tensor, and a config too big for
// memory before anything is allocated.
#include "nn/io/model_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <string>

#include "autograd/ops.h"
#include "nn/io/checkpoint.h"
#include "nn/optim/optim.h"
#include "tests/tensor/testing.h"

namespace gradflow::nn {
namespace {

namespace fs = std::filesystem;

ModelConfig small_config() {
  ModelConfig c;
  c.vocab = 11, c.d_model = 8, c.heads = 2, c.layers = 2, c.d_ff = 16, c.max_len = 6;
  return c;
}

// Equal to the bit: same names, shapes, dtypes and bytes.
void expect_same_state(const Module& a, const Module& b) {
  const NamedTensors x = a.state_dict(), y = b.state_dict();
  ASSERT_EQ(x.size(), y.size());
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(x[i].first, y[i].first);
    EXPECT_TRUE(testing::same_bytes(x[i].second, y[i].second)) << x[i].first;
  }
}

class ModelFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gradflow_model_file_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // The error load_model gives for the file at `file` after `edit` changed
  // its metadata ("" if it loads).
  std::string load_error_after(const std::string& file,
                               const std::function<void(Metadata&)>& edit) {
    SafetensorsFile f = load_safetensors(file);
    edit(f.metadata);
    save_safetensors(file, f.tensors, f.metadata);
    try {
      load_model(file);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }

  static void set(Metadata& m, const std::string& key, const std::string& value) {
    for (auto& kv : m)
      if (kv.first == key) kv.second = value;
  }

  fs::path dir_;
};

TEST_F(ModelFileTest, EachKindComesBackFromTheFileAloneBitForBit) {
  Generator gen(7);
  ModelConfig c = small_config();
  c.norm_type = "rmsnorm", c.ffn = "swiglu", c.positional = "rope", c.dropout = 0.125;
  DecoderLM decoder(c, gen);
  EncoderDecoder seq2seq(small_config(), gen);
  EncoderClassifier classifier(3, small_config(), gen);
  save_model(path("d.safetensors"), decoder, {{"note", "mine"}});
  save_model(path("s.safetensors"), seq2seq);
  save_model(path("c.safetensors"), classifier,
             {.kind = ModelKind::kClassifier, .config = small_config(), .classes = 3});

  const LoadedModel d = load_model(path("d.safetensors"));
  EXPECT_EQ(d.spec.kind, ModelKind::kDecoder);
  EXPECT_EQ(config_metadata(d.spec.config), config_metadata(c));
  EXPECT_EQ(metadata_value(d.metadata, "note"), "mine");
  expect_same_state(d.as<DecoderLM>(), decoder);
  const Tensor ids = from_vector({1, 2, 3, 4}, {1, 4}, DType::Int64);
  decoder.eval(), d.module->eval();
  EXPECT_EQ(d.as<DecoderLM>().forward(ids).data().to_vector(),
            decoder.forward(ids).data().to_vector());
  EXPECT_THROW(d.as<EncoderDecoder>(), Error);

  const LoadedModel s = load_model(path("s.safetensors"));
  EXPECT_EQ(s.spec.kind, ModelKind::kEncoderDecoder);
  expect_same_state(s.as<EncoderDecoder>(), seq2seq);

  const LoadedModel k = load_model(path("c.safetensors"));
  EXPECT_EQ(k.spec.kind, ModelKind::kClassifier);
  EXPECT_EQ(k.spec.classes, 3);
  expect_same_state(k.as<EncoderClassifier>(), classifier);
}

TEST_F(ModelFileTest, ATrainingCheckpointBuildsItsModelToo) {
  Generator gen(3);
  DecoderLM model(small_config(), gen);
  AdamW optimizer(model.parameters(), 1e-3);
  save_checkpoint(path("ckpt.safetensors"), model, optimizer, {{"gen", &gen}}, 4,
                  model_metadata({.config = model.config()}));
  const LoadedModel loaded = load_model(path("ckpt.safetensors"));
  expect_same_state(loaded.as<DecoderLM>(), model);
}

TEST_F(ModelFileTest, AConfigThatDisagreesWithTheTensorsIsRefusedNamingOne) {
  Generator gen(1);
  const std::string file = path("m.safetensors");
  auto fresh = [&] { save_model(file, DecoderLM(small_config(), gen)); };
  fresh();
  EXPECT_EQ(load_error_after(file, [](Metadata& m) { set(m, "config.d_ff", "32"); }),
            "load_model " + file +
                ": tensor 'decoder.layers.0.ff.fc1.bias' is (16) in the file, the config "
                "implies (32)");
  fresh();
  EXPECT_EQ(load_error_after(file, [](Metadata& m) { set(m, "config.layers", "3"); }),
            "load_model " + file +
                ": no tensor 'decoder.layers.2.ff.fc1.bias' in the file, which the config "
                "implies (config.layers 3)");
  fresh();
  EXPECT_EQ(load_error_after(file, [](Metadata& m) { set(m, "config.layers", "1"); }),
            "load_model " + file +
                ": tensor 'decoder.layers.1.ff.fc1.bias' is not in the model the config "
                "implies (config.layers 1)");
  fresh();
  EXPECT_EQ(load_error_after(file, [](Metadata& m) { set(m, "model_kind", "classifier"); }),
            "load_model " + file +
                ": tensor 'decoder.layers.0.ff.fc1.bias' is not in the model the config "
                "implies (config.layers 2)");
  fresh();
  EXPECT_EQ(
      load_error_after(file, [](Metadata& m) { set(m, "model_kind", "gpt"); }),
      "load_model " + file + ": unknown model_kind 'gpt' (decoder, encoder_decoder or classifier)");
  fresh();
  EXPECT_EQ(load_error_after(file,
                             [](Metadata& m) {
                               std::erase_if(m,
                                             [](auto& kv) { return kv.first == "config.heads"; });
                             }),
            "load_model " + file + ": bad model config in the file: no config.heads");
}

// What the training programs refuse, load_model refuses too (it loaded both): a weight that is not
// finite, a config.* that differs from the file's flag.* (heads 2 for 4 loaded as d_k 4 for 2,
// the shapes alike), and a path that is not a file (a FIFO with no writer hung its open).
TEST_F(ModelFileTest, NonFiniteWeightsEditedFlagsAndFifosAreRefused) {
  Generator gen(1);
  const std::string file = path("m.safetensors");
  DecoderLM model(small_config(), gen);
  // seq2seq's --max-len is its task's, not config.max_len (which its data sets): not compared.
  save_model(file, model, {{"flag.--heads", "2"}, {"flag.--max-len", "4"}});
  EXPECT_EQ(load_error_after(file, [](Metadata&) {}), "");
  EXPECT_EQ(load_error_after(file, [](Metadata& m) { set(m, "config.heads", "4"); }),
            "load_model " + file +
                ": bad model config in the file: config.heads 4 differs from flag.--heads 2 (an "
                "edited file?); refusing to guess which model it is");
  for (double bad : {std::nan(""), std::numeric_limits<double>::infinity()}) {
    DecoderLM broken(small_config(), gen);
    Tensor(broken.lm_head->bias.data()).set({3}, bad);
    save_model(file, broken);
    EXPECT_EQ(load_error_after(file, [](Metadata&) {}),
              "load_model " + file + ": tensor 'lm_head.bias' holds a NaN or an infinity");
  }
  ASSERT_EQ(::mkfifo(path("fifo").c_str(), 0600), 0);
  try {
    load_model(path("fifo"));
    ADD_FAILURE() << "a FIFO was loaded";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "load_model " + path("fifo") + ": not a regular file (a folder, a FIFO or a device)");
  }
}

// A model with dropout resumed through the library repeats bitwise when the generator its masks
// draw from is saved in the checkpoint and given to load_model (its Init{} drew from
// default_generator(), which nothing saves): 2 + 2 steps are 4 steps.
TEST_F(ModelFileTest, AModelWithDropoutResumesBitwiseWithItsGenerator) {
  ModelConfig c = small_config();
  c.dropout = 0.25;
  const Tensor ids = from_vector({1, 2, 3, 4, 5, 6, 2, 3, 4, 5, 6, 7}, {2, 6}, DType::Int64);
  auto train = [&](DecoderLM& model, AdamW& optimizer, int steps) {
    for (int i = 0; i < steps; ++i) {
      optimizer.zero_grad();
      Variable logits = model.forward(ids);
      sum(logits * logits).backward();
      optimizer.step();
    }
  };
  Generator straight_gen(5);
  DecoderLM straight(c, straight_gen);
  AdamW straight_opt(straight.parameters(), 1e-2);
  train(straight, straight_opt, 4);

  Generator first_gen(5);
  DecoderLM first(c, first_gen);
  AdamW first_opt(first.parameters(), 1e-2);
  train(first, first_opt, 2);
  save_checkpoint(path("ckpt.safetensors"), first, first_opt, {{"dropout", &first_gen}}, 2,
                  model_metadata({.config = c}));
  default_generator().manual_seed(99);  // what another program may have drawn meanwhile
  Generator dropout(0);
  const LoadedModel loaded = load_model(path("ckpt.safetensors"), Init(dropout));
  DecoderLM& resumed = loaded.as<DecoderLM>();
  AdamW resumed_opt(resumed.parameters(), 1e-2);
  load_checkpoint(path("ckpt.safetensors"), resumed, resumed_opt, {{"dropout", &dropout}});
  train(resumed, resumed_opt, 2);
  expect_same_state(resumed, straight);
}

// A million layers of d_model 8 would fit in memory but take minutes to
// build: the missing tensors refuse it first. A billion layers of d_model
// 4096 would not fit: refused before anything is allocated.
TEST_F(ModelFileTest, AHugeConfigIsRefusedBeforeBuilding) {
  Generator gen(2);
  const std::string file = path("m.safetensors");
  save_model(file, DecoderLM(small_config(), gen));
  EXPECT_EQ(load_error_after(file, [](Metadata& m) { set(m, "config.layers", "1000000"); }),
            "load_model " + file +
                ": no tensor 'decoder.layers.2.ff.fc1.bias' in the file, which the config "
                "implies (config.layers 1000000)");
  const std::string huge = load_error_after(file, [](Metadata& m) {
    set(m, "config.layers", "1000000000");
    set(m, "config.d_model", "4096");
  });
  EXPECT_NE(huge.find("GiB of weights, more than this machine's"), std::string::npos) << huge;
  EXPECT_EQ(huge.find('\n'), std::string::npos);
}

TEST(ModelFileCount, ParametersCountedWithoutBuildingEqualTheBuiltModels) {
  Generator gen(0);
  ModelConfig c = small_config();
  for (const char* ffn : {"mlp", "swiglu"})
    for (const char* positional : {"learned", "rope"})
      for (const char* scale : {"inv_sqrt_dk", "learned", "qk_norm"}) {
        c.ffn = ffn, c.positional = positional, c.scale = ScaleMode::parse(scale);
        SCOPED_TRACE(std::string(ffn) + " " + positional + " " + scale);
        EXPECT_EQ(count_parameters({.kind = ModelKind::kDecoder, .config = c}),
                  double(DecoderLM(c, gen).num_parameters()));
        EXPECT_EQ(count_parameters({.kind = ModelKind::kEncoderDecoder, .config = c}),
                  double(EncoderDecoder(c, gen).num_parameters()));
        EXPECT_EQ(count_parameters({.kind = ModelKind::kClassifier, .config = c, .classes = 3}),
                  double(EncoderClassifier(3, c, gen).num_parameters()));
        EXPECT_EQ(count_parameters({.kind = ModelKind::kClassifier, .config = c}),
                  double(EncoderClassifier(0, c, gen).num_parameters()));
      }
}

}  // namespace
}  // namespace gradflow::nn
