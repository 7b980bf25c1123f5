// What every training program does around its task, in one place: the
// command line, the setup of a fresh or resumed run, the generators, AdamW
// and the schedule, the training loop (training.h) and the end of the run.
//
// A program holds its task only. examples/classify.cpp reads, in order:
//
//   CommonFlags flags{.steps = 1000, ...};     its defaults, which --help shows
//   TrainingProgram program("classify", "what it does, for --help", flags);
//   program.run_flags.add("--symbols", ...);   its task's flags: the checkpoint keeps them
//   program.add_common_flags();                --steps, --lr, --d-model, --out, --resume, ...
//   program.args.add("--show", ...);           flags of one session: how much to print
//   program.parse(argc, argv);                 with --resume, the run's flags come back
//   ... its data, checked ...
//   nn::ModelConfig config = program.prepare(vocab, max_len, {.kind = ..., ...});
//   nn::EncoderClassifier model(2, config, program.init);      its model
//   std::cout << "classify: ..." << describe_model(model, config) << "\n";
//   Hooks hooks;  hooks.batch = its loss;  hooks.evaluate = its evaluation
//   Report report{.metrics = {"val_loss", "accuracy"}, ...};
//   report.summary = ...;  report.show = ...;                  its final printout
//   return program.train(model, hooks, report);
//
// The generators, all from --seed: `init` (--seed) draws the weights, `data`
// (--seed + 1) the training batches, and a program's own saved ones
// (add_generator) --seed + 2, + 3, ... in the order added; all of them are
// saved in the checkpoint, so a resumed run draws on where it stopped.
// held_out_generator() (--seed XOR 0x9e3779b97f4a7c15) draws a fixed
// held-out set at the start of every session, so it is not saved. (seq2seq's
// held-out set comes from nn::make_eval_set and charlm's windows from its
// split_loss, each salting --seed its own way.)
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "examples/toolkit/cli/args.h"
#include "examples/toolkit/training/memory_estimate.h"
#include "examples/toolkit/training/run_flags.h"
#include "examples/toolkit/training/run_lock.h"
#include "examples/toolkit/training/training.h"
#include "nn/io/checkpoint.h"
#include "nn/module.h"
#include "nn/optim/schedule.h"
#include "tensor/random.h"

namespace gradflow::training {

// What a program says about its run, beside its model and hooks.
struct Report {
  // The header's second line: "  1000 steps of 64 <batch_of>, <schedule>;
  // <held_out>; output in DIR" (no held-out part when empty).
  std::string batch_of = "examples", held_out = "";
  std::vector<std::string> metrics = {};  // the evaluation's log columns (LoopOptions::metrics)
  nn::Metadata metadata = {};             // saved after the run's own (run_metadata)
  // The end of a finished run, in eval mode without gradients: `summary`
  // prints the last evaluation's metrics, then a line counts the steps
  // skipped for non-finite values (if any), then `show` prints whatever
  // else the program shows (decodes, answers, a sample).
  std::function<void(const std::vector<double>& metrics)> summary = nullptr;
  std::function<void()> show = nullptr;
};

// "1 thread", or when the default was not chosen and the machine has more
// cores, "1 thread (the default; this machine has 2 cores: --threads 2 is
// faster, ...)": the header's note on the thread count.
std::string threads_text(int threads, bool chosen, unsigned cores);

class TrainingProgram {
 public:
  // `name` is the program's (its checkpoints say whose they are); `about`
  // opens its --help. `flags` holds the program's defaults and, once parsed,
  // the run's values; it must outlive the TrainingProgram.
  TrainingProgram(const std::string& name, const std::string& about, CommonFlags& flags);
  TrainingProgram(const TrainingProgram&) = delete;
  TrainingProgram& operator=(const TrainingProgram&) = delete;

  cli::ArgParser args;   // every flag; add here those that only say how to run
  RunFlags run_flags;    // the flags that define the run, which a checkpoint keeps
  Generator init, data;  // the weights' and the training batches' (set by parse)

  // The shared flags (add_common_flags). --help lists flags in the order
  // added: the task's before these, the evaluation's after.
  void add_common_flags();

  // Parses the command line, runs `check_command_line` (a check of what was
  // typed, before a checkpoint restores anything), then sets the run up
  // (setup_run): with --resume DIR the run flags come from DIR's checkpoint.
  // Seeds the generators. Throws UsageError.
  void parse(int argc, char** argv, const std::function<void()>& check_command_line = nullptr);
  // The resumed checkpoint's metadata; empty for a fresh run.
  const nn::Metadata& checkpoint() const { return checkpoint_; }

  // Another generator saved in the checkpoint, seeded as above. After parse.
  Generator& add_generator(const std::string& name);
  // A generator for held-out data: the same in every session of the run.
  Generator held_out_generator() const;

  // The model's config, the one place it comes from: from the flags with the
  // data's vocabulary and longest sequence for a fresh run, from the
  // checkpoint when resuming. Then, with `shape` (its config and batch filled
  // in here), refuses a run that cannot fit in memory and claims --out
  // (prepare_run, held until the program ends), and makes the schedule.
  nn::ModelConfig prepare(int64_t vocab, int64_t max_len, TrainingShape shape);

  // Trains `model` with AdamW (nn::AdamWSettings::pytorch(--weight-decay)),
  // after printing the header's second line, writing the run's page
  // (run_page.h: hooks.attention_example and hooks.page_text give it the
  // maps' example and the decodes), and returns the exit code: a
  // run that did not finish returns exit_code's; a finished one is evaluated
  // if no evaluation ran (a resumed run already at --steps), then reported
  // (Report) and closed with the "wrote" line, and returns 0.
  int train(nn::Module& model, const Hooks& hooks, const Report& report);

 private:
  std::string name_, command_;
  CommonFlags& flags_;
  nn::Metadata checkpoint_;
  bool parsed_ = false;
  std::deque<Generator> added_;                                 // add_generator's, kept in place
  std::vector<std::pair<std::string, Generator*>> generators_;  // saved, in this order
  std::optional<nn::ModelConfig> config_;
  std::optional<nn::LrSchedule> schedule_;
  std::optional<training::RunLock> lock_;
};

// "17890 parameters (d_model 32, heads 2, layers 2, d_ff 64, scale
// inv_sqrt_dk)", the model in a program's header; `more` ("context 64")
// goes before the scale.
std::string describe_model(const nn::Module& model, const nn::ModelConfig& config,
                           const std::string& more = "");

}  // namespace gradflow::training
