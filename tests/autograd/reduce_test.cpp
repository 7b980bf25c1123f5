#include "check.h"

namespace gradflow {
namespace {
using namespace testing;
using Vars = std::vector<Variable>;

TEST(Reduce, Values) {
  Variable x(from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, DType::Float64));
  expect_near_vec(sum(x).data(), {21});
  expect_near_vec(sum(x, {0}).data(), {5, 7, 9});
  expect_near_vec(mean(x, {1}).data(), {2, 5});
  expect_near_vec(var(x, {1}).data(), {1, 1});
  expect_near_vec(var(x, {1}, false, 0).data(), {2.0 / 3, 2.0 / 3});
  MaxVariable m = max(x, 1);
  expect_near_vec(m.values.data(), {3, 6});
  expect_near_vec(m.indices, {2, 2});
  EXPECT_EQ(sum(x, {1}, true).shape(), (Shape{2, 1}));
}

TEST(Reduce, GradcheckEveryAxisAndLayout) {
  for (Tensor input : {dense({2, 3, 4}), transposed({2, 3, 4}), strided({2, 3, 4})}) {
    for (bool keepdim : {false, true}) {
      for (Axes axes : {Axes{}, Axes{0}, Axes{1}, Axes{-1}, Axes{0, 2}}) {
        EXPECT_GRADCHECK([&](const Vars& v) { return sum(v[0], axes, keepdim); }, {input});
        EXPECT_GRADCHECK([&](const Vars& v) { return mean(v[0], axes, keepdim); }, {input});
        EXPECT_GRADCHECK([&](const Vars& v) { return var(v[0], axes, keepdim); }, {input});
      }
      for (int64_t axis : {0, 1, -1})
        EXPECT_GRADCHECK([&](const Vars& v) { return max(v[0], axis, keepdim).values; }, {input});
    }
  }
}

TEST(Reduce, GradcheckBroadcastInput) {
  Tensor row = dense({1, 4}).expand({3, 4});
  EXPECT_GRADCHECK([](const Vars& v) { return sum(v[0] * v[0], {0}); }, {row});
  EXPECT_GRADCHECK([](const Vars& v) { return mean(v[0], {1}); }, {row});
}

TEST(Reduce, MaxGradientGoesToFirstMaximum) {
  Variable x(from_vector({1, 5, 5, 2}, {4}, DType::Float64), true);
  max(x, 0).values.backward();
  expect_near_vec(x.grad(), {0, 1, 0, 0});
}

TEST(Reduce, BadAxisThrows) {
  Variable x(zeros({2, 3}));
  EXPECT_THROW(sum(x, {2}), Error);
  EXPECT_THROW(max(x, -3), Error);
  EXPECT_THROW(sum(x, {0, 0}), Error);
}

}  // namespace
}  // namespace gradflow
