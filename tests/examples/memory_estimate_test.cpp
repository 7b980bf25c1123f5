// The memory estimate the programs check before allocating: its parameter
// count is the models' own, it stays within [1x, 2x] of the peak resident
// memory the programs reach, and sizes that cannot fit are refused in one
// line before any memory is taken.
#include "examples/common/memory_estimate.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "examples/common/args.h"
#include "nn/models.h"
#include "tests/examples/run_program.h"

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
  for (const char* scale : {"learned", "qk_norm", "qk_l2norm", "learned_log"}) {
    c.scale = nn::ScaleMode::parse(scale);
    configs.push_back(c);
  }
  c.positional = "sinusoidal";
  configs.push_back(c);
  c.positional = "rope", c.head_dim = 6;  // no position table; rope needs an even d_k
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
              nn::EncoderClassifier(0, cfg, gen).num_parameters());
    EXPECT_EQ(
        examples::count_parameters({.kind = ModelKind::kEncoder, .config = cfg, .classes = 2}),
        nn::EncoderClassifier(2, cfg, gen).num_parameters());
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

using MemoryEstimateProgramTest = ProgramTest;

// The estimate against the peak resident memory of 3-step runs (a save
// included) whose tensors dominate the program's own memory.
TEST_F(MemoryEstimateProgramTest, EstimateIsWithinTwiceThePeakResidentMemory) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's shadow memory and quarantine inflate the resident memory";
#endif
  struct Case {
    std::string program;
    std::vector<std::string> args;
    TrainingShape shape;
  };
  const std::vector<Case> cases = {
      {kCharlm,
       {"--d-model", "256", "--layers", "4", "--d-ff", "1024", "--context", "128", "--batch", "16",
        "--sample-tokens", "0"},
       {.kind = ModelKind::kDecoder,
        .config = config(51, 256, 4, 4, 1024, 128),
        .batch = 16,
        .tgt_len = 128}},
      {kSeq2seq,
       {"--d-model", "256", "--layers", "4", "--d-ff", "1024", "--batch", "128", "--show", "0"},
       {.kind = ModelKind::kEncoderDecoder,
        .config = config(13, 256, 4, 4, 1024, 9),
        .batch = 128,
        .src_len = 9,
        .tgt_len = 9}},
      {kClassify,
       {"--d-model", "128", "--heads", "4", "--d-ff", "512", "--batch", "256", "--max-len", "64",
        "--show", "0"},
       {.kind = ModelKind::kEncoder,
        .config = config(9, 128, 4, 2, 512, 64),
        .batch = 256,
        .src_len = 64,
        .classes = 2}},
      {kRecall,
       {"--d-model", "256", "--batch", "256", "--show", "0"},
       {.kind = ModelKind::kDecoder,
        .config = config(67, 256, 2, 2, 128, 33),
        .batch = 256,
        .tgt_len = 33}}};
  for (const Case& c : cases) {
    std::vector<std::string> args = c.args;
    args.insert(args.end(), {"--steps", "3", "--eval-every", "0", "--out", path("run")});
    Result r = run(c.program, args, {"--overwrite"});
    ASSERT_EQ(r.code, 0) << c.program << "\n" << r.err;
    const double estimate = examples::estimate_training_memory(c.shape).total_bytes;
    const double measured = 1024.0 * static_cast<double>(r.max_rss_kb);
    EXPECT_GE(estimate, measured) << c.program;
    EXPECT_LE(estimate, 2 * measured) << c.program;
    std::printf("%s: estimate %.0f MB, peak resident %.0f MB\n", c.program.c_str(), estimate / 1e6,
                measured / 1e6);
  }
}

// Sizes no machine here can hold: one line, exit code 2, before the memory
// is taken (the process stays small).
TEST_F(MemoryEstimateProgramTest, SizesThatCannotFitAreRefusedBeforeAllocating) {
  for (const auto& program : {kSeq2seq, kCharlm, kClassify, kRecall, kTrainBench}) {
    for (const std::vector<std::string>& sizes : {std::vector<std::string>{"--d-model", "65536"},
                                                  {"--d-ff", "100000000"},
                                                  {"--batch", "10000000"}}) {
      std::vector<std::string> args = sizes;
      if (program != kTrainBench) args.insert(args.end(), {"--out", path("run")});
      const std::string cmd = program + " " + sizes[0] + " " + sizes[1];
      Result r = run(program, args);
      EXPECT_EQ(r.code, 2) << cmd << "\n" << r.err;
      EXPECT_EQ(lines(r.err), 1u) << cmd << "\n" << r.err;
      EXPECT_NE(r.err.find("need about"), std::string::npos) << cmd << "\n" << r.err;
      EXPECT_NE(r.err.find("available"), std::string::npos) << cmd << "\n" << r.err;
      EXPECT_LT(r.max_rss_kb, 512 * 1024) << cmd;
    }
  }
}

}  // namespace
}  // namespace gradflow::testing
