// The gradient checker: compares backward against central differences in
// float64, entry by entry of the full Jacobian, with PyTorch gradcheck's
// defaults (step 1e-6, pass when |numerical - analytical| <= atol + rtol |numerical|).
//
// Any contributor can check a new op in one line:
//   auto r = gradcheck([](const std::vector<Variable>& v) { return my_op(v[0], v[1]); },
//                      {randn({3, 4}, gen, DType::Float64), randn({4}, gen, DType::Float64)});
//   EXPECT_TRUE(r.ok) << r.message;
// Inputs may be non-contiguous views (a transposed or sliced tensor is
// checked as it is); an input with a broadcast (stride 0) axis is first
// copied, since one stored number there stands for several elements.
//
// gradcheck sees only the gradients of its inputs: a layer's wrong weight or
// bias gradient leaves the input's gradient as it is (dx is computed from
// the weights, not from dW). check_parameter_grads checks those:
//   auto r = check_parameter_grads(layer.named_parameters(),
//                                  [&] { return layer.forward(x); });
//   EXPECT_TRUE(r.ok) << r.message;
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "autograd/variable.h"

namespace gradflow {

struct GradcheckOptions {
  double eps = 1e-6;
  double atol = 1e-5;
  double rtol = 1e-3;
};

struct GradcheckResult {
  bool ok = true;
  std::string message;  // the first mismatch, when !ok
  double max_error = 0;
};

using GradcheckFn = std::function<Variable(const std::vector<Variable>&)>;

GradcheckResult gradcheck(const GradcheckFn& fn, const std::vector<Tensor>& inputs,
                          GradcheckOptions options = {});

// The gradient backward gives each parameter (float64 leaves that fn reads,
// such as a module's parameters()) against central differences, nudging
// each element of the parameter's live data in turn. With out = fn() it
// checks the gradient of L = sum(R * out) for a fixed random R of out's shape
// (a random projection of the Jacobian): one backward, then two forwards per
// element. The parameters' .grad is overwritten. A parameter that gets no
// gradient fails the check (it is not used, or the graph to it is cut).
GradcheckResult check_parameter_grads(const std::vector<std::pair<std::string, Variable>>& named,
                                      const std::function<Variable()>& fn,
                                      GradcheckOptions options = {});
// The same, naming the parameters "parameter 0", "parameter 1", ...
GradcheckResult check_parameter_grads(const std::vector<Variable>& params,
                                      const std::function<Variable()>& fn,
                                      GradcheckOptions options = {});

}  // namespace gradflow
