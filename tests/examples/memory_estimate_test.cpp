// The memory estimate: its parameter count is the models' own, and what
// does not fit is refused in one line.
#include "examples/common/memory_estimate.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "examples/common/args.h"
#include "nn/models.h"

namespace gradflow::testing {
namespace {

using examples::ModelKind;
using examples::TrainingShape;

nn::ModelConfig config(int64_t vocab, int64_t d_model, int64_t heads, int64_t layers, int64_t d_ff,
                       int64_t max_len) {
  nn::ModelConfig c;
  c.vocab = vocab, c.d_model = d_model, c.heads = heads, c.layers = layers, c.d_ff = d_ff;
  c.max_len = max_len;
  return c;
}

TEST(MemoryEstimate, ParameterCountIsTheModels) {
  std::vector<nn::ModelConfig> configs = {config(13, 16, 2, 1, 32, 9),
                                          config(51, 64, 4, 2, 256, 64)};
  nn::ModelConfig c = config(20, 32, 4, 3, 48, 12);
  c.head_dim = 5;
  configs.push_back(c);
  for (const char* scale : {"learned", "qk_norm"}) {
    c.scale = nn::ScaleMode::parse(scale);
    configs.push_back(c);
  }
  c.positional = "sinusoidal";
  configs.push_back(c);
  for (const nn::ModelConfig& cfg : configs) {
    SCOPED_TRACE("d_model " + std::to_string(cfg.d_model) + " scale " + cfg.scale.name() + " " +
                 cfg.positional);
    Generator gen(0);
    EXPECT_EQ(examples::count_parameters({.kind = ModelKind::kEncoderDecoder, .config = cfg}),
              nn::EncoderDecoder(cfg, gen).num_parameters());
    EXPECT_EQ(examples::count_parameters({.kind = ModelKind::kDecoder, .config = cfg}),
              nn::DecoderLM(cfg, gen).num_parameters());
    EXPECT_EQ(examples::count_parameters({.kind = ModelKind::kEncoder, .config = cfg}),
              nn::EncoderClassifier(cfg, 0, gen).num_parameters());
    EXPECT_EQ(
        examples::count_parameters({.kind = ModelKind::kEncoder, .config = cfg, .classes = 2}),
        nn::EncoderClassifier(cfg, 2, gen).num_parameters());
  }
}

TEST(MemoryEstimate, RefusesWhatDoesNotFitInOneLine) {
  const examples::MemoryEstimate e =
      examples::estimate_training_memory({.kind = ModelKind::kDecoder,
                                          .config = config(51, 4096, 4, 8, 16384, 64),
                                          .batch = 64,
                                          .tgt_len = 64});
  EXPECT_GT(e.total_bytes, 8e9);
  EXPECT_NO_THROW(examples::check_memory(e, 0));  // unknown: not checked
  EXPECT_NO_THROW(examples::check_memory(e, uint64_t{1} << 50));
  try {
    examples::check_memory(e, uint64_t{3} << 30);
    FAIL() << "no throw";
  } catch (const cli::UsageError& error) {
    const std::string message = error.what();
    EXPECT_EQ(message.rfind("the model and batch need about ", 0), 0u) << message;
    EXPECT_NE(message.find("more than the 3.0 GiB available"), std::string::npos) << message;
    EXPECT_NE(message.find("--batch"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos);
  }
  EXPECT_GT(examples::available_memory_bytes(), uint64_t{1} << 20);  // Linux: /proc/meminfo
  EXPECT_EQ(examples::format_bytes(1536.0 * (1 << 20)), "1.5 GiB");
  EXPECT_EQ(examples::format_bytes(320.0 * (1 << 20)), "320 MiB");
}

}  // namespace
}  // namespace gradflow::testing
