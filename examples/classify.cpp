// classify: trains an encoder-only transformer (EncoderClassifier) to
// answer a yes/no question about a sequence that needs attention: does the
// first symbol appear again later? Each position must compare its symbol
// with the one at position 0, which no per-token or bag-of-tokens model can
// do. The data is drawn from a seeded generator, so nothing is downloaded.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "examples/toolkit/cli/args.h"
#include "examples/toolkit/training/attention_maps.h"
#include "examples/toolkit/training/program.h"
#include "nn/loss.h"
#include "nn/models.h"
#include "tensor/creation.h"
#include "tensor/ops.h"

namespace gradflow::training {
namespace {

// Token 0 is padding; symbol s is token 1 + s.
struct Task {
  int64_t symbols = 8, min_len = 4, max_len = 12;
};

// Shapes: B examples, T = max_len positions.
struct Batch {
  Tensor ids;     // (B, T) int64, padded with 0
  Tensor pad;     // (B, T) float32, 1 at padding
  Tensor labels;  // (B) int64: 1 if the first symbol recurs, else 0
};

// Balanced: half the examples repeat the first symbol at one random later
// position; otherwise no later symbol equals it.
Batch make_batch(const Task& task, int64_t b, Generator& gen) {
  const int64_t t = task.max_len;
  std::vector<int64_t> ids(b * t, 0), labels(b);
  std::vector<double> pad(b * t, 1.0);
  for (int64_t i = 0; i < b; ++i) {
    const int64_t len = task.min_len + gen.below(task.max_len - task.min_len + 1);
    const int64_t first = gen.below(task.symbols);
    labels[i] = gen.below(2);
    for (int64_t j = 0; j < len; ++j) {
      int64_t s = first;
      if (j > 0) {  // any symbol but the first
        s = gen.below(task.symbols - 1);
        s += s >= first;
      }
      ids[i * t + j] = 1 + s;
      pad[i * t + j] = 0;
    }
    if (labels[i] == 1) ids[i * t + 1 + gen.below(len - 1)] = 1 + first;
  }
  return {from_indices(ids, {b, t}), from_vector(pad, {b, t}), from_indices(labels, {b})};
}

std::string to_string(const Batch& batch, int64_t row) {
  std::string out;
  for (int64_t j = 0; j < batch.ids.shape()[1] && batch.pad.at({row, j}) == 0; ++j)
    out += (j ? " " : "") + std::to_string(static_cast<int64_t>(batch.ids.at({row, j})) - 1);
  return out;
}

// Example 0 of batch as --attention-maps draws it: its symbols, padding left out.
AttentionExample map_example(const nn::EncoderClassifier& model, const Batch& batch) {
  AttentionExample e{.title = "classify (does the first symbol recur?)"};
  for (int64_t j = 0; j < batch.ids.shape()[1] && batch.pad.at({0, j}) == 0; ++j)
    e.encoder_tokens.push_back(std::to_string(static_cast<int64_t>(batch.ids.at({0, j})) - 1));
  auto first = [](const Tensor& t) { return t.narrow(0, 0, 1).contiguous(); };
  e.forward = [&model, ids = first(batch.ids), pad = first(batch.pad)] { model.forward(ids, pad); };
  return e;
}

// "  3 1 4 3 -> yes (p 0.912)" a line for each of the first n examples, a wrong answer marked.
std::string answers_text(const nn::EncoderClassifier& model, const Batch& b, int64_t n) {
  NoGradGuard no_grad;
  const Tensor p = softmax(model.forward(b.ids, b.pad).data(), 1);
  std::string lines;
  for (int64_t i = 0; i < std::min(n, b.labels.shape()[0]); ++i) {
    const bool yes = p.at({i, 1}) > 0.5, want = b.labels.at({i}) == 1;
    char probability[32];
    std::snprintf(probability, sizeof probability, "%.3f", p.at({i, 1}));
    lines += "  " + to_string(b, i) + " -> " + (yes ? "yes" : "no") + " (p " + probability + ")" +
             (yes == want ? "" : "   WRONG") + "\n";
  }
  return lines;
}

struct Scores {
  double loss = 0, accuracy = 0;
};

Scores score(const nn::EncoderClassifier& model, const std::vector<Batch>& set) {
  Scores s;
  int64_t right = 0, total = 0;
  for (const Batch& b : set) {
    Variable logits = model.forward(b.ids, b.pad);
    s.loss += nn::cross_entropy(logits, b.labels).item();
    const Tensor& l = logits.data();
    for (int64_t i = 0; i < b.labels.shape()[0]; ++i, ++total)
      right += (l.at({i, 1}) > l.at({i, 0})) == (b.labels.at({i}) == 1);
  }
  s.loss /= static_cast<double>(set.size());
  s.accuracy = static_cast<double>(right) / static_cast<double>(total);
  return s;
}

int run(int argc, char** argv) {
  CommonFlags flags{.steps = 1000,
                    .batch = 64,
                    .warmup = 50,
                    .eval_every = 250,
                    .save_every = 500,
                    .lr = 2e-3,
                    .model = {.d_model = 32, .heads = 2, .layers = 2, .d_ff = 64},
                    .out = "runs/classify"};
  TrainingProgram program("classify",
                          "Train an encoder-only transformer to classify sequences: does the "
                          "first symbol appear again later in the sequence? (Balanced yes/no; it "
                          "needs attention from every position to the first.) Reports held-out "
                          "accuracy.",
                          flags);
  Task task;
  program.run_flags.add("--symbols", &task.symbols, "alphabet size").min(2).max(10000);
  program.run_flags.add("--min-len", &task.min_len, "shortest sequence").min(2).max(4096);
  program.run_flags.add("--max-len", &task.max_len, "longest sequence").min(2).max(4096);
  program.add_common_flags();
  int64_t eval_examples = 1024, show = 6;
  // A run flag: what val_loss and the accuracy are measured on.
  program.run_flags.add("--eval-examples", &eval_examples, "held-out examples").min(1).max(1 << 20);
  program.args.add("--show", &show, "classified examples printed at the end").min(0);
  add_attention_maps_flag(program.args, &flags.attention_maps);
  program.parse(argc, argv);
  if (task.min_len > task.max_len)
    throw cli::UsageError("--min-len " + std::to_string(task.min_len) + " exceeds --max-len " +
                          std::to_string(task.max_len));

  const nn::ModelConfig config =
      program.prepare(task.symbols + 1, task.max_len,
                      {.kind = ModelKind::kEncoder,
                       .src_len = task.max_len,
                       .classes = 2,
                       .eval_batch = std::min<int64_t>(eval_examples, 256)});
  nn::EncoderClassifier model(/*classes=*/2, config, program.init);
  // Held out: its own generator, so it neither moves nor replays the training stream.
  Generator eval_gen = program.held_out_generator();
  std::vector<Batch> eval_set;
  for (int64_t left = eval_examples; left > 0; left -= 256)
    eval_set.push_back(make_batch(task, std::min<int64_t>(left, 256), eval_gen));
  std::cout << "classify: does the first symbol recur? " << task.symbols << " symbols, lengths "
            << task.min_len << ".." << task.max_len << "; " << describe_model(model, config)
            << "\n";

  Hooks hooks;
  hooks.batch = [&]() -> PartLoss {
    Batch b = make_batch(task, flags.batch, program.data);
    const int64_t count = b.labels.numel();
    return [&model, b, count](int64_t part, int64_t parts) {
      auto rows = [&](const Tensor& t) { return part_rows(t, part, parts); };
      return nn::cross_entropy(model.forward(rows(b.ids), rows(b.pad)), rows(b.labels), -100, 0.0,
                               count);
    };
  };
  hooks.evaluate = [&] {
    Scores s = score(model, eval_set);
    return Evaluation{{s.loss, s.accuracy}, ""};
  };
  Report report{.held_out = std::to_string(eval_examples) + " held-out examples",
                .metrics = {"val_loss", "accuracy"},
                .metadata = {{"classes", "2"}}};
  report.summary = [&](const std::vector<double>& metrics) {
    std::printf("held-out (%lld examples): accuracy %.2f%%, loss %.4g\n",
                static_cast<long long>(eval_examples), 100 * metrics[1], metrics[0]);
  };
  hooks.attention_example = [&] { return map_example(model, eval_set.front()); };
  hooks.page_text = [&] {
    return "held-out examples (does the first symbol recur?):\n" +
           answers_text(model, eval_set.front(), std::max<int64_t>(show, 6));
  };
  report.show = [&] {
    const Batch& b = eval_set.front();
    std::cout << answers_text(model, b, show);
    if (!flags.attention_maps.empty())
      write_attention_maps(model, map_example(model, b), flags.attention_maps, std::cout);
  };
  return program.train(model, hooks, report);
}

}  // namespace
}  // namespace gradflow::training

int main(int argc, char** argv) {
  return gradflow::cli::run_cli(argc, argv, gradflow::training::run);
}
