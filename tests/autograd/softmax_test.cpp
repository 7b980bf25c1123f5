#include <cmath>

#include "check.h"

namespace gradflow {
namespace {
using namespace testing;
using Vars = std::vector<Variable>;

TEST(Softmax, GradcheckEveryAxisAndLayout) {
  for (Tensor input : {dense({2, 3, 4}), transposed({2, 3, 4}), strided({2, 3, 4})}) {
    for (int64_t axis : {0, 1, 2, -1}) {
      EXPECT_GRADCHECK([&](const Vars& v) { return softmax(v[0], axis); }, {input});
      EXPECT_GRADCHECK([&](const Vars& v) { return log_softmax(v[0], axis); }, {input});
    }
  }
  Tensor broadcast = dense({1, 5}).expand({3, 5});
  EXPECT_GRADCHECK([](const Vars& v) { return softmax(v[0] * v[0], -1); }, {broadcast});
}

TEST(Softmax, LogSoftmaxOfHugeEqualLogitsIsExact) {
  Variable x(from_vector({1e8, 1e8}), true);
  Variable y = log_softmax(x, 0);
  EXPECT_EQ(y.data().at({0}), static_cast<float>(std::log(0.5)));
  EXPECT_EQ(y.data().at({1}), static_cast<float>(std::log(0.5)));
  sum(y).backward();
  expect_near_vec(x.grad(), {0, 0});
}

TEST(Softmax, LogSoftmaxOfSpreadLogitsStaysFinite) {
  Variable x(from_vector({-431, 279, 427}), true);
  Variable y = log_softmax(x, 0);
  // Reference in double: x - max - log(sum(exp(x - max))).
  double lse = 427 + std::log(std::exp(-858.0) + std::exp(-148.0) + 1.0);
  expect_near_vec(y.data(), {-431 - lse, 279 - lse, 427 - lse}, 1e-3);
  Variable picked = select(y, 0, 1);  // the loss of class 1
  picked.backward();
  for (double g : x.grad().to_vector()) EXPECT_TRUE(std::isfinite(g));
  expect_near_vec(x.grad(), {0, 1, -1}, 1e-6);
}

TEST(Softmax, FullyMaskedRowGivesZerosAndFiniteGradient) {
  const double inf = INFINITY;
  Variable x(from_vector({-inf, -inf, -inf, 1, 2, 3}, {2, 3}, DType::Float64), true);
  Variable y = softmax(x, 1);
  expect_near_vec(y.data().select(0, 0), {0, 0, 0});
  sum(y * y).backward();
  for (double g : x.grad().to_vector()) EXPECT_TRUE(std::isfinite(g));
}

}  // namespace
}  // namespace gradflow
