#include "check.h"

namespace gradflow {
namespace {
using namespace testing;
using Vars = std::vector<Variable>;

TEST(ShapeOps, GradcheckViews) {
  for (Tensor input : {dense({2, 3, 4}), transposed({2, 3, 4}), strided({2, 3, 4})}) {
    // Multiply after the view by fixed weights, so the gradient reaching the
    // view is not all ones and a misplaced element shows.
    auto check = [&](auto view) {
      Variable w(dense(view(Variable(input)).shape()));
      EXPECT_GRADCHECK([&](const Vars& v) { return view(v[0]) * w; }, {input});
    };
    check([](const Variable& x) { return reshape(x, {6, 4}); });
    check([](const Variable& x) { return reshape(x, {-1}); });
    check([](const Variable& x) { return transpose(x, 0, 2); });
    check([](const Variable& x) { return permute(x, {1, 2, 0}); });
    check([](const Variable& x) { return narrow(x, 1, 1, 2); });
    check([](const Variable& x) { return slice(x, 2, 0, 4, 2); });
    check([](const Variable& x) { return select(x, 1, -1); });
    check([](const Variable& x) { return unsqueeze(x, 1); });
    check([](const Variable& x) { return squeeze(unsqueeze(x, 3), 3); });
    check([](const Variable& x) { return expand(unsqueeze(x, 0), {2, 2, 3, 4}); });
    check([](const Variable& x) { return contiguous(transpose(x, 0, 1)); });
  }
}

TEST(ShapeOps, CatAndSplit) {
  Variable a(from_vector({1, 2}, {1, 2}), true), b(from_vector({3, 4, 5, 6}, {2, 2}), true);
  Variable c = cat({a, b}, 0);
  expect_near_vec(c.data(), {1, 2, 3, 4, 5, 6});
  sum(c * Variable(from_vector({1, 2, 3, 4, 5, 6}, {3, 2}))).backward();
  expect_near_vec(a.grad(), {1, 2});
  expect_near_vec(b.grad(), {3, 4, 5, 6});
  EXPECT_GRADCHECK(
      [](const Vars& v) {
        return cat({v[0], v[1], v[0]}, 1);
      },
      {dense({2, 3}), transposed({2, 2})});
  EXPECT_GRADCHECK(
      [](const Vars& v) {
        std::vector<Variable> parts = split(v[0], {1, 3}, 1);
        return parts[0] * sum(parts[1], {1}, true);
      },
      {strided({3, 4})});
  EXPECT_THROW(split(Variable(zeros({2, 3})), {1, 1}, 1), Error);
  EXPECT_THROW(cat({Variable(zeros({2, 3})), Variable(zeros({2, 4}))}, 0), Error);
}

}  // namespace
}  // namespace gradflow
