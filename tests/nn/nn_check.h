// Shared helpers for the nn tests: the autograd test inputs (dense,
// transposed, strided, EXPECT_GRADCHECK) plus a check of a module's own
// parameter gradients, and small comparisons.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "nn/module.h"
#include "tests/autograd/check.h"

namespace gradflow::testing {

using Vars = std::vector<Variable>;

// Every parameter of `m` (float64) against central differences, through the
// public check_parameter_grads (autograd/gradcheck.h).
inline void expect_parameter_grads(const nn::Module& m, const std::function<Variable()>& fn) {
  GradcheckResult r = check_parameter_grads(m.named_parameters(), fn);
  EXPECT_TRUE(r.ok) << r.message;
}

inline void expect_all_finite(const Tensor& t, const std::string& what) {
  for (double x : t.to_vector()) ASSERT_TRUE(std::isfinite(x)) << what << " has " << x;
}

inline void expect_all_equal(const Tensor& t, double value, const std::string& what) {
  for (double x : t.to_vector()) ASSERT_EQ(x, value) << what;
}

// Elementwise |a - b| <= tol over two equal-shaped tensors.
inline void expect_close(const Tensor& a, const Tensor& b, double tol,
                         const std::string& what = "") {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  std::vector<double> x = a.to_vector(), y = b.to_vector();
  for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(x[i], y[i], tol) << what << " at " << i;
}

}  // namespace gradflow::testing
