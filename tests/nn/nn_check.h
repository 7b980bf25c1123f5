// Shared helpers for the nn tests: the autograd test inputs (dense,
// transposed, strided, EXPECT_GRADCHECK) plus a finite-difference check of a
// module's own parameter gradients, and small comparisons.
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

// Every parameter of `m` (float64, contiguous) gets the gradient of
// L = sum(R * fn()) for a fixed random R, compared element by element with
// central differences of L taken by nudging the parameter's live data. A
// random projection of the Jacobian: one backward, two forwards per element.
inline void expect_parameter_grads(nn::Module& m, const std::function<Variable()>& fn,
                                   double eps = 1e-6, double atol = 1e-5, double rtol = 1e-3) {
  m.zero_grad();
  Variable out = fn();
  const Tensor r = dense(out.shape());
  sum(out * Variable(r)).backward();
  auto project = [&] {
    NoGradGuard no_grad;
    return sum(mul(fn().data(), r)).item();
  };
  for (auto& [name, p] : m.named_parameters()) {
    ASSERT_EQ(p.dtype(), DType::Float64) << name;
    ASSERT_TRUE(p.data().is_contiguous()) << name;
    ASSERT_TRUE(p.grad().defined()) << name << " got no gradient";
    const std::vector<double> analytic = p.grad().to_vector();
    double* x = p.data().data<double>();
    for (int64_t e = 0; e < p.numel(); ++e) {
      const double saved = x[e];
      x[e] = saved + eps;
      const double plus = project();
      x[e] = saved - eps;
      const double minus = project();
      x[e] = saved;
      const double numeric = (plus - minus) / (2 * eps);
      EXPECT_NEAR(analytic[e], numeric, atol + rtol * std::abs(numeric)) << name << "[" << e << "]";
    }
  }
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
