// seq2seq: trains an encoder-decoder transformer on a toy task (copy,
// reverse, sort or addition) and reports held-out accuracy of greedy
// decoding. With no arguments it learns to reverse sequences of up to 8
// symbols in well under a minute on two cores.
#include <cstdio>
#include <iostream>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "examples/toolkit/cli/args.h"
#include "examples/toolkit/training/attention_maps.h"
#include "examples/toolkit/training/program.h"
#include "nn/data/toy_tasks.h"
#include "nn/loss.h"
#include "nn/models.h"

namespace gradflow::training {
namespace {

struct Scores {
  double loss = 0, token_acc = 0, seq_acc = 0;
};

// Teacher-forced loss, and greedy decoding scored against tgt_out up to and
// including EOS: token_acc over those tokens, seq_acc over whole sequences.
Scores score(const nn::EncoderDecoder& model, const nn::ToyTaskConfig& task,
             const std::vector<nn::Seq2SeqBatch>& set) {
  Scores s;
  int64_t tokens = 0, right = 0, seqs = 0, seqs_right = 0;
  for (const nn::Seq2SeqBatch& b : set) {
    s.loss += nn::cross_entropy(model.forward(b.src, b.tgt_in, b.src_pad), b.tgt_out, nn::kPadToken)
                  .item();
    Tensor out =
        model.greedy_decode(b.src, b.src_pad, nn::kBosToken, nn::kEosToken, nn::tgt_len(task));
    for (int64_t i = 0; i < b.tgt_out.shape()[0]; ++i) {
      bool all = true;
      for (int64_t t = 0; t < b.tgt_out.shape()[1]; ++t) {
        const double want = b.tgt_out.at({i, t});
        if (want == nn::kPadToken) break;
        const bool ok = t < out.shape()[1] && out.at({i, t}) == want;
        right += ok;
        all = all && ok;
        ++tokens;
      }
      seqs_right += all;
      ++seqs;
    }
  }
  s.loss /= static_cast<double>(set.size());
  s.token_acc = static_cast<double>(right) / static_cast<double>(tokens);
  s.seq_acc = static_cast<double>(seqs_right) / static_cast<double>(seqs);
  return s;
}

// "  3 1 4 -> 4 1 3" a line, marking a wrong prediction with the wanted answer.
std::string decodes(const nn::EncoderDecoder& model, const nn::ToyTaskConfig& task,
                    const nn::Seq2SeqBatch& b, int64_t n) {
  NoGradGuard no_grad;
  Tensor out =
      model.greedy_decode(b.src, b.src_pad, nn::kBosToken, nn::kEosToken, nn::tgt_len(task));
  std::string lines;
  for (int64_t i = 0; i < std::min(n, b.src.shape()[0]); ++i) {
    std::vector<int64_t> src = nn::row_content(b.src, i), want = nn::row_content(b.tgt_out, i),
                         got = nn::row_content(out, i);
    lines += "  " + nn::format_example(task, src, got);
    if (got != want) lines += "   WRONG, want " + nn::tokens_to_string(task, want);
    lines += '\n';
  }
  return lines;
}

// Example row 0 of b as --attention-maps draws it: its source up to and including EOS, and
// the decoder's input (BOS, then the target), teacher-forced as in training.
AttentionExample map_example(const nn::EncoderDecoder& model, const nn::ToyTaskConfig& task,
                             const nn::Seq2SeqBatch& b) {
  auto names = [&](const Tensor& ids) {
    std::vector<std::string> out;
    for (int64_t j = 0; j < ids.shape()[1] && ids.at({0, j}) != nn::kPadToken; ++j) {
      const auto id = static_cast<int64_t>(ids.at({0, j}));
      out.push_back(nn::tokens_to_string(task, std::span(&id, 1)));
    }
    return out;
  };
  auto first = [](const Tensor& t) { return t.narrow(0, 0, 1).contiguous(); };
  return {.title = "seq2seq " + task.task,
          .encoder_tokens = names(b.src),
          .decoder_tokens = names(b.tgt_in),
          .forward = [&model, src = first(b.src), tgt = first(b.tgt_in), pad = first(b.src_pad)] {
            model.forward(src, tgt, pad);
          }};
}

// Each task's --steps when none is given: enough to reach 99% held-out token
// accuracy with room to spare at seeds 0 to 5 (docs/programs.md's seq2seq
// section has the measurements). The other defaults serve every task.
struct TaskSteps {
  const char* task;
  int64_t steps;
};
constexpr TaskSteps kTaskSteps[] = {
    {"copy", 200}, {"reverse", 400}, {"sort", 600}, {"addition", 3000}};

int64_t default_steps(const std::string& task) {
  for (const TaskSteps& t : kTaskSteps)
    if (task == t.task) return t.steps;
  throw std::logic_error("seq2seq: no default steps for task " + task);
}

// "200 for copy, 400 for reverse, ...", what --help shows as --steps' default.
std::string default_steps_text() {
  std::string text;
  for (const TaskSteps& t : kTaskSteps)
    text += (text.empty() ? "" : ", ") + std::to_string(t.steps) + " for " + t.task;
  return text;
}

int run(int argc, char** argv) {
  CommonFlags flags{.steps = default_steps("reverse"),
                    .batch = 64,
                    .warmup = 40,
                    .eval_every = 100,
                    .save_every = 200,
                    .lr = 3e-3,
                    .out = "runs/seq2seq-reverse"};
  TrainingProgram program("seq2seq",
                          "Train an encoder-decoder transformer on a toy task and report held-out "
                          "token and sequence accuracy of greedy decoding. Output goes to "
                          "runs/seq2seq-<task> unless --out is given.",
                          flags);
  nn::ToyTaskConfig task{.task = "reverse"};
  std::vector<std::string> tasks;
  for (const TaskSteps& t : kTaskSteps) tasks.emplace_back(t.task);
  program.run_flags.add_choice("--task", &task.task, tasks, "what the decoder must output");
  program.run_flags.add("--symbols", &task.n_symbols, "alphabet size (copy, reverse, sort)").min(1);
  program.run_flags.add("--min-len", &task.min_len, "shortest source (copy, reverse, sort)").min(1);
  program.run_flags.add("--max-len", &task.max_len, "longest source (copy, reverse, sort)")
      .min(1)
      .max(nn::kMaxToyLength);
  program.run_flags.add("--digits", &task.max_digits, "most digits per operand (addition)")
      .min(1)
      .max(nn::kMaxToyLength);
  program.add_common_flags();
  int64_t eval_examples = 512, show = 6;
  // A run flag: what val_loss and the accuracy are measured on.
  program.run_flags
      .add("--eval-examples", &eval_examples, "held-out examples (in batches of up to 128)")
      .min(1)
      .max(1 << 20);
  program.args.add("--show", &show, "greedy decodes printed at the end").min(0);
  add_attention_maps_flag(program.args, &flags.attention_maps);
  program.args.set_default_text("--steps", default_steps_text());
  program.parse(argc, argv, [&] {
    // A flag the task has no use for is a mistake, not something to ignore.
    // (A resume restores the task's flags and refuses any that differ.)
    if (!flags.resume.empty()) return;
    const bool addition = task.task == "addition";
    for (const char* name : {"--symbols", "--min-len", "--max-len", "--digits"})
      if (program.args.seen(name) && (std::string(name) == "--digits") != addition)
        throw cli::UsageError(std::string(name) + " applies to " +
                              (addition ? "copy, reverse and sort" : "addition") +
                              ", not to --task " + task.task);
  });
  // A resumed run has its --steps from the checkpoint (seen, as if given).
  if (!program.args.seen("--steps")) flags.steps = default_steps(task.task);
  try {
    nn::validate_toy_task(task);
  } catch (const std::exception& e) {
    throw cli::UsageError(e.what());
  }
  if (!program.args.seen("--out") && flags.resume.empty()) flags.out = "runs/seq2seq-" + task.task;

  const nn::ModelConfig config =
      program.prepare(nn::vocab_size(task), std::max(nn::src_len(task), nn::tgt_len(task)),
                      {.kind = ModelKind::kEncoderDecoder,
                       .src_len = nn::src_len(task),
                       .tgt_len = nn::tgt_len(task),
                       .eval_batch = std::min<int64_t>(eval_examples, 128)});
  nn::EncoderDecoder model(config, program.init);
  const int64_t eval_batch = std::min<int64_t>(eval_examples, 128);
  const std::vector<nn::Seq2SeqBatch> eval_set = nn::make_eval_set(
      task, (eval_examples + eval_batch - 1) / eval_batch, eval_batch, flags.seed);
  const int64_t n_eval = eval_batch * static_cast<int64_t>(eval_set.size());
  std::cout << "seq2seq: task " << task.task << ", vocab " << config.vocab << ", "
            << describe_model(model, config) << "\n";

  Hooks hooks;
  hooks.batch = [&]() -> PartLoss {
    nn::Seq2SeqBatch b = nn::make_batch(task, flags.batch, program.data);
    const int64_t count = nn::counted_targets(b.tgt_out, nn::kPadToken);
    return [&model, b, count](int64_t part, int64_t parts) {
      auto rows = [&](const Tensor& t) { return part_rows(t, part, parts); };
      return nn::cross_entropy(model.forward(rows(b.src), rows(b.tgt_in), rows(b.src_pad)),
                               rows(b.tgt_out), nn::kPadToken, 0.0, count);
    };
  };
  hooks.evaluate = [&] {
    Scores s = score(model, task, eval_set);
    return Evaluation{{s.loss, s.token_acc, s.seq_acc}, ""};
  };
  hooks.attention_example = [&] { return map_example(model, task, eval_set.front()); };
  hooks.page_text = [&] {
    return "greedy decodes of held-out examples:\n" +
           decodes(model, task, eval_set.front(), std::max<int64_t>(show, 6));
  };
  Report report{.held_out = std::to_string(n_eval) + " held-out examples",
                .metrics = {"val_loss", "token_acc", "seq_acc"}};
  report.summary = [&](const std::vector<double>& metrics) {
    std::printf(
        "held-out (%lld examples): token accuracy %.2f%%, sequence accuracy %.2f%%, "
        "loss %.4g\n",
        static_cast<long long>(n_eval), 100 * metrics[1], 100 * metrics[2], metrics[0]);
  };
  report.show = [&] {
    if (show > 0) {
      std::cout << "greedy decodes:\n" << decodes(model, task, eval_set.front(), show);
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
