#include <cmath>

#include "check.h"

namespace gradflow {
namespace {
using namespace testing;
using Vars = std::vector<Variable>;

TEST(Unary, Values) {
  Variable x(from_vector({-1.5, 0.0, 2.0}, DType::Float64));
  expect_near_vec(exp(x).data(), {std::exp(-1.5), 1.0, std::exp(2.0)});
  expect_near_vec(tanh(x).data(), {std::tanh(-1.5), 0.0, std::tanh(2.0)});
  expect_near_vec(relu(x).data(), {0, 0, 2});
  // silu(x) = x / (1 + e^-x): negative below 0, below x above it.
  expect_near_vec(silu(x).data(), {-1.5 / (1 + std::exp(1.5)), 0, 2 / (1 + std::exp(-2.0))});
  expect_near_vec(gelu(x).data(), {-1.5 * 0.5 * (1 + std::erf(-1.5 / std::sqrt(2.0))), 0,
                                   2.0 * 0.5 * (1 + std::erf(2.0 / std::sqrt(2.0)))});
  Variable p(from_vector({0.25, 1.0, 4.0}, DType::Float64));
  expect_near_vec(log(p).data(), {std::log(0.25), 0, std::log(4.0)});
  expect_near_vec(sqrt(p).data(), {0.5, 1, 2});
  expect_near_vec(pow(p, 3).data(), {0.015625, 1, 64});
  expect_near_vec(pow(p, -0.5).data(), {2, 1, 0.5});
}

TEST(Unary, GradcheckAllLayouts) {
  std::vector<GradcheckFn> any_sign = {
      [](const Vars& v) { return exp(v[0]); },    [](const Vars& v) { return tanh(v[0]); },
      [](const Vars& v) { return gelu(v[0]); },   [](const Vars& v) { return silu(v[0]); },
      [](const Vars& v) { return pow(v[0], 2); }, [](const Vars& v) { return pow(v[0], 3); }};
  for (const GradcheckFn& op : any_sign) {
    EXPECT_GRADCHECK(op, {dense({3, 4})});
    EXPECT_GRADCHECK(op, {transposed({3, 4})});
    EXPECT_GRADCHECK(op, {strided({3, 4})});
    EXPECT_GRADCHECK(op, {dense({5}).narrow(0, 1, 1).expand({2, 3})});  // broadcast input
  }
  std::vector<GradcheckFn> positive_only = {
      [](const Vars& v) { return log(v[0]); }, [](const Vars& v) { return sqrt(v[0]); },
      [](const Vars& v) { return pow(v[0], -1.5); }, [](const Vars& v) { return pow(v[0], 0.5); }};
  for (const GradcheckFn& op : positive_only) {
    EXPECT_GRADCHECK(op, {positive({3, 4})});
    EXPECT_GRADCHECK(op, {positive({4, 3}).transpose(0, 1)});
  }
}

// Far from 0, e^-x overflows (float32 below -88): silu and its derivative
// are then 0, not NaN, and x and 1 far above 0.
TEST(Unary, SiluIsFiniteAtTheExtremes) {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    Variable x(from_vector({-1000, -100, 100, 1000}, dtype), true);
    Variable y = silu(x);
    sum(y).backward();
    const std::vector<double> v = y.data().to_vector(), d = x.grad().to_vector();
    EXPECT_EQ(v[0], 0);
    EXPECT_NEAR(v[1], -100 * std::exp(-100.0), 1e-40);  // float32: 0, double: -3.7e-42
    EXPECT_EQ(v[2], 100);
    EXPECT_EQ(v[3], 1000);
    // d/dx = s (1 + x (1 - s)): 0 far below 0; 1 far above it.
    EXPECT_EQ(d[0], 0);
    EXPECT_NEAR(d[1], -99 * std::exp(-100.0), 1e-40);
    EXPECT_EQ(d[2], 1);
    EXPECT_EQ(d[3], 1);
  }
  // The derivative by hand at 1.5: s = 1 / (1 + e^-1.5), s (1 + 1.5 (1 - s)).
  Variable x(from_vector({1.5}, DType::Float64), true);
  sum(silu(x)).backward();
  const double s = 1 / (1 + std::exp(-1.5));
  EXPECT_NEAR(x.grad().to_vector()[0], s * (1 + 1.5 * (1 - s)), 1e-15);
}

TEST(Unary, ReluGradcheckAwayFromKink) {
  // Finite differences are wrong within eps of 0, so keep inputs away from it.
  Tensor x = from_vector({-2, -0.5, 0.3, 1.7, -1, 2.5}, {2, 3}, DType::Float64);
  EXPECT_GRADCHECK([](const Vars& v) { return relu(v[0]); }, {x});
  EXPECT_GRADCHECK([](const Vars& v) { return relu(v[0]); }, {x.transpose(0, 1)});
}

}  // namespace
}  // namespace gradflow
