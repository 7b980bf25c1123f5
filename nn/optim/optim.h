// Optimizers (SGD with momentum and Nesterov, Adam, AdamW) with PyTorch's update rules, and
// global gradient-norm clipping.
//
// An optimizer holds handles to its parameters (leaf Variables) and updates their data in place,
// so every Tensor sharing a parameter's storage sees the new values; each update counts as an
// in-place write (Storage::version), so a graph that saved the old values refuses its backward.
// step() skips a parameter whose grad is undefined (no backward reached it), as PyTorch does: its
// state (momentum buffer, moments, update count) is left as it was too.
//
// Each parameter's update is one fused loop over its contiguous data, computed in the parameter's
// own dtype (float32 or float64) with the hyperparameters rounded to that dtype, as PyTorch's
// single-tensor kernels compute it. Nothing is allocated per step (a non-contiguous gradient, which
// the engine never produces, is first copied). Adam's and AdamW's loop has a reference beside it,
// the same formulas from tensor ops, which runs instead with reference_ops() on.
//
// Parameter groups: the parameters may come as groups (ParamGroup), each learning at the
// optimizer's lr() times its own factor, so that one schedule setting lr() moves them all. The
// single-list constructors make one group at factor 1. A group's update is computed exactly as
// that of a separate optimizer at lr() * factor (the product taken in double, then rounded to the
// parameter's dtype as any lr is); the hyperparameters are shared.
//
// Checkpoints: state() lists every piece of state under a name; load_state() puts it back, and
// training then continues bitwise identically to a run that never stopped. The names are
//   "step"                int64 ()   step_count(): calls of step()
//   "lr"                  float64 () the current learning rate (set_lr may have changed it)
//   hyperparameters       float64 () e.g. "momentum", "beta1": fixed at construction; load_state
//                                    checks they match rather than overwriting them, so a resume
//                                    cannot silently change the update rule (to change one on
//                                    purpose, edit its value in the list before loading)
//   "lr_factors"          float64 (G) only with groups (more than one, or a factor other than 1):
//   "group_sizes"         int64 (G)   each group's factor and number of parameters, checked as
//                                    the hyperparameters are. One list at factor 1 writes neither,
//                                    so its state is what it was before groups existed and older
//                                    checkpoints still load.
//   "param_steps"         int64 (P)  per parameter, the updates it received (a parameter without a
//                                    grad is not updated, so its Adam bias correction lags)
//   "<buffer>.<i>"        the parameter's shape and dtype: "momentum_buffer.3", "exp_avg.3",
//                                    "exp_avg_sq.3" for parameter index i (SGD has buffers only
//                                    when momentum != 0)
// A parameter's index i counts through the groups in order: params() lists them so.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "autograd/variable.h"
#include "tensor/tensor.h"

namespace gradflow::nn {

// Parameters that learn at the optimizer's lr() times lr_factor.
struct ParamGroup {
  std::vector<Variable> params = {};
  double lr_factor = 1;
};

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
  // Every group's parameters, group after group: what clip_grad_norm and zero_grad go over.
  const std::vector<Variable>& params() const { return params_; }
  size_t num_groups() const { return lr_factors_.size(); }
  double lr_factor(size_t group) const;  // REQUIRES: group < num_groups() (throws Error otherwise)
  const std::string& name() const { return name_; }  // "SGD", "Adam" or "AdamW", for messages

  // Copies of every state tensor, named as above (later steps do not change them).
  NamedTensors state() const;
  // Restores a state() of an optimizer built alike (same parameter shapes and dtypes, same
  // hyperparameters), in any order. Validates everything first and throws Error naming the
  // offending key (missing, unexpected, duplicated, wrong shape or dtype, bad value); the
  // optimizer is then unchanged. The tensors are copied, not aliased.
  void load_state(const NamedTensors& state);

 protected:
  // REQUIRES: groups non-empty, each with a non-empty list and a finite factor >= 0; the
  // parameters distinct (within and across groups), defined leaves with contiguous float32/float64
  // data.
  Optimizer(std::string name, std::vector<ParamGroup> groups, double lr);

