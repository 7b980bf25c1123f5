// recall: trains a decoder-only transformer (DecoderLM) on multi-query
// associative recall (nn/data/recall_task.h): a sequence lists key-value pairs,
// then asks for the values of some of its keys. Answering takes an induction
// circuit (attach each key to its value, look the query up), which forms
// suddenly: the accuracy sits near chance for a while, then jumps. The data
// is drawn from a seeded generator, so nothing is downloaded.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "examples/toolkit/cli/args.h"
#include "examples/toolkit/training/attention_maps.h"
#include "examples/toolkit/training/program.h"
#include "nn/data/recall_task.h"
#include "nn/loss.h"
#include "nn/models.h"

namespace gradflow::training {
namespace {

constexpr int64_t kPad = 0, kFirstKey = 3;  // nn/data/recall_task.h's token ids

// "k12" or "v7" for a key or value id, "|" for SEP.
std::string token_name(const nn::RecallTaskConfig& task, int64_t id) {
  if (id < kFirstKey) return id == 1 ? "|" : "?";
  if (id < kFirstKey + task.n_keys) return "k" + std::to_string(id - kFirstKey);
  return "v" + std::to_string(id - kFirstKey - task.n_keys);
}

// The model's answer at every scored position of a batch, the argmax of its
// logits there; -1 elsewhere. Teacher-forced, as the task is scored: the
// model reads the true earlier answers, so each answer is one greedy token.
std::vector<int64_t> answers(const nn::DecoderLM& model, const nn::RecallBatch& b,
                             double* loss = nullptr) {
  Variable logits = model.forward(b.input);  // (B, T, V)
  if (loss != nullptr) *loss = nn::cross_entropy(logits, b.target, kPad).item();
  const std::vector<double> l = logits.data().to_vector();
  const std::vector<double> target = b.target.to_vector();
  const int64_t v = logits.data().shape()[2];
  std::vector<int64_t> out(target.size(), -1);
  for (size_t p = 0; p < target.size(); ++p) {
    if (target[p] == kPad) continue;
    const double* row = l.data() + p * static_cast<size_t>(v);
    int64_t best = 0;
    for (int64_t j = 1; j < v; ++j)
      if (row[j] > row[best]) best = j;
    out[p] = best;
  }
  return out;
}

struct Scores {
  double loss = 0, accuracy = 0;
};

// Mean loss over the batches and the fraction of answers the model gets right.
Scores score(const nn::DecoderLM& model, const std::vector<nn::RecallBatch>& set) {
  Scores s;
  int64_t right = 0, total = 0;
  for (const nn::RecallBatch& b : set) {
    double loss = 0;
    const std::vector<int64_t> got = answers(model, b, &loss);
    const std::vector<double> want = b.target.to_vector();
    s.loss += loss;
    for (size_t p = 0; p < want.size(); ++p) {
      if (want[p] == kPad) continue;
      right += got[p] == static_cast<int64_t>(want[p]);
      ++total;
    }
  }
  s.loss /= static_cast<double>(set.size());
  s.accuracy = static_cast<double>(right) / static_cast<double>(total);
  return s;
}

// "  k3:v7 k12:v1 ... | k12 -> v1, k3 -> v5 (want v7)  (7/8 right)" a line.
std::string answers_text(const nn::DecoderLM& model, const nn::RecallTaskConfig& task,
                         const nn::RecallBatch& b, int64_t n) {
  std::string lines;
  const std::vector<int64_t> got = answers(model, b);
  const int64_t t = b.input.shape()[1];
  for (int64_t i = 0; i < std::min(n, b.input.shape()[0]); ++i) {
    std::string line = " ";
    for (int64_t p = 0; p < 2 * task.pairs; p += 2)
      line += " " + token_name(task, static_cast<int64_t>(b.input.at({i, p}))) + ":" +
              token_name(task, static_cast<int64_t>(b.input.at({i, p + 1})));
    line += " |";
    int64_t right = 0, asked = 0;
    for (int64_t p = 0; p < t; ++p) {
      const auto want = static_cast<int64_t>(b.target.at({i, p}));
      if (want == kPad) continue;
      const int64_t answer = got[static_cast<size_t>(i * t + p)];
      line += std::string(asked++ ? ", " : " ") +
              token_name(task, static_cast<int64_t>(b.input.at({i, p}))) + " -> " +
              token_name(task, answer);
      if (answer == want)
        ++right;
      else
        line += " (want " + token_name(task, want) + ")";
    }
    lines += line + "  (" + std::to_string(right) + "/" + std::to_string(asked) + " right)\n";
  }
  return lines;
}

// Sequence 0 of b as --attention-maps draws it, a token name at each position.
AttentionExample map_example(const nn::DecoderLM& model, const nn::RecallTaskConfig& task,
                             const nn::RecallBatch& b) {
  AttentionExample e{.title = "recall"};
  for (int64_t p = 0; p < b.input.shape()[1]; ++p)
    e.decoder_tokens.push_back(token_name(task, static_cast<int64_t>(b.input.at({0, p}))));
  e.forward = [&model, input = b.input.narrow(0, 0, 1).contiguous()] { model.forward(input); };
  return e;
}

int run(int argc, char** argv) {
  CommonFlags flags{.steps = 1000,
                    .batch = 64,
                    .warmup = 50,
                    .eval_every = 100,
                    .save_every = 500,
                    .lr = 3e-3,
                    .model = {.d_model = 64, .heads = 2, .layers = 2, .d_ff = 128},
                    .out = "runs/recall"};
  TrainingProgram program(
      "recall",
      "Train a decoder-only transformer on multi-query associative recall: each sequence lists "
      "key-value pairs, then asks for the values of some of its keys (k3 v7 k12 v1 ... | k12 v1 "
      "...); only the answers are scored. It needs an induction circuit, which forms suddenly: "
      "accuracy sits near chance, then jumps. With no arguments it reaches 100% held-out "
      "accuracy for seeds 0, 1 and 2 (the jump comes near step 300 of 1000). Output goes to "
      "runs/recall unless --out is given.",
      flags);
  int64_t keys = 32, pairs = 8, queries = 0;
  program.run_flags.add("--keys", &keys, "distinct keys, and distinct values, to draw from")
      .min(1)
      .max(4096);
  program.run_flags.add("--pairs", &pairs, "key-value pairs per sequence (at most --keys)")
      .min(1)
      .max(2048);
  program.run_flags
      .add("--queries", &queries, "keys asked for per sequence (at most --pairs; 0: --pairs)")
      .min(0)
      .max(2048);
  program.add_common_flags();
  int64_t eval_examples = 512, show = 4;
  // A run flag: what val_loss and the accuracy are measured on.
  program.run_flags
      .add("--eval-examples", &eval_examples, "held-out sequences (in batches of up to 128)")
      .min(1)
      .max(1 << 20);
  program.args
      .add("--show", &show, "held-out sequences printed with the model's answers at the end")
      .min(0);
  add_attention_maps_flag(program.args, &flags.attention_maps);
  program.parse(argc, argv);
  if (pairs > keys)
    throw cli::UsageError("--pairs " + std::to_string(pairs) + " exceeds --keys " +
                          std::to_string(keys) + " (keys are distinct within a sequence)");
  if (queries > pairs)
    throw cli::UsageError("--queries " + std::to_string(queries) + " exceeds --pairs " +
                          std::to_string(pairs) + " (each query asks for a different key)");
  const nn::RecallTaskConfig task{
      .n_keys = keys, .n_values = keys, .pairs = pairs, .queries = queries > 0 ? queries : pairs};
  try {
    nn::validate_recall_task(task);
  } catch (const std::exception& e) {
    throw cli::UsageError(e.what());
  }

  const nn::ModelConfig config =
      program.prepare(nn::recall_vocab_size(task), nn::recall_seq_len(task),
                      {.kind = ModelKind::kDecoder,
                       .tgt_len = nn::recall_seq_len(task),
                       .eval_batch = std::min<int64_t>(eval_examples, 128)});
  nn::DecoderLM model(config, program.init);
  // Held out: its own generator, so it neither moves nor replays the training stream.
  Generator eval_gen = program.held_out_generator();
  std::vector<nn::RecallBatch> eval_set;
  for (int64_t left = eval_examples; left > 0; left -= 128)
    eval_set.push_back(nn::make_recall_batch(task, std::min<int64_t>(left, 128), eval_gen));
  std::cout << "recall: " << task.pairs << " pairs of " << task.n_keys << " keys and "
            << task.n_values << " values, " << task.queries << " queries per sequence (length "
            << nn::recall_seq_len(task) + 1 << "), vocab " << config.vocab << "; "
            << describe_model(model, config) << "\n";

  Hooks hooks;
  hooks.batch = [&]() -> PartLoss {
    nn::RecallBatch b = nn::make_recall_batch(task, flags.batch, program.data);
    const int64_t count = nn::counted_targets(b.target, kPad);
    return [&model, b, count](int64_t part, int64_t parts) {
      return nn::cross_entropy(model.forward(part_rows(b.input, part, parts)),
                               part_rows(b.target, part, parts), kPad, 0.0, count);
    };
  };
  hooks.evaluate = [&] {
    Scores s = score(model, eval_set);
    return Evaluation{{s.loss, s.accuracy}, ""};
  };
  hooks.attention_example = [&] { return map_example(model, task, eval_set.front()); };
  hooks.page_text = [&] {
    return "held-out answers (key:value pairs | query -> the model's answer):\n" +
           answers_text(model, task, eval_set.front(), std::max<int64_t>(show, 4));
  };
  Report report{.batch_of = "sequences",
                .held_out = std::to_string(eval_examples) + " held-out sequences",
                .metrics = {"val_loss", "accuracy"}};
  report.summary = [&](const std::vector<double>& metrics) {
    std::printf(
        "held-out (%lld sequences, %lld answers): accuracy %.2f%% (chance %.1f%%), loss %.4g\n",
        static_cast<long long>(eval_examples), static_cast<long long>(eval_examples * task.queries),
        100 * metrics[1], 100.0 / static_cast<double>(task.n_values), metrics[0]);
  };
  report.show = [&] {
    if (show > 0) {
      std::cout << "held-out answers (key:value pairs | query -> the model's answer):\n"
                << answers_text(model, task, eval_set.front(), show);
    }
    if (!flags.attention_maps.empty())
      write_attention_maps(model, map_example(model, task, eval_set.front()), flags.attention_maps,
                           std::cout);
  };
  return program.train(model, hooks, report);
}

}  // namespace
}  // namespace gradflow::training

int main(int argc, char** argv) {
  return gradflow::cli::run_cli(argc, argv, gradflow::training::run);
}
