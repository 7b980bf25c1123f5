#include "autograd/gradcheck.h"

#include <cmath>
#include <sstream>

#include "autograd/ops.h"
#include "tensor/creation.h"
#include "tensor/elementwise.h"
#include "tensor/random.h"
#include "tensor/reduce.h"

namespace gradflow {

namespace {

bool has_broadcast_axis(const Tensor& t) {
  for (int64_t i = 0; i < t.ndim(); ++i)
    if (t.strides()[i] == 0 && t.shape()[i] > 1) return true;
  return false;
}

// Storage offset of the i-th element in row-major order of a view.
int64_t offset_of(const Tensor& t, int64_t flat) {
  int64_t offset = 0;
  for (int64_t axis = t.ndim() - 1; axis >= 0; --axis) {
    offset += (flat % t.shape()[axis]) * t.strides()[axis];
    flat /= t.shape()[axis];
  }
  return offset;
}

std::vector<double> evaluate(const GradcheckFn& fn, const std::vector<Tensor>& inputs) {
  NoGradGuard no_grad;
  std::vector<Variable> vars;
  for (const Tensor& t : inputs) vars.emplace_back(t);
  return fn(vars).data().to_vector();
}

}  // namespace

GradcheckResult gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& given,
                          GradcheckOptions options) {
  std::vector<Tensor> inputs;
  for (const Tensor& t : given) {
    if (t.dtype() != DType::Float64)
      fail("gradcheck: inputs must be float64 for a meaningful check, got ", dtype_name(t.dtype()));
    inputs.push_back(has_broadcast_axis(t) ? t.clone() : t);
  }

  // Analytical Jacobian, one row per output element: backward of a one-hot.
  std::vector<Variable> vars;
  for (const Tensor& t : inputs) vars.emplace_back(t, true);
  Variable out = fn(vars);
  if (!out.requires_grad()) fail("gradcheck: the output does not depend on any input");
  const int64_t m = out.numel();
  std::vector<std::vector<std::vector<double>>> analytical(inputs.size());  // [input][out][in]
  for (int64_t j = 0; j < m; ++j) {
    for (Variable& v : vars) v.zero_grad();
    Tensor seed = zeros(out.shape(), DType::Float64);
    seed.data<double>()[j] = 1;
    out.backward(seed, /*retain_graph=*/true);
    for (size_t i = 0; i < vars.size(); ++i)
      analytical[i].push_back(vars[i].grad().defined() ? vars[i].grad().to_vector()
                                                       : std::vector<double>(inputs[i].numel(), 0));
  }

  // Numerical Jacobian, one column per input element: central differences.
  GradcheckResult result;
  for (size_t i = 0; i < inputs.size(); ++i) {
    double* base = inputs[i].data<double>();
    for (int64_t e = 0; e < inputs[i].numel(); ++e) {
      double& x = base[offset_of(inputs[i], e)];
      const double saved = x;
      x = saved + options.eps;
      std::vector<double> plus = evaluate(fn, inputs);
      x = saved - options.eps;
      std::vector<double> minus = evaluate(fn, inputs);
      x = saved;
      for (int64_t j = 0; j < m; ++j) {
        double numerical = (plus[j] - minus[j]) / (2 * options.eps);
        double analytic = analytical[i][j][e];
        double error = std::abs(numerical - analytic);
        result.max_error = std::max(result.max_error, error);
        if (result.ok && !(error <= options.atol + options.rtol * std::abs(numerical))) {
          std::ostringstream msg;
          msg << "gradcheck: d(output[" << j << "])/d(input " << i << "[" << e << "]) of '"
              << out.grad_fn_name() << "': analytical " << analytic << " vs numerical " << numerical
              << " (input shape " << shape_str(inputs[i].shape()) << ")";
          result.ok = false;
          result.message = msg.str();
        }
      }
    }
  }
  return result;
}

GradcheckResult check_parameter_grads(const std::vector<std::pair<std::string, Variable>>& named,
                                      const std::function<Variable()>& fn,
                                      GradcheckOptions options) {
  for (const auto& [name, p] : named) {
    if (!p.defined() || p.dtype() != DType::Float64)
      fail("check_parameter_grads: ", name, " must be float64 for a meaningful check");
    if (!p.is_leaf()) fail("check_parameter_grads: ", name, " is not a leaf");
  }
  for (const auto& [name, p] : named) Variable(p).zero_grad();
  // A fixed projection, so the check is the same every run.
  Generator gen(0x9e3779b97f4a7c15ull);
  Variable out = fn();
  const Tensor r = randn(out.shape(), gen, DType::Float64);
  sum(mul(out, Variable(r))).backward();
  auto project = [&] {
    NoGradGuard no_grad;
    return sum(mul(fn().data(), r)).item();
  };
  GradcheckResult result;
  for (const auto& [name, p] : named) {
    if (!p.grad().defined()) {
      result.ok = false;
      result.message = "check_parameter_grads: " + name + " got no gradient";
      return result;
    }
    const std::vector<double> analytic = p.grad().to_vector();
    Tensor data = p.data();
    double* base = data.data<double>();
    for (int64_t e = 0; e < p.numel(); ++e) {
      double& x = base[offset_of(data, e)];
      const double saved = x;
      x = saved + options.eps;
      const double plus = project();
      x = saved - options.eps;
      const double minus = project();
      x = saved;
      const double numerical = (plus - minus) / (2 * options.eps);
      const double error = std::abs(numerical - analytic[e]);
      result.max_error = std::max(result.max_error, error);
      if (result.ok && !(error <= options.atol + options.rtol * std::abs(numerical))) {
        std::ostringstream msg;
        msg << "check_parameter_grads: d(L)/d(" << name << "[" << e << "]): analytical "
            << analytic[e] << " vs numerical " << numerical << " (shape " << shape_str(p.shape())
            << ")";
        result.ok = false;
        result.message = msg.str();
      }
    }
  }
  return result;
}

GradcheckResult check_parameter_grads(const std::vector<Variable>& params,
                                      const std::function<Variable()>& fn,
                                      GradcheckOptions options) {
  std::vector<std::pair<std::string, Variable>> named;
  for (size_t i = 0; i < params.size(); ++i)
    named.emplace_back("parameter " + std::to_string(i), params[i]);
  return check_parameter_grads(named, fn, options);
}

}  // namespace gradflow
