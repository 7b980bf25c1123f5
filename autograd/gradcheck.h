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
#pragma once

#include <functional>
#include <string>
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

}  // namespace gradflow
