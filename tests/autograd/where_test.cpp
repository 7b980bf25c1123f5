#include "check.h"

namespace gradflow {
namespace {
using namespace testing;
using Vars = std::vector<Variable>;

TEST(Where, ValuesAndGradients) {
  Tensor cond = from_vector({1, 0, 1}, {3});
  Variable a(from_vector({1, 2, 3}), true), b(from_vector({10, 20, 30}), true);
  Variable y = where(cond, a, b);
  expect_near_vec(y.data(), {1, 20, 3});
  sum(y).backward();
  expect_near_vec(a.grad(), {1, 0, 1});
  expect_near_vec(b.grad(), {0, 1, 0});
}

TEST(Where, GradcheckWithBroadcast) {
  Tensor cond = from_vector({1, 0, 0, 1}, {4});
  EXPECT_GRADCHECK([&](const Vars& v) { return where(cond, v[0], v[1]); },
                   {dense({3, 4}), dense({1, 4})});
  EXPECT_GRADCHECK([&](const Vars& v) { return where(cond, v[0], v[1]); },
                   {transposed({3, 4}), dense({})});
}

TEST(MaskedFill, CausalMaskGradcheck) {
  // The decoder's mask: positions j > i filled before a softmax.
  Tensor mask = from_vector({0, 1, 1, 0, 0, 1, 0, 0, 0}, {3, 3});
  EXPECT_GRADCHECK([&](const Vars& v) { return softmax(masked_fill(v[0], mask, -1e9), -1); },
                   {dense({2, 3, 3})});
  EXPECT_GRADCHECK([&](const Vars& v) { return masked_fill(v[0], mask, 0); }, {transposed({3, 3})});
  Variable x(zeros({2, 3}));
  EXPECT_THROW(masked_fill(x, zeros({4}), 0), Error);
}

}  // namespace
}  // namespace gradflow
