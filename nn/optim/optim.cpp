// Optimizers and gradient clipping. The update formulas are on the declarations in optim.h; here
// each is one loop over a parameter's n contiguous elements, in the parameter's dtype T. Adam's
// (and so AdamW's) has its reference beside it: the same formulas from whole-tensor ops.
#include "nn/optim/optim.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "autograd/reference.h"
#include "tensor/creation.h"
#include "tensor/elementwise.h"
#include "tensor/kernels/cpu_dispatch.h"
#include "tensor/kernels/lanes.h"

namespace gradflow::nn {

namespace {

// visit_float compiled for each CPU (tensor/kernels/cpu_dispatch.h), the
// body's loop inlined: Adam's update vectorises for the CPU it runs on.
template <class Fn>
void visit_float_for_this_cpu(DType t, std::string_view op, const Fn& fn) {
  run_for_this_cpu([&] { visit_float(t, op, fn); });
}

// Throws unless v is finite and >= 0; `what` names the hyperparameter.
void check_non_negative(std::string_view op, std::string_view what, double v) {
  if (!(v >= 0) || !std::isfinite(v)) fail(op, ": ", what, " must be finite and >= 0, got ", v);
}

void check_beta(std::string_view op, std::string_view what, double v) {
  if (!(v >= 0 && v < 1)) fail(op, ": ", what, " must be in [0, 1), got ", v);
}

// A new contiguous tensor of the parameters' update counts, or of one count when shape is ().
Tensor int64_tensor(const std::vector<int64_t>& values, const Shape& shape) {
  Tensor t = Tensor::empty(shape, DType::Int64);
  std::copy(values.begin(), values.end(), t.data<int64_t>());
  return t;
}

// The shortest text that reads back as exactly v, so two values that differ show differently.
std::string number(double v) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general);
  return std::string(buf, end);
}

// What load_state expects under one key.
struct Slot {
  std::string name;
  Shape shape;
  DType dtype;
};

}  // namespace

// ---- Optimizer ------------------------------------------------------------

Optimizer::Optimizer(std::string name, std::vector<Variable> params, double lr)
    : name_(std::move(name)), params_(std::move(params)), param_steps_(params_.size(), 0) {
  if (params_.empty()) fail(name_, ": got an empty parameter list");
  std::unordered_set<const VariableImpl*> seen;
  for (size_t i = 0; i < params_.size(); ++i) {
    const Variable& p = params_[i];
    if (!p.defined()) fail(name_, ": parameter ", i, " is undefined");
    if (!p.is_leaf())
      fail(name_, ": parameter ", i, " is not a leaf (it was made by '", p.grad_fn_name(),
           "'); pass the leaves it is computed from");
    if (p.dtype() == DType::Int64)
      fail(name_, ": parameter ", i, " is int64; only float32 and float64 can be optimized");
    if (!p.data().is_contiguous())
      fail(name_, ": parameter ", i, " of shape ", shape_str(p.shape()),
           " is not contiguous; pass a contiguous copy");
    if (!seen.insert(p.impl().get()).second)
      fail(name_, ": parameter ", i, " appears earlier in the list too");
  }
  set_lr(lr);
}

void Optimizer::set_lr(double lr) {
  check_non_negative(name_, "lr", lr);
  lr_ = lr;
}

void Optimizer::step() {
  // Check every gradient first, so a bad one leaves all parameters as they were.
  std::vector<Tensor> grads(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& g = params_[i].grad();
    if (!g.defined()) continue;
    const Tensor& p = params_[i].data();
    if (g.shape() != p.shape() || g.dtype() != p.dtype())
      fail(name_, ".step: the gradient of parameter ", i, " is ", dtype_name(g.dtype()), " ",
           shape_str(g.shape()), " but the parameter is ", dtype_name(p.dtype()), " ",
           shape_str(p.shape()));
    if (!p.is_contiguous()) fail(name_, ".step: parameter ", i, " is no longer contiguous");
    grads[i] = g.contiguous();  // g itself unless a user's set_grad gave a strided view
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    if (grads[i].defined()) update(i, params_[i].data(), grads[i], ++param_steps_[i]);
  }
  ++step_count_;
}

void Optimizer::zero_grad() {
  for (Variable& p : params_) p.zero_grad();
}

NamedTensors Optimizer::state() const {
  NamedTensors out;
  out.emplace_back("step", int64_tensor({step_count_}, {}));
  out.emplace_back("lr", scalar_tensor(lr_, DType::Float64));
  for (const auto& [key, value] : hyperparameters())
    out.emplace_back(key, scalar_tensor(value, DType::Float64));
  out.emplace_back("param_steps",
                   int64_tensor(param_steps_, {static_cast<int64_t>(param_steps_.size())}));
  for (const auto& [key, buffer] : buffers()) out.emplace_back(key, buffer.clone());
  return out;
}