  // The hyperparameters saved in state() and checked by load_state(), in order.
  virtual std::vector<std::pair<std::string, double>> hyperparameters() const = 0;
  // Live handles to the per-parameter buffers, named "<buffer>.<i>", in order.
  virtual NamedTensors buffers() const = 0;
  // Updates parameter i in place at learning rate lr (its group's: lr() * lr_factor). p and g are
  // contiguous with the same shape and dtype; t is this parameter's update count including this
  // one (1 on its first update).
  virtual void update(size_t i, const Tensor& p, const Tensor& g, int64_t t, double lr) = 0;

 private:
  // Whether state() writes the groups: not for one list at factor 1 (the layout before groups).
  bool grouped() const { return lr_factors_.size() > 1 || lr_factors_[0] != 1; }

  std::string name_;
  std::vector<Variable> params_;
  std::vector<double> lr_factors_;    // per group
  std::vector<int64_t> group_sizes_;  // per group, its parameters in params_
  std::vector<size_t> group_of_;      // per parameter, its group
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
  SGD(std::vector<ParamGroup> groups, double lr, double momentum = 0, bool nesterov = false,
      double weight_decay = 0);

 protected:
  std::vector<std::pair<std::string, double>> hyperparameters() const override;
  NamedTensors buffers() const override;
  void update(size_t i, const Tensor& p, const Tensor& g, int64_t t, double lr) override;

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
  Adam(std::vector<ParamGroup> groups, double lr, double beta1 = 0.9, double beta2 = 0.999,
       double eps = 1e-8, double weight_decay = 0);

 protected:
  // decoupled: weight decay as AdamW (p *= 1 - lr * weight_decay first) instead of through g.
  Adam(std::string name, std::vector<ParamGroup> groups, double lr, double beta1, double beta2,
       double eps, double weight_decay, bool decoupled);
  std::vector<std::pair<std::string, double>> hyperparameters() const override;
  NamedTensors buffers() const override;
  void update(size_t i, const Tensor& p, const Tensor& g, int64_t t, double lr) override;
  // The same update composed from tensor ops, which update() runs instead with reference_ops()
  // on (autograd/reference.h).
  void update_reference(size_t i, const Tensor& p, const Tensor& g, int64_t t, double lr);

 private:
  double beta1_, beta2_, eps_, weight_decay_;
  bool decoupled_;
  std::vector<Tensor> exp_avg_, exp_avg_sq_;  // m and v, per parameter
};

// AdamW's settings besides the learning rate. A program trains with a named preset rather than
// its own copy of the numbers, so that two programs said to train alike do.
struct AdamWSettings {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0.01;  // torch.optim.AdamW's

  // torch.optim.AdamW's betas (0.9, 0.999) and eps 1e-8 with the given weight decay: the example
  // programs' (--weight-decay) and the benchmarks' general workloads.
  static AdamWSettings pytorch(double weight_decay);
  // "Attention Is All You Need"'s Adam betas (0.9, 0.98) and eps 1e-9, without weight decay:
  // the scaling study's, the lessons' and the study workloads of the benchmarks.
  static AdamWSettings attention_paper();
};

// AdamW, as torch.optim.AdamW: decoupled weight decay, applied to the parameter before the Adam
// update of the plain gradient:
//   p = p * (1 - lr * weight_decay)
//   then Adam's update above with g = grad.
class AdamW : public Adam {
 public:
  AdamW(std::vector<Variable> params, double lr = 1e-3, double beta1 = 0.9, double beta2 = 0.999,
        double eps = 1e-8, double weight_decay = 0.01);
  AdamW(std::vector<Variable> params, double lr, const AdamWSettings& settings);
  AdamW(std::vector<ParamGroup> groups, double lr, const AdamWSettings& settings);
};

// Scales the gradients of `params` together so that their global L2 norm is at most max_norm, as
// torch.nn.utils.clip_grad_norm_. Returns the norm before clipping, sqrt(sum of every grad
// element squared), accumulated in double. When norm > max_norm every grad is multiplied by
// max_norm / (norm + 1e-6); otherwise the grads are left bitwise unchanged. As in PyTorch, a NaN
// norm makes every grad NaN and an infinite one multiplies them by 0; the norm is returned, so the
// caller can skip the step (nn::training_step does, and drops the grads). Parameters without a
// grad are skipped; a Variable listed twice counts once. REQUIRES: max_norm finite and >= 0, and
// no two parameters' grads sharing storage (the engine never makes them share).
double clip_grad_norm(const std::vector<Variable>& params, double max_norm);

}  // namespace gradflow::nn
