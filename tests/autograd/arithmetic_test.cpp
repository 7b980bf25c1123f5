#include "check.h"

namespace gradflow {
namespace {
using namespace testing;
using Vars = std::vector<Variable>;

TEST(Arithmetic, Values) {
  Variable a(from_vector({1, 2, 3}, {3}));
  Variable b(from_vector({4, 5, 6}, {3}));
  expect_near_vec((a + b).data(), {5, 7, 9});
  expect_near_vec((a - b).data(), {-3, -3, -3});
  expect_near_vec((a * b).data(), {4, 10, 18});
  expect_near_vec((a / b).data(), {0.25, 0.4, 0.5});
  expect_near_vec((-a).data(), {-1, -2, -3});
  expect_near_vec((2.0 - a).data(), {1, 0, -1});
  expect_near_vec((6.0 / a).data(), {6, 3, 2});
  expect_near_vec((a * 3.0 + 1.0).data(), {4, 7, 10});
}

TEST(Arithmetic, BinaryGradcheckAllLayouts) {
  auto ops = std::vector<GradcheckFn>{
      [](const Vars& v) { return v[0] + v[1]; }, [](const Vars& v) { return v[0] - v[1]; },
      [](const Vars& v) { return v[0] * v[1]; }, [](const Vars& v) { return v[0] / v[1]; }};
  for (const GradcheckFn& op : ops) {
    EXPECT_GRADCHECK(op, {dense({3, 4}), positive({3, 4})});
    EXPECT_GRADCHECK(
        op, {transposed({3, 4}), positive({3, 4}).transpose(0, 1).contiguous().transpose(0, 1)});
    EXPECT_GRADCHECK(op, {strided({3, 4}), positive({3, 4})});
  }
}

// The broadcast shapes autograd engines get wrong: each gradient must come
// back summed to its own input's shape.
TEST(Arithmetic, BroadcastBackwardShapes) {
  struct Case {
    Shape a, b;
  };
  for (Case c : {Case{{3, 4}, {1, 4}}, Case{{4, 1}, {1, 4}}, Case{{}, {2}},
                 Case{{2, 1, 3, 2}, {2, 1, 3, 1}}, Case{{3, 4}, {4}}}) {
    for (auto op :
         {+[](const Vars& v) { return v[0] * v[1]; }, +[](const Vars& v) { return v[0] + v[1]; },
          +[](const Vars& v) { return v[0] / v[1]; }, +[](const Vars& v) { return v[0] - v[1]; }}) {
      EXPECT_GRADCHECK(op, {dense(c.a), positive(c.b)});
      Variable a(dense(c.a), true), b(positive(c.b), true);
      sum(op({a, b})).backward();
      // (A wrong shape throws in backward, naming the op and both shapes.)
      EXPECT_EQ(a.grad().shape(), c.a)
          << "dL/dx has x's shape: summed over what x was broadcast along";
      EXPECT_EQ(b.grad().shape(), c.b)
          << "dL/dy has y's shape: summed over what y was broadcast along";
    }
  }
}

TEST(Arithmetic, ScalarFormsGradcheck) {
  EXPECT_GRADCHECK([](const Vars& v) { return v[0] + 2.0; }, {strided({2, 3})});
  EXPECT_GRADCHECK([](const Vars& v) { return v[0] - 2.0; }, {dense({2, 3})});
  EXPECT_GRADCHECK([](const Vars& v) { return 2.0 - v[0]; }, {dense({2, 3})});
  EXPECT_GRADCHECK([](const Vars& v) { return v[0] * 3.0; }, {transposed({2, 3})});
  EXPECT_GRADCHECK([](const Vars& v) { return v[0] / 3.0; }, {dense({2, 3})});
  EXPECT_GRADCHECK([](const Vars& v) { return 3.0 / v[0]; }, {positive({2, 3})});
  EXPECT_GRADCHECK([](const Vars& v) { return -v[0]; }, {strided({2, 3})});
}

TEST(Arithmetic, MismatchedShapesAndDtypesThrow) {
  Variable a(zeros({2, 3})), b(zeros({4, 5})), c(zeros({2, 3}, DType::Float64));
  try {
    add(a, b);
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "add: shapes cannot be broadcast: (2, 3) and (4, 5)");
  }
  EXPECT_THROW(mul(a, c), Error);
}

}  // namespace
}  // namespace gradflow
