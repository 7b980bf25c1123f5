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

namespace gradflow {
namespace {
using namespace testing;
using Vars = std::vector<Variable>;

// gelu_matmul recomputes gelu(h) in its backward: the same values and
// gradients as the two ops composed, and a gradient of its own that checks.
TEST(GeluMatmul, MatchesComposedAndGradchecks) {
  auto fused = [](const Vars& v) { return gelu_matmul(v[0], v[1]); };
  auto composed = [](const Vars& v) { return matmul(gelu(v[0]), v[1]); };
  EXPECT_GRADCHECK(fused, {dense({3, 4}), dense({4, 2})});
  EXPECT_GRADCHECK(fused, {dense({2, 3, 4}), transposed({4, 5})});
  EXPECT_GRADCHECK(fused, {transposed({2, 3, 4}), dense({4, 5})});
  for (DType dtype : {DType::Float32, DType::Float64}) {
    Variable h1(dense({2, 5, 6}).to(dtype), true), w1(dense({6, 3}).to(dtype), true);
    Variable h2(h1.data(), true), w2(w1.data(), true);
    Tensor g = dense({2, 5, 3}).to(dtype);
    Variable a = fused({h1, w1}), b = composed({h2, w2});
    expect_near_vec(a.data(), b.data().to_vector(), 1e-6);
    a.backward(g);
    b.backward(g);
    expect_near_vec(h1.grad(), h2.grad().to_vector(), 1e-6);
    expect_near_vec(w1.grad(), w2.grad().to_vector(), 1e-6);
  }
  // With one of the two gradients wanted, the backward takes another path.
  for (bool need_h : {true, false}) {
    Variable h1(dense({2, 5, 6}), need_h), w1(dense({6, 3}), !need_h);
    Variable h2(h1.data(), need_h), w2(w1.data(), !need_h);
    Tensor g = dense({2, 5, 3});
    fused({h1, w1}).backward(g);
    composed({h2, w2}).backward(g);
    const Variable& got = need_h ? h1 : w1;
    const Variable& want = need_h ? h2 : w2;
    expect_near_vec(got.grad(), want.grad().to_vector(), 1e-12);
  }
  Variable h(dense({2, 3}), true), w3(dense({2, 3, 4}), true);
  EXPECT_THROW(gelu_matmul(h, w3), Error);
}

}  // namespace
}  // namespace gradflow
