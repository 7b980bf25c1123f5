// Optimizers (SGD with momentum and Nesterov, Adam, AdamW) with PyTorch's update rules, and
// global gradient-norm clipping.
//
// An optimizer holds handles to its parameters (leaf Variables) and updates their data in place,
// so every Tensor sharing a parameter's storage sees the new values. step() skips a parameter
// whose grad is undefined (no backward reached it), as PyTorch does: its state (momentum buffer,
// moments, update count) is left as it was too.
//
// Each parameter's update is one fused loop over its contiguous data, computed in the parameter's
// own dtype (float32 or float64) with the hyperparameters rounded to that dtype, as PyTorch's
// single-tensor kernels compute it. Nothing is allocated per step (a non-contiguous gradient, which
// the engine never produces, is first copied). Adam's and AdamW's loop has a reference beside it,
// the same formulas from tensor ops, which runs instead with reference_ops() on.
//
// Checkpoints: state() lists every piece of state under a name; load_state() puts it back, and
// training then continues bitwise identically to a run that never stopped. The names are
//   "step"                int64 ()   step_count(): calls of step()
//   "lr"                  float64 () the current learning rate (set_lr may have changed it)
//   hyperparameters       float64 () e.g. "momentum", "beta1": fixed at construction; load_state
//                                    checks they match rather than overwriting them, so a resume
//                                    cannot silently change the update rule (to change one on
//                                    purpose, edit its value in the list before loading)
//   "param_steps"         int64 (P)  per parameter, the updates it received (a parameter without a
//                                    grad is not updated, so its Adam bias correction lags)
//   "<buffer>.<i>"        the parameter's shape and dtype: "momentum_buffer.3", "exp_avg.3",
//                                    "exp_avg_sq.3" for parameter index i (SGD has buffers only
//                                    when momentum != 0)
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "autograd/variable.h"
#include "tensor/tensor.h"

namespace gradflow::nn {

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // Updates every parameter that has a gradient, then counts the step. Throws Error naming the
  // parameter index if a gradient's shape or dtype differs from its parameter's.
  void step();
  // Sets every parameter's gradient undefined, so the next backward starts afresh.
  void zero_grad();

  double lr() const { return lr_; }
  void set_lr(double lr);  // REQUIRES: finite and >= 0 (throws Error otherwise)
  int64_t step_count() const { return step_count_; }
  const std::vector<Variable>& params() const { return params_; }
  const std::string& name() const { return name_; }  // "SGD", "Adam" or "AdamW", for messages

  // Copies of every state tensor, named as above (later steps do not change them).
  NamedTensors state() const;
  // Restores a state() of an optimizer built alike (same parameter shapes and dtypes, same
  // hyperparameters), in any order. Validates everything first and throws Error naming the
  // offending key (missing, unexpected, duplicated, wrong shape or dtype, bad value); the
  // optimizer is then unchanged. The tensors are copied, not aliased.
  void load_state(const NamedTensors& state);

 protected:
  // REQUIRES: params non-empty, distinct, defined leaves with contiguous float32/float64 data.
  Optimizer(std::string name, std::vector<Variable> params, double lr);

  // The hyperparameters saved in state() and checked by load_state(), in order.
  virtual std::vector<std::pair<std::string, double>> hyperparameters() const = 0;
  // Live handles to the per-parameter buffers, named "<buffer>.<i>", in order.
  virtual NamedTensors buffers() const = 0;
  // Updates parameter i in place. p and g are contiguous with the same shape and dtype; t is this
  // parameter's update count including this one (1 on its first update).
  virtual void update(size_t i, const Tensor& p, const Tensor& g, int64_t t) = 0;

 private:
  std::string name_;
  std::vector<Variable> params_;
  double lr_;
  int64_t step_count_ = 0;
  std::vector<int64_t> param_steps_;  // per parameter, updates received
};

// Stochastic gradient descent, as torch.optim.SGD with dampening 0:
//   g = grad + weight_decay * p
//   b = g on a parameter's first update, else momentum * b + g    (when momentum != 0)
//   g = nesterov ? g + momentum * b : b                           (when momentum != 0)
//   p = p - lr * g
// REQUIRES: lr, momentum, weight_decay finite and >= 0; nesterov needs momentum > 0.
class SGD : public Optimizer {
 public:
  SGD(std::vector<Variable> params, double lr, double momentum = 0, bool nesterov = false,
      double weight_decay = 0);

 protected:
  std::vector<std::pair<std::string, double>> hyperparameters() const override;
  NamedTensors buffers() const override;
  void update(size_t i, const Tensor& p, const Tensor& g, int64_t t) override;

 private:
  double momentum_, weight_decay_;
  bool nesterov_;
  std::vector<Tensor> momentum_buffers_;  // empty when momentum == 0
};

// Adam, as torch.optim.Adam, with t this parameter's update count (1, 2, ...):
//   g = grad + weight_decay * p                       (L2 penalty through the gradient)
//   m = beta1 * m + (1 - beta1) * g
//   v = beta2 * v + (1 - beta2) * g * g
//   p = p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// REQUIRES: lr, eps, weight_decay finite and >= 0; beta1, beta2 in [0, 1).
class Adam : public Optimizer {
 public:
  Adam(std::vector<Variable> params, double lr = 1e-3, double beta1 = 0.9, double beta2 = 0.999,
       double eps = 1e-8, double weight_decay = 0);

 protected:
  // decoupled: weight decay as AdamW (p *= 1 - lr * weight_decay first) instead of through g.
  Adam(std::string name, std::vector<Variable> params, double lr, double beta1, double beta2,
       double eps, double weight_decay, bool decoupled);
  std::vector<std::pair<std::string, double>> hyperparameters() const override;
  NamedTensors buffers() const override;
  void update(size_t i, const Tensor& p, const Tensor& g, int64_t t) override;
  // The same update composed from tensor ops, which update() runs instead with reference_ops()
  // on (autograd/reference.h).
  void update_reference(size_t i, const Tensor& p, const Tensor& g, int64_t t);

 private:
  double beta1_, beta2_, eps_, weight_decay_;
  bool decoupled_;
  std::vector<Tensor> exp_avg_, exp_avg_sq_;  // m and v, per parameter
};

// AdamW, as torch.optim.AdamW: decoupled weight decay, applied to the parameter before the Adam
// update of the plain gradient:
//   p = p * (1 - lr * weight_decay)
//   then Adam's update above with g = grad.
class AdamW : public Adam {
 public:
  AdamW(std::vector<Variable> params, double lr = 1e-3, double beta1 = 0.9, double beta2 = 0.999,
        double eps = 1e-8, double weight_decay = 0.01);
};

// Scales the gradients of `params` together so that their global L2 norm is at most max_norm, as
// torch.nn.utils.clip_grad_norm_. Returns the norm before clipping, sqrt(sum of every grad
// element squared), accumulated in double. When norm > max_norm every grad is multiplied by
// max_norm / (norm + 1e-6); otherwise the grads are left bitwise unchanged. A NaN or Inf norm is
// returned as is with the grads untouched, so the caller can skip the step. Parameters without a
// grad are skipped; a Variable listed twice counts once. REQUIRES: max_norm finite and >= 0, and
// no two parameters' grads sharing storage (the engine never makes them share).
double clip_grad_norm(const std::vector<Variable>& params, double max_norm);

}  // namespace gradflow::nn