void Optimizer::load_state(const NamedTensors& state) {
  const std::string op = name_ + ".load_state";
  const std::vector<std::pair<std::string, double>> hyper = hyperparameters();
  const NamedTensors live = buffers();

  // The layout state() would produce.
  std::vector<Slot> slots{{"step", {}, DType::Int64}, {"lr", {}, DType::Float64}};
  for (const auto& [key, value] : hyper) slots.push_back({key, {}, DType::Float64});
  slots.push_back({"param_steps", {static_cast<int64_t>(params_.size())}, DType::Int64});
  for (const auto& [key, buffer] : live) slots.push_back({key, buffer.shape(), buffer.dtype()});

  std::unordered_map<std::string_view, const Slot*> by_name;
  for (const Slot& s : slots) by_name.emplace(s.name, &s);
  std::unordered_map<std::string_view, const Tensor*> given;
  for (const auto& [key, t] : state) {
    if (!by_name.count(key)) fail(op, ": unexpected key \"", key, "\"");
    if (!given.emplace(key, &t).second) fail(op, ": duplicate key \"", key, "\"");
  }
  for (const Slot& s : slots) {
    auto it = given.find(s.name);
    if (it == given.end()) fail(op, ": missing key \"", s.name, "\"");
    const Tensor& t = *it->second;
    if (!t.defined()) fail(op, ": \"", s.name, "\" is an undefined tensor");
    if (t.shape() != s.shape || t.dtype() != s.dtype)
      fail(op, ": \"", s.name, "\" is ", dtype_name(t.dtype()), " ", shape_str(t.shape()),
           ", expected ", dtype_name(s.dtype), " ", shape_str(s.shape));
  }

  // The values, checked before anything changes.
  auto tensor = [&](const std::string& key) -> const Tensor& { return *given.at(key); };
  const int64_t step = *tensor("step").data<int64_t>();
  if (step < 0) fail(op, ": \"step\" is negative: ", step);
  const double lr = *tensor("lr").data<double>();
  if (!(lr >= 0) || !std::isfinite(lr)) fail(op, ": \"lr\" must be finite and >= 0, got ", lr);
  for (const auto& [key, value] : hyper) {
    const double saved = *tensor(key).data<double>();
    if (saved != value)
      fail(op, ": \"", key, "\" is ", number(saved), " in the state but ", number(value),
           " in this optimizer; build the optimizer with the saved value");
  }
  const Tensor counts = tensor("param_steps").contiguous();
  const int64_t* c = counts.data<int64_t>();
  std::vector<int64_t> param_steps(c, c + params_.size());
  for (size_t i = 0; i < param_steps.size(); ++i) {
    if (param_steps[i] < 0 || param_steps[i] > step)
      fail(op, ": \"param_steps\" of parameter ", i, " is ", param_steps[i],
           ", outside [0, step = ", step, "]");
  }

  step_count_ = step;
  lr_ = lr;
  param_steps_ = std::move(param_steps);
  for (const auto& [key, buffer] : live) {
    Tensor dst = buffer;  // a handle onto the optimizer's own storage
    dst.copy_(tensor(key));
  }
}

// ---- SGD ------------------------------------------------------------------

SGD::SGD(std::vector<Variable> params, double lr, double momentum, bool nesterov,
         double weight_decay)
    : Optimizer("SGD", std::move(params), lr),
      momentum_(momentum),
      weight_decay_(weight_decay),
      nesterov_(nesterov) {
  check_non_negative("SGD", "momentum", momentum);
  check_non_negative("SGD", "weight_decay", weight_decay);
  if (nesterov && momentum == 0) fail("SGD: nesterov needs momentum > 0");
  if (momentum != 0) {
    for (const Variable& p : this->params()) momentum_buffers_.push_back(zeros_like(p.data()));
  }
}

std::vector<std::pair<std::string, double>> SGD::hyperparameters() const {
  return {
      {"momentum", momentum_}, {"nesterov", nesterov_ ? 1 : 0}, {"weight_decay", weight_decay_}};
}

NamedTensors SGD::buffers() const {
  NamedTensors out;
  for (size_t i = 0; i < momentum_buffers_.size(); ++i)
    out.emplace_back("momentum_buffer." + std::to_string(i), momentum_buffers_[i]);
  return out;
}

