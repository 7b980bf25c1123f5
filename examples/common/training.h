// The training loop the example programs share: the step, evaluation,
// logging, checkpoints, resume and Ctrl-C.
//
// A program registers its flags (run_flags.h), calls setup_run, builds its
// model, optimizer and generators, and hands them to run_training with hooks:
//   batch     draws the next batch from the data generator, returns its loss
//             by parts (PartLoss)
//   evaluate  (optional) held-out metrics, one per LoopOptions::metrics
//
// Each step: lr from the schedule at the optimizer's update count, forward
// and backward of LoopOptions::parts parts of the batch at once, one per
// thread (autograd/data_parallel.h), clip (which also measures the gradient
// norm), AdamW. A
// non-finite loss or gradient norm skips the update (parameters untouched)
// and says so; with stop_on_nan it ends the run instead. In the output
// directory:
//   log.csv                  step,loss,lr,grad_norm,skipped,<metrics>
//   checkpoint.safetensors   weights, optimizer, generators, step and
//                            metadata; every save_every steps, at the end and
//                            on Ctrl-C
//   model.safetensors        weights only, with the same metadata
// A resumed run carries the log over (rows after the checkpoint's step are
// dropped) and appends to it, so it reads as one run. Ctrl-C (SIGINT) ends
// the current step, saves the checkpoint and returns kInterrupted; the
// handler, installed only while run_training runs, just sets a flag.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "examples/common/run_flags.h"
#include "nn/io/checkpoint.h"
#include "nn/module.h"
#include "nn/optim/optim.h"
#include "nn/optim/schedule.h"

namespace gradflow::examples {

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
};

struct LoopOptions {
  std::string out_dir = "";
  int64_t steps = 0, eval_every = 0, save_every = 0;  // 0: never (but at the end)
  double clip = 0;                                    // 0: no clipping
  int64_t parts = 1;  // parts of each batch run at once, one per thread
  bool stop_on_nan = false;
  std::vector<std::string> metrics = {};  // the evaluation's log columns
  nn::Metadata metadata = {};             // saved in both files
  std::string resume_dir = "";            // continue from its checkpoint, or empty
  std::ostream* err = nullptr;            // progress and messages; nullptr: std::cerr
  std::optional<bool> tty = std::nullopt;
};

// LoopOptions from the flags, with one part per thread (at most one per
// row; one in all with dropout); the caller adds metrics and metadata.
LoopOptions loop_options(const CommonFlags& flags);

enum class Outcome { kFinished, kInterrupted, kStoppedOnNan };

struct TrainResult {
  Outcome outcome = Outcome::kFinished;
  int64_t step = 0;                  // steps done, in all sessions
  int64_t skipped = 0;               // steps skipped in this session
  double last_loss = 0;              // of the last step
  std::vector<double> metrics = {};  // the last evaluation's, empty if none ran
};

// Trains model with optimizer from options.resume_dir's checkpoint or from
// scratch up to options.steps. The generators' states are saved and
// restored (the data generator's is the data stream's position).
TrainResult run_training(nn::Module& model, nn::Optimizer& optimizer,
                         const nn::LrSchedule& schedule,
                         const std::vector<std::pair<std::string, Generator*>>& generators,
                         const LoopOptions& options, const Hooks& hooks);

// 0 finished, 130 interrupted (as a shell reports SIGINT), 1 stopped on NaN.
int exit_code(const TrainResult& result);

}  // namespace gradflow::examples
