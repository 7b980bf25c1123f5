#include <string>

#include "check.h"

namespace gradflow {
namespace {
using namespace testing;
using Vars = std::vector<Variable>;

auto lin = [](const Vars& v) { return linear(v[0], v[1], v[2]); };
auto lin_no_bias = [](const Vars& v) { return linear(v[0], v[1], Variable()); };
auto gelu_lin = [](const Vars& v) { return gelu_linear(v[0], v[1], v[2]); };

TEST(Linear, Value) {
  Variable x(from_vector({1, 2, 3, 4, 5, 6}, {2, 3}));
  Variable w(from_vector({1, 0, 0, 1, 1, 1}, {2, 3}));  // (N=2, K=3)
  Variable b(from_vector({10, 20}, {2}));
  // rows: (1,2,3) -> (1, 6) + (10, 20); (4,5,6) -> (4, 15) + (10, 20)
  expect_near_vec(linear(x, w, b).data(), {11, 26, 14, 35});
  expect_near_vec(linear(x, w, Variable()).data(), {1, 6, 4, 15});
}

TEST(Linear, Gradcheck) {
  EXPECT_GRADCHECK(lin, {dense({3, 4}), dense({2, 4}), dense({2})});
  EXPECT_GRADCHECK(lin, {dense({2, 3, 4}), dense({5, 4}), dense({5})});  // a stack
  EXPECT_GRADCHECK(lin, {transposed({2, 3, 4}), transposed({5, 4}), strided({5})});
  EXPECT_GRADCHECK(lin, {strided({3, 4}), strided({2, 4}), dense({2})});
  EXPECT_GRADCHECK(lin, {dense({4}), dense({3, 4}), dense({3})});  // a single vector
  EXPECT_GRADCHECK(lin_no_bias, {dense({2, 3, 4}), dense({5, 4})});
  // Large enough for GEMM's own path and a cut into row blocks over threads.
  for (int threads : {1, 2}) {
    ThreadsFor guard(threads);
    EXPECT_GRADCHECK(lin, {dense({200, 40}), dense({8, 40}), dense({8})});
  }
}

// The same values and gradients as its reference, matmul and add.
TEST(Linear, MatchesItsReference) {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    for (const Shape& xs : {Shape{2, 5, 6}, Shape{300, 40}}) {
      Shape ws{7, xs.back()};
      Variable x1(dense(xs).to(dtype), true), w1(dense(ws).to(dtype), true),
          b1(dense({7}).to(dtype), true);
      Variable x2(x1.data(), true), w2(w1.data(), true), b2(b1.data(), true);
      Variable fused = linear(x1, w1, b1);
      Variable composed = linear_reference(x2, w2, b2);
      const double tol = dtype == DType::Float32 ? 1e-4 : 1e-12;
      expect_near_vec(fused.data(), composed.data().to_vector(), tol);
      Shape gs = xs;
      gs.back() = 7;
      Tensor g = dense(gs).to(dtype);
      fused.backward(g);
      composed.backward(g);
      expect_near_vec(x1.grad(), x2.grad().to_vector(), tol);
      expect_near_vec(w1.grad(), w2.grad().to_vector(), tol);
      expect_near_vec(b1.grad(), b2.grad().to_vector(), tol);
    }
  }
}

TEST(Linear, SkipsGradientsNotAskedFor) {
  Variable x(dense({3, 4}), true), w(dense({2, 4})), b(dense({2}));
  linear(x, w, b).backward(dense({3, 2}));
  EXPECT_TRUE(x.grad().defined());
  EXPECT_FALSE(w.grad().defined());
  EXPECT_FALSE(b.grad().defined());
}

TEST(Linear, ShapeErrorsNameTheOp) {
  Variable x(zeros({2, 3})), w(zeros({4, 5})), b(zeros({4}));
  try {
    linear(x, w, b);
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "linear: expected x (..., K) and weight (N, K), got x (2, 3) and weight "
                 "(4, 5)");
  }
  Variable w3(zeros({4, 3}));
  EXPECT_THROW(linear(x, w3, Variable(zeros({5}))), Error);
  EXPECT_THROW(linear(x, w3, Variable(zeros({4}, DType::Float64))), Error);
  EXPECT_THROW(gelu_linear(x, w, b), Error);
  // The references check the same, and name themselves.
  EXPECT_THROW(linear_reference(x, w, b), Error);
  EXPECT_THROW(linear_reference(x, w3, Variable(zeros({5}))), Error);
  EXPECT_THROW(gelu_linear_reference(x, w3, Variable(zeros({4}, DType::Float64))), Error);
  try {
    gelu_linear_reference(x, w, b);
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("gelu_linear_reference: expected x (..., K)", 0), 0u)
        << e.what();
  }
}

// gelu_linear recomputes gelu(h) in its backward: the same values and
// gradients as its reference (gelu, then linear's reference), and a gradient
// of its own that checks.
TEST(GeluLinear, MatchesComposedAndGradchecks) {
  EXPECT_GRADCHECK(gelu_lin, {dense({3, 4}), dense({2, 4}), dense({2})});
  EXPECT_GRADCHECK(gelu_lin, {dense({2, 3, 4}), transposed({5, 4}), dense({5})});
  EXPECT_GRADCHECK(gelu_lin, {transposed({2, 3, 4}), dense({5, 4}), strided({5})});
  EXPECT_GRADCHECK([](const Vars& v) { return gelu_linear(v[0], v[1], Variable()); },
                   {strided({3, 4}), dense({2, 4})});
  auto composed = [](const Vars& v) { return gelu_linear_reference(v[0], v[1], v[2]); };
  for (DType dtype : {DType::Float32, DType::Float64}) {
    Variable h1(dense({2, 5, 6}).to(dtype), true), w1(dense({3, 6}).to(dtype), true),
        b1(dense({3}).to(dtype), true);
    Variable h2(h1.data(), true), w2(w1.data(), true), b2(b1.data(), true);
    Tensor g = dense({2, 5, 3}).to(dtype);
    Variable a = gelu_lin({h1, w1, b1}), b = composed({h2, w2, b2});
    expect_near_vec(a.data(), b.data().to_vector(), 1e-6);
    a.backward(g);
    b.backward(g);
    expect_near_vec(h1.grad(), h2.grad().to_vector(), 1e-6);
    expect_near_vec(w1.grad(), w2.grad().to_vector(), 1e-6);
    expect_near_vec(b1.grad(), b2.grad().to_vector(), 1e-6);
  }
  // With one of h and the weight wanting a gradient, the backward takes
  // another path (the one-pass kernel serves only both at once).
  for (bool need_h : {true, false}) {
    Variable h1(dense({2, 5, 6}), need_h), w1(dense({3, 6}), !need_h), b1(dense({3}), true);
    Variable h2(h1.data(), need_h), w2(w1.data(), !need_h), b2(b1.data(), true);
    Tensor g = dense({2, 5, 3});
    gelu_lin({h1, w1, b1}).backward(g);
    composed({h2, w2, b2}).backward(g);
    const Variable& got = need_h ? h1 : w1;
    const Variable& want = need_h ? h2 : w2;
    expect_near_vec(got.grad(), want.grad().to_vector(), 1e-12);
    expect_near_vec(b1.grad(), b2.grad().to_vector(), 1e-12);
  }
}

}  // namespace
}  // namespace gradflow
