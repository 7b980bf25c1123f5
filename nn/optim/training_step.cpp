// The training step after backward; its order and policies are in training_step.h.
#include "nn/optim/training_step.h"

#include <cmath>

#include "tensor/error.h"

namespace gradflow::nn {

StepReport training_step(Optimizer& optimizer, const LrSchedule& schedule, double loss,
                         const StepOptions& options) {
  if (!(options.clip >= 0) || !std::isfinite(options.clip))
    fail("training_step: clip must be finite and >= 0 (0: no clipping), got ", options.clip);
  StepReport r{.lr = schedule.lr_at(optimizer.step_count())};
  optimizer.set_lr(r.lr);
  const NonFinitePolicy policy = options.non_finite;
  if (!std::isfinite(loss)) {
    r.non_finite = true;
    r.stop = policy != NonFinitePolicy::kSkip;
    optimizer.zero_grad();
    return r;
  }
  // With no clipping, a bound no finite norm exceeds: only the norm. A NaN norm makes every
  // gradient NaN (clip_grad_norm, as PyTorch's).
  r.grad_norm = clip_grad_norm(
      optimizer.params(), options.clip > 0 ? options.clip : std::numeric_limits<double>::max());
  r.non_finite = !std::isfinite(r.grad_norm);
  if (r.non_finite && policy != NonFinitePolicy::kDiverge) {
    r.stop = policy == NonFinitePolicy::kSkipAndStop;
    optimizer.zero_grad();
    return r;
  }
  optimizer.step();
  r.updated = true;
  return r;
}

}  // namespace gradflow::nn
