// The training loop the example programs share: the step, evaluation,
// logging, checkpoints, resume and Ctrl-C.
//
// A program's TrainingProgram (program.h) registers the flags (run_flags.h),
// calls setup_run, builds the optimizer and the generators, and hands them
// with the program's model to run_training, with the program's hooks:
//   batch     draws the next batch from the data generator, returns its loss
//             by parts (PartLoss)
//   evaluate  (optional) held-out metrics, one per LoopOptions::metrics
//
// Each step: forward and backward of LoopOptions::parts parts of the batch
// at once, one per thread (autograd/data_parallel.h), then
// nn::training_step (nn/optim/training_step.h): lr from the schedule at the
// optimizer's update count, clip (which also measures the gradient norm),
// the optimizer's update. A non-finite loss or gradient norm skips the update
// (parameters untouched, NonFinitePolicy::kSkip) and says so; with
// stop_on_nan it ends the run instead (kSkipAndStop), and after
// max_skipped_steps skipped steps in a row (or a session whose every step was
// skipped) it ends as kTooManySkipped. In the output directory:
//   log.csv                  step,loss,lr,grad_norm,skipped,<metrics>
//   index.html, attention_grads.csv
//                            the run's page and the attention layers' gradients, with
//                            LoopOptions::page (run_page.h): at the start, at each evaluation
//                            and at the end
//   checkpoint.safetensors   weights, optimizer, generators, step and
//                            metadata; every save_every steps, at the end and
//                            on a stop signal
//   model.safetensors        weights only, with the same metadata
// A state holding a NaN or an infinity is never saved: the checkpoint on
// disk stays the last good one (nn/io/checkpoint.h).
//
// A resumed run carries the log over (rows after the checkpoint's step are
// dropped) and appends to it, so it reads as one run. The checkpoint records
// the log's digest (csv_log.h) and --threads: a resume refuses a log whose
// rows up to the checkpoint's step are not the ones saved with it (another
// run's log) or a log.csv that is not a file (a FIFO, a folder, a dangling
// symlink), warns and starts a new log when log.csv is missing, and warns
// when --threads differs (the run then continues, but not bitwise; without
// --threads a resume takes the checkpoint's, setup_run).
//
// SIGINT, SIGTERM and SIGHUP (signals.h) end the current step, save the
// checkpoint and return kInterrupted with the signal; the handlers, installed
// only while run_training runs, just set a flag.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "examples/toolkit/training/attention_maps.h"
#include "examples/toolkit/training/memory_estimate.h"
#include "examples/toolkit/training/run_flags.h"
#include "examples/toolkit/training/run_lock.h"
#include "nn/io/checkpoint.h"
#include "nn/module.h"
#include "nn/optim/optim.h"
#include "nn/optim/schedule.h"

