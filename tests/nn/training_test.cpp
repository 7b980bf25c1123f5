// End to end: a tiny encoder-decoder learns the copy task, and a run resumed
// from a checkpoint continues bitwise as if it had never stopped.
#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdio>
#include <filesystem>

#include "nn/data/toy_tasks.h"
#include "nn/io/checkpoint.h"
#include "nn/loss.h"
#include "nn/models.h"
#include "nn/optim/optim.h"
#include "tensor/ops.h"

namespace gradflow::nn {
namespace {

ModelConfig tiny(const ToyTaskConfig& task) {
  ModelConfig c;
  c.vocab = vocab_size(task);
  c.d_model = 32, c.heads = 2, c.layers = 1, c.d_ff = 64;
  c.max_len = std::max(src_len(task), tgt_len(task));
  return c;
}

double train_step(EncoderDecoder& model, Optimizer& opt, const ToyTaskConfig& task,
                  Generator& data) {
  Seq2SeqBatch b = make_batch(task, 32, data);
  Variable loss = cross_entropy(model.forward(b.src, b.tgt_in, b.src_pad), b.tgt_out, kPadToken);
  opt.zero_grad();
  loss.backward();
  clip_grad_norm(opt.params(), 1.0);
  opt.step();
  return loss.item();
}

// Token accuracy of greedy decoding on held-out batches (EOS included).
double token_accuracy(const EncoderDecoder& model, const ToyTaskConfig& task) {
  int64_t right = 0, total = 0;
  for (const Seq2SeqBatch& b : make_eval_set(task, 2, 32, 99)) {
    Tensor out = model.greedy_decode(b.src, b.src_pad, kBosToken, kEosToken, tgt_len(task));
    for (int64_t i = 0; i < b.tgt_out.shape()[0]; ++i)
      for (int64_t t = 0; t < b.tgt_out.shape()[1]; ++t) {
        double want = b.tgt_out.at({i, t});
        if (want == kPadToken) break;
        double got = t < out.shape()[1] ? out.at({i, t}) : -1;
        right += got == want;
        ++total;
      }
  }
  return static_cast<double>(right) / static_cast<double>(total);
}

TEST(Training, TinyEncoderDecoderLearnsToCopy) {
  ToyTaskConfig task{.task = "copy", .n_symbols = 6, .min_len = 1, .max_len = 5, .max_digits = 3};
  Generator init(0), data(1);
  EncoderDecoder model(tiny(task), init);
  Adam opt(model.parameters(), 3e-3);
  double first = train_step(model, opt, task, data), last = first;
  for (int step = 1; step < 250; ++step) last = train_step(model, opt, task, data);
  EXPECT_LT(last, 0.2 * first) << "loss went from " << first << " to " << last;
  EXPECT_GT(token_accuracy(model, task), 0.95);
}

// Freed tensors go back to Storage's block cache: once a step has run, the
// same step again (same batch shapes) takes every block from the cache.
TEST(Training, SteadyStateStepAsksTheSystemForNoMemory) {
  ToyTaskConfig task{.task = "copy", .n_symbols = 6, .min_len = 4, .max_len = 4, .max_digits = 3};
  Generator init(0), data(1);
  EncoderDecoder model(tiny(task), init);
  AdamW opt(model.parameters(), 1e-3);
  const Seq2SeqBatch b = make_batch(task, 16, data);
  auto step = [&] {
    Variable loss = cross_entropy(model.forward(b.src, b.tgt_in, b.src_pad), b.tgt_out, kPadToken);
    opt.zero_grad();
    loss.backward();
    clip_grad_norm(opt.params(), 1.0);
    opt.step();
  };
  step();
  step();
  const MemoryStats before = memory_stats();
  for (int i = 0; i < 3; ++i) step();
  const MemoryStats after = memory_stats();
  EXPECT_EQ(after.system_allocations, before.system_allocations);
  EXPECT_EQ(after.live_bytes, before.live_bytes);  // and nothing leaks from step to step
}

TEST(Training, ResumedRunContinuesBitwise) {
  ToyTaskConfig task{
      .task = "reverse", .n_symbols = 5, .min_len = 2, .max_len = 4, .max_digits = 3};
  const std::string path =
      (std::filesystem::temp_directory_path() / ("gradflow_resume_" + std::to_string(::getpid())))
          .string();
  // One run of 2N steps.
  Generator init_a(7), data_a(8);
  EncoderDecoder a(tiny(task), init_a);
  AdamW opt_a(a.parameters(), 1e-3);
  std::vector<double> losses_a;
  for (int s = 0; s < 8; ++s) losses_a.push_back(train_step(a, opt_a, task, data_a));
  // N steps, save, rebuild everything from a different seed, load, N more.
  Generator init_b(7), data_b(8);
  EncoderDecoder b(tiny(task), init_b);
  AdamW opt_b(b.parameters(), 1e-3);
  for (int s = 0; s < 4; ++s) train_step(b, opt_b, task, data_b);
  save_checkpoint(path, b, opt_b, {{"data", &data_b}}, 4, {{"task", "reverse"}});
  Generator init_c(123), data_c(456);
  EncoderDecoder c(tiny(task), init_c);
  AdamW opt_c(c.parameters(), 1e-3);
  CheckpointContents meta = load_checkpoint(path, c, opt_c, {{"data", &data_c}});
  EXPECT_EQ(meta.step, 4);
  EXPECT_EQ(metadata_value(meta.metadata, "task"), "reverse");
  for (int s = 4; s < 8; ++s)
    EXPECT_EQ(train_step(c, opt_c, task, data_c), losses_a[s]) << "step " << s;
  auto pa = a.state_dict(), pc = c.state_dict();
  ASSERT_EQ(pa.size(), pc.size());
  for (size_t i = 0; i < pa.size(); ++i)
    EXPECT_EQ(pa[i].second.to_vector(), pc[i].second.to_vector()) << pa[i].first;
  std::remove(path.c_str());
}

TEST(Training, LoadingAWeightsFileAsACheckpointFails) {
  Generator gen(0);
  ToyTaskConfig task{.task = "copy", .n_symbols = 4, .min_len = 1, .max_len = 3, .max_digits = 3};
  EncoderDecoder m(tiny(task), gen);
  AdamW opt(m.parameters());
  const std::string path =
      (std::filesystem::temp_directory_path() / ("gradflow_weights_" + std::to_string(::getpid())))
          .string();
  save_weights(path, m);
  try {
    load_checkpoint(path, m, opt, {});
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not a training checkpoint"), std::string::npos)
        << e.what();
  }
  load_weights(path, m);  // the weights themselves load
  std::remove(path.c_str());
}

}  // namespace
}  // namespace gradflow::nn
