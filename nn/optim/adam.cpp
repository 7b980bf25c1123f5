// Adam and AdamW, and AdamW's presets. The update formulas are on the declarations in optim.h;
// update() is one loop over a parameter's n contiguous elements in its dtype T, with its
// reference beside it: the same formulas from whole-tensor ops.
#include <cmath>
#include <string_view>

#include "autograd/reference.h"
#include "nn/optim/optim.h"
#include "nn/optim/optim_checks.h"
#include "tensor/creation.h"
#include "tensor/elementwise.h"
#include "tensor/kernels/cpu_dispatch.h"

namespace gradflow::nn {

namespace {

// visit_float compiled for each CPU (tensor/kernels/cpu_dispatch.h), the
// body's loop inlined: Adam's update vectorises for the CPU it runs on.
template <class Fn>
void visit_float_for_this_cpu(DType t, std::string_view op, const Fn& fn) {
  run_for_this_cpu([&] { visit_float(t, op, fn); });
}

}  // namespace

Adam::Adam(std::vector<Variable> params, double lr, double beta1, double beta2, double eps,
           double weight_decay)
    : Adam("Adam", {{std::move(params)}}, lr, beta1, beta2, eps, weight_decay, false) {}

Adam::Adam(std::vector<ParamGroup> groups, double lr, double beta1, double beta2, double eps,
           double weight_decay)
    : Adam("Adam", std::move(groups), lr, beta1, beta2, eps, weight_decay, false) {}

Adam::Adam(std::string name, std::vector<ParamGroup> groups, double lr, double beta1, double beta2,
           double eps, double weight_decay, bool decoupled)
    : Optimizer(name, std::move(groups), lr),
      beta1_(beta1),
      beta2_(beta2),
      eps_(eps),
      weight_decay_(weight_decay),
      decoupled_(decoupled) {
  check_beta(name, "beta1", beta1);
  check_beta(name, "beta2", beta2);
  check_non_negative(name, "eps", eps);
  check_non_negative(name, "weight_decay", weight_decay);
  for (const Variable& p : this->params()) {
    exp_avg_.push_back(zeros_like(p.data()));
    exp_avg_sq_.push_back(zeros_like(p.data()));
  }
}

AdamW::AdamW(std::vector<Variable> params, double lr, double beta1, double beta2, double eps,
             double weight_decay)
    : Adam("AdamW", {{std::move(params)}}, lr, beta1, beta2, eps, weight_decay, true) {}

AdamW::AdamW(std::vector<Variable> params, double lr, const AdamWSettings& s)
    : AdamW(std::vector<ParamGroup>{{std::move(params)}}, lr, s) {}

AdamW::AdamW(std::vector<ParamGroup> groups, double lr, const AdamWSettings& s)
    : Adam("AdamW", std::move(groups), lr, s.beta1, s.beta2, s.eps, s.weight_decay, true) {}

AdamWSettings AdamWSettings::pytorch(double weight_decay) {
  return {.beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = weight_decay};
}

AdamWSettings AdamWSettings::attention_paper() {
  return {.beta1 = 0.9, .beta2 = 0.98, .eps = 1e-9, .weight_decay = 0};
}

std::vector<std::pair<std::string, double>> Adam::hyperparameters() const {
  return {{"beta1", beta1_},
          {"beta2", beta2_},
          {"eps", eps_},
          {"weight_decay", weight_decay_},
          {"decoupled_weight_decay", decoupled_ ? 1 : 0}};
}

NamedTensors Adam::buffers() const {
  NamedTensors out;
  for (size_t i = 0; i < exp_avg_.size(); ++i) {
    out.emplace_back("exp_avg." + std::to_string(i), exp_avg_[i]);
    out.emplace_back("exp_avg_sq." + std::to_string(i), exp_avg_sq_[i]);
  }
  return out;
}

void Adam::update(size_t i, const Tensor& p, const Tensor& g, int64_t t, double lr) {
  if (reference_ops()) return update_reference(i, p, g, t, lr);
  // Scalars in double, as PyTorch computes them in Python, then rounded to T.
  const double step_size = lr / (1 - std::pow(beta1_, static_cast<double>(t)));
  const double bias_correction2_sqrt = std::sqrt(1 - std::pow(beta2_, static_cast<double>(t)));
  visit_float_for_this_cpu(p.dtype(), "Adam.step", [&](auto zero) {
    using T = decltype(zero);
    const int64_t n = p.numel();
    T* pd = p.data<T>();
    const T* gd = g.data<T>();
    T* m = exp_avg_[i].data<T>();
    T* v = exp_avg_sq_[i].data<T>();
    const T b1 = static_cast<T>(beta1_), a1 = static_cast<T>(1 - beta1_);
    const T b2 = static_cast<T>(beta2_), a2 = static_cast<T>(1 - beta2_);
    const T eps = static_cast<T>(eps_), wd = static_cast<T>(weight_decay_);
    const T shrink = static_cast<T>(1 - lr * weight_decay_);  // AdamW's decay factor
    const T neg_step = static_cast<T>(-step_size), bc2 = static_cast<T>(bias_correction2_sqrt);
    const bool coupled = weight_decay_ != 0 && !decoupled_;
    const bool shrinks = weight_decay_ != 0 && decoupled_;
    for (int64_t k = 0; k < n; ++k) {
      const T pk = shrinks ? pd[k] * shrink : pd[k];
      const T gk = coupled ? gd[k] + wd * pk : gd[k];
      const T mk = b1 * m[k] + a1 * gk;
      const T vk = b2 * v[k] + a2 * gk * gk;
      m[k] = mk;
      v[k] = vk;
      pd[k] = pk + neg_step * (mk / (std::sqrt(vk) / bc2 + eps));
    }
  });
}

// One whole-tensor op (tensor/elementwise.h) per step of optim.h's formulas, each a pass with a
// tensor of its own; the ops round each hyperparameter to the parameter's dtype, as the loop does.
void Adam::update_reference(size_t i, const Tensor& p, const Tensor& g, int64_t t, double lr) {
  const double step_size = lr / (1 - std::pow(beta1_, static_cast<double>(t)));
  const double bias_correction2_sqrt = std::sqrt(1 - std::pow(beta2_, static_cast<double>(t)));
  Tensor param = p, grad = g;
  if (weight_decay_ != 0 && decoupled_) param = mul(param, 1 - lr * weight_decay_);    // AdamW
  if (weight_decay_ != 0 && !decoupled_) grad = add(grad, mul(param, weight_decay_));  // Adam
  const Tensor m = add(mul(exp_avg_[i], beta1_), mul(grad, 1 - beta1_));
  const Tensor v = add(mul(exp_avg_sq_[i], beta2_), mul(mul(grad, grad), 1 - beta2_));
  const Tensor denom = add(div(sqrt(v), bias_correction2_sqrt), eps_);
  const Tensor updated = sub(param, mul(div(m, denom), step_size));
  // Into the live storage, which every handle on the parameter and the moments shares.
  exp_avg_[i].copy_(m);
  exp_avg_sq_[i].copy_(v);
  Tensor live = p;
  live.copy_(updated);
}

}  // namespace gradflow::nn