namespace gradflow::training {

struct StepInfo {
  int64_t step = 0;                        // 1-based, counting skipped steps
  double loss = 0, lr = 0, grad_norm = 0;  // grad_norm before clipping; NaN if not computed
  bool skipped = false;
};

// A held-out evaluation: one value per LoopOptions::metrics, and any lines to
// print with it (e.g. a sample).
struct Evaluation {
  std::vector<double> metrics = {};
  std::string text = "";
};

// The loss of part `part` of `parts` of a step's batch, the rows
// part_rows(t, part, parts) of each of its tensors, as that part's share of
// the batch's mean loss (nn::cross_entropy's divide_by), so that the parts'
// losses and gradients add up to the whole batch's. A single element.
using PartLoss = std::function<Variable(int64_t part, int64_t parts)>;

// Rows [part_range(B, part, parts)) of a (B, ...) tensor: a view.
Tensor part_rows(const Tensor& t, int64_t part, int64_t parts);

struct Hooks {
  std::function<PartLoss()> batch = nullptr;       // required: draws a fresh batch
  std::function<Evaluation()> evaluate = nullptr;  // runs in eval mode without gradients
  std::function<void(const StepInfo&)> after_step = nullptr;
  // For the run's page (run_page.h), at each evaluation, both optional: the held-out example
  // whose attention it draws, and what the model gives (decodes, a sample) as text, which runs
  // in eval mode without gradients and must draw from no generator of the run.
  std::function<AttentionExample()> attention_example = nullptr;
  std::function<std::string()> page_text = nullptr;
};

// index.html in the run's folder (run_page.h).
struct PageOptions {
  bool write = false;
  std::string command = "";  // the command line that started this session, as a shell reads it
  int64_t batch = 0;  // the rows of a step's batch (its sequences); 0: not known, taken at once
};

// --graph: draw one step's graph (step_graph.h).
struct GraphRequest {
  std::string path = "";  // FILE.svg, or FILE.dot for Graphviz text; empty: no graph
  int64_t step = 1;       // which step (1-based)
  int depth = 0;          // GraphOptions::collapse_depth: 0 every op, 2 a model's parts, ...
};

struct LoopOptions {
  std::string out_dir = "";
  int64_t steps = 0, eval_every = 0, save_every = 0;  // 0: never (but at the end)
  double clip = 0;                                    // 0: no clipping
  int64_t parts = 1;  // parts of each batch run at once, one per thread
  bool stop_on_nan = false;
  int64_t max_skipped_steps = 0;          // stop after this many skipped steps in a row (0: never)
  int threads = 1;                        // saved in the checkpoint; a resume compares
  std::vector<std::string> metrics = {};  // the evaluation's log columns
  nn::Metadata metadata = {};             // saved in both files
  std::string resume_dir = "";            // continue from its checkpoint, or empty
  GraphRequest graph = {};                // draw this step's graph before it runs
  std::vector<std::string> notes = {};    // said once a resume's checks have passed
  PageOptions page = {};
  std::ostream* err = nullptr;  // progress and messages; nullptr: std::cerr
  std::optional<bool> tty = std::nullopt;
};

// What a program does once its model's sizes are known, before building it:
// refuses a configuration that cannot fit in memory (memory_estimate.h; with
// shape.reference taken from --reference), then
// claims --out (run_lock.h). The lock must be held until the program ends.
training::RunLock prepare_run(const CommonFlags& flags, const TrainingShape& shape);

// LoopOptions from the flags, with one part per thread (at most one per
// row; one in all with dropout); the caller adds metrics and metadata.
LoopOptions loop_options(const CommonFlags& flags);

// kNotSaved: every step ran, but the final state held a NaN or an infinity,
// so the promised checkpoint and model were not written.
enum class Outcome { kFinished, kInterrupted, kStoppedOnNan, kTooManySkipped, kNotSaved };

struct TrainResult {
  Outcome outcome = Outcome::kFinished;
  int signal = 0;                    // kInterrupted: the signal (SIGINT, SIGTERM, SIGHUP)
  int64_t step = 0;                  // steps done, in all sessions
  int64_t skipped = 0;               // steps skipped in this session
  double last_loss = 0;              // of the last step
  std::vector<double> metrics = {};  // the last evaluation's, empty if none ran
  // The files of the run this session wrote in out_dir, in the order written
  // ("log.csv", "checkpoint.safetensors", "model.safetensors").
  std::vector<std::string> written = {};
};

// "wrote runs/x/log.csv runs/x/checkpoint.safetensors": what a program
// reports it wrote, naming only those files, each a path a shell reads back
// as it is (cli::shell_word), so it can be copied into the next command.
std::string wrote_line(const std::string& dir, const std::vector<std::string>& files);

// Trains model with optimizer from options.resume_dir's checkpoint or from
// scratch up to options.steps. The generators' states are saved and
// restored (the data generator's is the data stream's position).
TrainResult run_training(nn::Module& model, nn::Optimizer& optimizer,
                         const nn::LrSchedule& schedule,
                         const std::vector<std::pair<std::string, Generator*>>& generators,
                         const LoopOptions& options, const Hooks& hooks);

// The programs' exit codes: 0 finished; 128 + the signal when interrupted
// (130 SIGINT, 143 SIGTERM, 129 SIGHUP, as a shell reports them); 1 stopped
// on a non-finite value as --stop-on-nan asked, or finished with a final
// state that could not be saved (kNotSaved); 2 stopped after
// --max-skipped-steps skipped steps (like a bad value: the run cannot train).
inline constexpr int kExitStoppedOnNan = 1;
int exit_code(const TrainResult& result);

// "Finished", "Interrupted (SIGINT)", ...: how the run ended, for its page.
std::string outcome_text(const TrainResult& result);

}  // namespace gradflow::training
