// The optimizers' common part (parameter groups, the step, the state), SGD and gradient clipping.
// The update formulas are on the declarations in optim.h; here each is one loop over a parameter's
// n contiguous elements, in the parameter's dtype T. Adam and AdamW are in adam.cpp.
#include "nn/optim/optim.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "nn/optim/optim_checks.h"
#include "tensor/creation.h"
#include "tensor/kernels/lanes.h"

namespace gradflow::nn {

namespace {

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

Optimizer::Optimizer(std::string name, std::vector<ParamGroup> groups, double lr)
    : name_(std::move(name)) {
  if (groups.empty()) fail(name_, ": got no parameter groups");
  std::unordered_set<const VariableImpl*> seen;
  for (size_t g = 0; g < groups.size(); ++g) {
    // The group named only where there are groups: a plain list's messages read as they did.
    const bool named = groups.size() > 1;
    const std::string which = named ? " (group " + std::to_string(g) + ")" : "";
    if (groups[g].params.empty())
      fail(name_, ": got an empty parameter list", named ? " in group " + std::to_string(g) : "");
    check_non_negative(name_, named ? "lr_factor of group " + std::to_string(g) : "lr_factor",
                       groups[g].lr_factor);
    for (Variable& p : groups[g].params) {
      const size_t i = params_.size();
      if (!p.defined()) fail(name_, ": parameter ", i, which, " is undefined");
      if (!p.is_leaf())
        fail(name_, ": parameter ", i, which, " is not a leaf (it was made by '", p.grad_fn_name(),
             "'); pass the leaves it is computed from");
      if (p.dtype() == DType::Int64)
        fail(name_, ": parameter ", i, which,
             " is int64; only float32 and float64 can be optimized");
      if (!p.data().is_contiguous())
        fail(name_, ": parameter ", i, which, " of shape ", shape_str(p.shape()),
             " is not contiguous; pass a contiguous copy");
      if (!seen.insert(p.impl().get()).second)
        fail(name_, ": parameter ", i, which, " appears earlier in the list too");
      params_.push_back(std::move(p));
      group_of_.push_back(g);
    }
    lr_factors_.push_back(groups[g].lr_factor);
    group_sizes_.push_back(static_cast<int64_t>(groups[g].params.size()));
  }
  param_steps_.assign(params_.size(), 0);
  set_lr(lr);
}

double Optimizer::lr_factor(size_t group) const {
  if (group >= lr_factors_.size())
    fail(name_, ".lr_factor: group ", group, " out of range (", lr_factors_.size(), " groups)");
  return lr_factors_[group];
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
    // In double, as a second optimizer at lr * factor would be given it (lr * 1 is lr).
    const double lr = lr_ * lr_factors_[group_of_[i]];
    if (!grads[i].defined()) continue;
    // A new version: a graph that saved the old values refuses its backward.
    params_[i].data().storage()->bump_version();
    update(i, params_[i].data(), grads[i], ++param_steps_[i], lr);
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
  if (grouped()) {
    const int64_t groups = static_cast<int64_t>(lr_factors_.size());
    Tensor factors = Tensor::empty({groups}, DType::Float64);
    std::copy(lr_factors_.begin(), lr_factors_.end(), factors.data<double>());
    out.emplace_back("lr_factors", std::move(factors));
    out.emplace_back("group_sizes", int64_tensor(group_sizes_, {groups}));
  }
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
  const int64_t groups = static_cast<int64_t>(lr_factors_.size());
  if (grouped()) {
    slots.push_back({"lr_factors", {groups}, DType::Float64});
    slots.push_back({"group_sizes", {groups}, DType::Int64});
  }
  slots.push_back({"param_steps", {static_cast<int64_t>(params_.size())}, DType::Int64});
  for (const auto& [key, buffer] : live) slots.push_back({key, buffer.shape(), buffer.dtype()});

  std::unordered_map<std::string_view, const Slot*> by_name;
  for (const Slot& s : slots) by_name.emplace(s.name, &s);
  std::unordered_map<std::string_view, const Tensor*> given;
  // A state with groups into a plain optimizer, or the other way round: say which was built.
  const std::string groups_hint =
      grouped() ? "; the state is of an optimizer with one list at factor 1, this one has groups"
                : "; the state is of an optimizer with parameter groups, this one has one list "
                  "at factor 1";
  for (const auto& [key, t] : state) {
    if (!by_name.count(key))
      fail(op, ": unexpected key \"", key, "\"",
           key == "lr_factors" || key == "group_sizes" ? groups_hint : "");
    if (!given.emplace(key, &t).second) fail(op, ": duplicate key \"", key, "\"");
  }
  for (const Slot& s : slots) {
    auto it = given.find(s.name);
    if (it == given.end())
      fail(op, ": missing key \"", s.name, "\"",
           s.name == "lr_factors" || s.name == "group_sizes" ? groups_hint : "");
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
  if (grouped()) {
    const Tensor factors = tensor("lr_factors").contiguous();
    const Tensor sizes = tensor("group_sizes").contiguous();
    for (int64_t g = 0; g < groups; ++g) {
      const double saved = factors.data<double>()[g];
      if (saved != lr_factors_[g])
        fail(op, ": \"lr_factors\" of group ", g, " is ", number(saved), " in the state but ",
             number(lr_factors_[g]),
             " in this optimizer; build the optimizer with the saved groups");
      if (sizes.data<int64_t>()[g] != group_sizes_[g])
        fail(op, ": \"group_sizes\" of group ", g, " is ", sizes.data<int64_t>()[g],
             " in the state but ", group_sizes_[g],
             " in this optimizer; build the optimizer with the saved groups");
    }
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
    : SGD(std::vector<ParamGroup>{{std::move(params)}}, lr, momentum, nesterov, weight_decay) {}

SGD::SGD(std::vector<ParamGroup> groups, double lr, double momentum, bool nesterov,
         double weight_decay)
    : Optimizer("SGD", std::move(groups), lr),
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

void SGD::update(size_t i, const Tensor& p, const Tensor& g, int64_t t, double lr_now) {
  visit_float(p.dtype(), "SGD.step", [&](auto zero) {
    using T = decltype(zero);
    const int64_t n = p.numel();
    T* pd = p.data<T>();
    const T* gd = g.data<T>();
    const T lr = static_cast<T>(lr_now), mu = static_cast<T>(momentum_),
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
  // As PyTorch: a NaN norm makes every gradient NaN, an infinite one scales them by 0.
  if (norm <= max_norm) return norm;

  const double coef = max_norm / (norm + 1e-6);
  for (auto& [p, g] : grads) {
    Tensor& grad = g;  // clang++ before 16 cannot capture a structured binding in a lambda
    visit_float(grad.dtype(), "clip_grad_norm", [&](auto zero) {
      using T = decltype(zero);
      const T c = static_cast<T>(coef);
      T* gd = grad.data<T>();
      for (int64_t k = 0, n = grad.numel(); k < n; ++k) gd[k] = gd[k] * c;
    });
    grad.storage()->bump_version();  // written in place, as Tensor's in-place ops count
    p.set_grad(g);                   // a no-op unless g is the contiguous copy
  }
  return norm;
}

}  // namespace gradflow::nn
