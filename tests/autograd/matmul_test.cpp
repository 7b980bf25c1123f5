#include "check.h"

namespace gradflow {
namespace {
using namespace testing;
using Vars = std::vector<Variable>;
auto mm = [](const Vars& v) { return matmul(v[0], v[1]); };

TEST(Matmul, Value) {
  Variable a(from_vector({1, 2, 3, 4, 5, 6}, {2, 3}));
  Variable b(from_vector({1, 0, 0, 1, 1, 1}, {3, 2}));
  expect_near_vec(matmul(a, b).data(), {4, 5, 10, 11});
}

TEST(Matmul, Gradcheck2D) {
  EXPECT_GRADCHECK(mm, {dense({3, 4}), dense({4, 2})});
  EXPECT_GRADCHECK(mm, {transposed({3, 4}), transposed({4, 2})});
  EXPECT_GRADCHECK(mm, {strided({3, 4}), strided({4, 2})});
}

TEST(Matmul, GradcheckBatchedAndBroadcast) {
  EXPECT_GRADCHECK(mm, {dense({2, 3, 4}), dense({2, 4, 5})});
  EXPECT_GRADCHECK(mm, {dense({2, 3, 4}), dense({4, 5})});        // Linear on a stack
  EXPECT_GRADCHECK(mm, {transposed({2, 3, 4}), dense({4, 5})});   // non-contiguous stack
  EXPECT_GRADCHECK(mm, {dense({1, 3, 4}), dense({2, 4, 5})});     // broadcast batch
  EXPECT_GRADCHECK(mm, {dense({2, 1, 3, 4}), dense({3, 4, 2})});  // (2,3,3,2)
  // Attention shape: q (B, H, T, D) @ k^T as a transposed view.
  EXPECT_GRADCHECK([](const Vars& v) { return matmul(v[0], transpose(v[1], -1, -2)); },
                   {dense({2, 2, 3, 4}), dense({2, 2, 5, 4})});
}

TEST(Matmul, InnerDimensionMismatchMessage) {
  Variable a(zeros({2, 3})), b(zeros({4, 5}));
  try {
    matmul(a, b);
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "matmul: inner dimensions differ: (2, 3) @ (4, 5)");
  }
}

}  // namespace
}  // namespace gradflow