void SGD::update(size_t i, const Tensor& p, const Tensor& g, int64_t t) {
  visit_float(p.dtype(), "SGD.step", [&](auto zero) {
    using T = decltype(zero);
    const int64_t n = p.numel();
    T* pd = p.data<T>();
    const T* gd = g.data<T>();
    const T lr = static_cast<T>(this->lr()), mu = static_cast<T>(momentum_),
            wd = static_cast<T>(weight_decay_);
    const bool decay = weight_decay_ != 0;
    if (momentum_ == 0) {
      for (int64_t k = 0; k < n; ++k) {
        const T gk = decay ? gd[k] + wd * pd[k] : gd[k];
        pd[k] = pd[k] - lr * gk;
      }
      return;
    }
    T* b = momentum_buffers_[i].data<T>();
    const bool first = t == 1;  // the buffer starts as the gradient itself
    for (int64_t k = 0; k < n; ++k) {
      const T gk = decay ? gd[k] + wd * pd[k] : gd[k];
      const T bk = first ? gk : mu * b[k] + gk;
      b[k] = bk;
      const T dk = nesterov_ ? gk + mu * bk : bk;
      pd[k] = pd[k] - lr * dk;
    }
  });
}

// ---- Adam and AdamW -------------------------------------------------------

Adam::Adam(std::vector<Variable> params, double lr, double beta1, double beta2, double eps,
           double weight_decay)
    : Adam("Adam", std::move(params), lr, beta1, beta2, eps, weight_decay, false) {}

Adam::Adam(std::string name, std::vector<Variable> params, double lr, double beta1, double beta2,
           double eps, double weight_decay, bool decoupled)
    : Optimizer(name, std::move(params), lr),
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
    : Adam("AdamW", std::move(params), lr, beta1, beta2, eps, weight_decay, true) {}

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

void Adam::update(size_t i, const Tensor& p, const Tensor& g, int64_t t) {
  if (reference_ops()) return update_reference(i, p, g, t);
  // Scalars in double, as PyTorch computes them in Python, then rounded to T.
  const double step_size = lr() / (1 - std::pow(beta1_, static_cast<double>(t)));
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
    const T shrink = static_cast<T>(1 - lr() * weight_decay_);  // AdamW's decay factor
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
void Adam::update_reference(size_t i, const Tensor& p, const Tensor& g, int64_t t) {
  const double step_size = lr() / (1 - std::pow(beta1_, static_cast<double>(t)));
  const double bias_correction2_sqrt = std::sqrt(1 - std::pow(beta2_, static_cast<double>(t)));
  Tensor param = p, grad = g;
  if (weight_decay_ != 0 && decoupled_) param = mul(param, 1 - lr() * weight_decay_);  // AdamW
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

// ---- clip_grad_norm ---------------------------------------------------------

double clip_grad_norm(const std::vector<Variable>& params, double max_norm) {
  check_non_negative("clip_grad_norm", "max_norm", max_norm);
  // Each distinct parameter with a grad, and that grad contiguous (itself, or a copy for a
  // strided one that a user's set_grad put there).
  std::vector<std::pair<Variable, Tensor>> grads;
  std::unordered_set<const VariableImpl*> seen;
  double sum_sq = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    const Variable& p = params[i];
    if (!p.defined()) fail("clip_grad_norm: parameter ", i, " is undefined");
    if (!p.grad().defined() || !seen.insert(p.impl().get()).second) continue;
    Tensor g = p.grad().contiguous();
    visit_float(g.dtype(), "clip_grad_norm", [&](auto zero) {
      using T = decltype(zero);
      const T* gd = g.data<T>();
      // In lanes (tensor/kernels/lanes.h): one running total was a chain of
      // dependent additions, a few percent of a small model's training step.
      sum_sq += lane_sum(g.numel(), [&](int64_t k) {
        const double x = gd[k];
        return x * x;
      });
    });
    grads.emplace_back(p, std::move(g));
  }
  const double norm = std::sqrt(sum_sq);
  if (!std::isfinite(norm) || !(norm > max_norm)) return norm;

  const double coef = max_norm / (norm + 1e-6);
  for (auto& [p, g] : grads) {
    Tensor& grad = g;  // clang++ before 16 cannot capture a structured binding in a lambda
    visit_float(grad.dtype(), "clip_grad_norm", [&](auto zero) {
      using T = decltype(zero);
      const T c = static_cast<T>(coef);
      T* gd = grad.data<T>();
      for (int64_t k = 0, n = grad.numel(); k < n; ++k) gd[k] = gd[k] * c;
    });
    p.set_grad(g);  // a no-op unless g is the contiguous copy
  }
  return norm;
}

}  // namespace gradflow::nn
