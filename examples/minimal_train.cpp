// minimal_train: the whole training loop in one screen, with nothing hidden.
// A small encoder-decoder transformer learns to reverse sequences of digits:
// forward, loss, zero_grad, backward, clip, step, print. The other programs
// run the same loop through examples/toolkit/training/training.cpp, which adds
// checkpoints, logs, evaluation and parallel parts of a batch.
#include <cstdio>
#include <cstring>

#include "autograd/ops.h"
#include "nn/data/toy_tasks.h"
#include "nn/loss.h"
#include "nn/models.h"
#include "nn/optim/optim.h"
#include "tensor/ops.h"

using namespace gradflow;

// Token accuracy of greedy decoding over one batch: each output is fed back.
double greedy_accuracy(const nn::EncoderDecoder& model, const nn::Seq2SeqBatch& b) {
  NoGradGuard no_grad;
  const int64_t rows = b.tgt_out.shape()[0], cols = b.tgt_out.shape()[1];
  Tensor out = model.greedy_decode(b.src, b.src_pad, nn::kBosToken, nn::kEosToken, cols);
  int64_t right = 0, total = 0;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t t = 0; t < cols && b.tgt_out.at({i, t}) != nn::kPadToken; ++t, ++total)
      right += t < out.shape()[1] && out.at({i, t}) == b.tgt_out.at({i, t});
  return static_cast<double>(right) / static_cast<double>(total);
}

// The loop itself: the data, the model, 600 steps, then greedy decoding of held-out sequences.
int train() {
  // The data: "3 1 4 -> 4 1 3", sequences of 1 to 6 digits.
  const nn::ToyTaskConfig task{.task = "reverse", .n_symbols = 10, .min_len = 1, .max_len = 6};
  Generator gen(0);

  // The model: one encoder and one decoder layer, 2 heads, 1/sqrt(d_k) scale.
  nn::ModelConfig config;
  config.vocab = nn::vocab_size(task);
  config.max_len = nn::src_len(task);
  config.d_model = 32, config.heads = 2, config.layers = 1, config.d_ff = 64;
  nn::EncoderDecoder model(config, gen);
  nn::AdamW optimizer(model.parameters(), /*lr=*/3e-3, 0.9, 0.98, 1e-9, /*weight_decay=*/0.0);
  std::printf("%lld parameters\n", static_cast<long long>(model.num_parameters()));

  for (int step = 1; step <= 600; ++step) {
    nn::Seq2SeqBatch batch = nn::make_batch(task, /*batch=*/64, gen);
    // Forward: logits (B, T, V) for every target position, teacher-forced.
    Variable logits = model.forward(batch.src, batch.tgt_in, batch.src_pad);
    // Loss: mean cross-entropy over the target tokens that are not padding.
    Variable loss = nn::cross_entropy(logits, batch.tgt_out, nn::kPadToken);
    optimizer.zero_grad();                        // gradients accumulate: clear them
    loss.backward();                              // d loss / d every parameter
    nn::clip_grad_norm(model.parameters(), 1.0);  // one bad batch cannot throw it far
    optimizer.step();                             // AdamW update
    if (step % 100 == 0) std::printf("step %3d  loss %.4f\n", step, loss.item());
  }

  nn::Seq2SeqBatch held_out = nn::make_batch(task, 256, gen);
  std::printf("held-out greedy accuracy %.3f\n", greedy_accuracy(model, held_out));
  for (int64_t i = 0; i < 3; ++i) {
    Tensor out = model.greedy_decode(held_out.src.narrow(0, i, 1), held_out.src_pad.narrow(0, i, 1),
                                     nn::kBosToken, nn::kEosToken, nn::tgt_len(task));
    std::printf("  %s  (model: %s)\n", nn::example_to_string(task, held_out, i).c_str(),
                nn::tokens_to_string(task, nn::row_content(out, 0)).c_str());
  }
  return 0;
}

int main(int argc, char** argv) {
  // No flags, so nothing is hidden: --help says what it does, anything else is refused.
  if (argc > 1 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    std::printf(
        "usage: minimal_train [--help]\n\nTrain a small encoder-decoder to reverse digit "
        "sequences: the whole training loop in one screen. It takes no flags.\n");
    return 0;
  }
  if (argc > 1) {
    std::fprintf(stderr,
                 "minimal_train: error: unknown argument '%s' (it takes none; see --help)\n",
                 argv[1]);
    return 2;
  }
  try {
    return train();
  } catch (const std::exception& e) {  // a bad GRADFLOW_GEMM, say: one line, as every program
    std::fprintf(stderr, "minimal_train: error: %s\n", e.what());
    return 2;
  }
}
