// Shared helpers for the autograd tests: float64 inputs in the three layouts
// every op is checked on, and a one-line gradient check assertion.
#pragma once

#include <gtest/gtest.h>

#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "tensor/ops.h"
#include "tests/tensor/threads_for.h"

namespace gradflow::testing {

inline Generator& test_gen() {
  static Generator gen(1234);
  return gen;
}

// Contiguous float64 normal values.
inline Tensor dense(const Shape& shape) { return randn(shape, test_gen(), DType::Float64); }

// Same shape, but a transposed view: strides run the other way.
inline Tensor transposed(const Shape& shape) {
  Shape flipped(shape.rbegin(), shape.rend());
  std::vector<int64_t> order;
  for (int64_t i = static_cast<int64_t>(shape.size()) - 1; i >= 0; --i) order.push_back(i);
  return dense(flipped).permute(order);
}

// Same shape, but every other element of a larger tensor's last axis.
inline Tensor strided(const Shape& shape) {
  Shape wide = shape;
  wide.back() *= 2;
  return dense(wide).slice(-1, 0, wide.back(), 2);
}

// Positive values away from zero, for log, sqrt, pow and division.
inline Tensor positive(const Shape& shape) {
  return rand(shape, test_gen(), DType::Float64, 0.5, 2.0);
}

// EXPECT_GRADCHECK(fn, {inputs...}): the arguments go to gradcheck as they
// are (a macro, so a failure reports the test's own line).
#define EXPECT_GRADCHECK(...)                                            \
  do {                                                                   \
    ::gradflow::GradcheckResult r_ = ::gradflow::gradcheck(__VA_ARGS__); \
    EXPECT_TRUE(r_.ok) << r_.message;                                    \
  } while (0)

inline void expect_near_vec(const Tensor& t, const std::vector<double>& expected,
                            double tol = 1e-6) {
  std::vector<double> v = t.to_vector();
  ASSERT_EQ(v.size(), expected.size());
  for (size_t i = 0; i < v.size(); ++i) EXPECT_NEAR(v[i], expected[i], tol) << "at " << i;
}

}  // namespace gradflow::testing
