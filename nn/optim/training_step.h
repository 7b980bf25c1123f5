// A training step once the gradients are in: the learning rate from the schedule, the gradient
// norm measured and clipped, what a NaN or an infinity does, and the optimizer's update. The
// programs' loop (examples/toolkit/training/training.h) and the scaling study's
// (examples/study/training_run.cpp) both step through it, so a setting means the same in both;
// examples/minimal_train.cpp spells the same step out by hand, to be read.
//
// The caller zeroes the gradients, computes the loss and backpropagates it only when it is finite
// (a NaN loss has no gradient worth keeping), then calls
//   const StepReport r = training_step(optimizer, schedule, loss, options);
// which, in this order:
//   1. sets the optimizer's lr to schedule.lr_at(optimizer.step_count()): warm-up included, and a
//      resumed optimizer (step_count() restored) continues the schedule where it was;
//   2. on a finite loss, measures the global gradient norm over optimizer.params() and clips it to
//      options.clip (clip_grad_norm, optim.h), or only measures it when clip is 0;
//   3. on a non-finite loss or norm, does what options.non_finite says;
//   4. otherwise updates: optimizer.step().
// It returns what it measured and did; the caller logs it and ends the run when asked to.
#pragma once

#include <limits>

#include "nn/optim/optim.h"
#include "nn/optim/schedule.h"

namespace gradflow::nn {

// What a step does when the loss or the gradient norm is NaN or infinite.
enum class NonFinitePolicy {
  // No update: the parameters and the optimizer's state stay as they were, the gradients are
  // dropped, and training goes on. The programs' default.
  kSkip,
  // As kSkip, and StepReport::stop asks the caller to end the run: the programs' --stop-on-nan.
  kSkipAndStop,
  // A non-finite loss updates nothing and ends the run (StepReport::stop); the gradients behind a
  // finite loss with a non-finite norm are applied as clip_grad_norm leaves them (all NaN for a
  // NaN norm, as PyTorch), so the parameters turn non-finite and the next loss ends the run. The
  // scaling study's: a run that diverges is a result to record.
  kDiverge,
};

struct StepOptions {
  double clip = 0;  // the largest global gradient norm; 0: the norm is measured, nothing clipped
  NonFinitePolicy non_finite = NonFinitePolicy::kSkip;
};

struct StepReport {
  double lr = 0;  // the learning rate the update ran at (or would have: it is set either way)
  // The global L2 norm of the gradients before clipping; NaN when the loss was not finite (then
  // nothing is measured).
  double grad_norm = std::numeric_limits<double>::quiet_NaN();
  bool non_finite = false;  // the loss or the gradient norm was NaN or infinite
  bool updated = false;     // the optimizer stepped
  bool stop = false;        // the policy asks the caller to end the run
};

// Steps 1 to 4 above. Throws Error if options.clip is negative or not finite.
StepReport training_step(Optimizer& optimizer, const LrSchedule& schedule, double loss,
                         const StepOptions& options = {});

}  // namespace gradflow::nn
