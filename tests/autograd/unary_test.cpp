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
      [](const Vars& v) { return exp(v[0]); }, [](const Vars& v) { return tanh(v[0]); },
      [](const Vars& v) { return gelu(v[0]); }, [](const Vars& v) { return pow(v[0], 2); },
      [](const Vars& v) { return pow(v[0], 3); }};
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

TEST(Unary, ReluGradcheckAwayFromKink) {
  // Finite differences are wrong within eps of 0, so keep inputs away from it.
  Tensor x = from_vector({-2, -0.5, 0.3, 1.7, -1, 2.5}, {2, 3}, DType::Float64);
  EXPECT_GRADCHECK([](const Vars& v) { return relu(v[0]); }, {x});
  EXPECT_GRADCHECK([](const Vars& v) { return relu(v[0]); }, {x.transpose(0, 1)});
}

}  // namespace
}  // namespace gradflow
