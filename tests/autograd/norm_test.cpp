// The fused layer_norm against its composed reference, layer_norm_reference:
// values and gradients in float32 and float64 on 2-d, 3-d and non-contiguous
// inputs, with and without weight and bias; gradient checks of both;
// numerically hard rows; the same bits at 1, 2 and 3 threads.
#include <cmath>
#include <functional>
#include <string>

#include "check.h"

namespace gradflow {
namespace {
using namespace testing;
using Vars = std::vector<Variable>;

using NormFn = std::function<Variable(const Variable&, const Variable&, const Variable&, double)>;

// The output and the gradients of sum(norm(x, w, b) * r) on fresh leaves
// (w, b undefined when not given).
struct Outcome {
  Tensor y, dx, dw, db;
};
Outcome outcome(const NormFn& norm, const Tensor& x, const Tensor& w, const Tensor& b,
                const Tensor& r) {
  Variable vx(x, true), vw = w.defined() ? Variable(w, true) : Variable();
  Variable vb = b.defined() ? Variable(b, true) : Variable();
  Variable y = norm(vx, vw, vb, 1e-5);
  sum(y * Variable(r)).backward();
  return {y.data(), vx.grad(), w.defined() ? vw.grad() : Tensor(),
          b.defined() ? vb.grad() : Tensor()};
}

// |a - b| <= tol (1 + |b|) elementwise: relative for large values, absolute near 0.
void expect_close(const Tensor& a, const Tensor& b, double tol, const std::string& what) {
  ASSERT_EQ(a.defined(), b.defined()) << what;
  if (!a.defined()) return;
  ASSERT_EQ(a.shape(), b.shape()) << what;
  std::vector<double> x = a.to_vector(), y = b.to_vector();
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_NEAR(x[i], y[i], tol * (1 + std::abs(y[i]))) << what << " at " << i;
}

void expect_runs_close(const Outcome& fused, const Outcome& composed, double tol,
                       const std::string& what) {
  expect_close(fused.y, composed.y, tol, what + " y");
  expect_close(fused.dx, composed.dx, tol, what + " dx");
  expect_close(fused.dw, composed.dw, tol, what + " dweight");
  expect_close(fused.db, composed.db, tol, what + " dbias");
}

// x in `dtype`, contiguous or a view whose strides are not row-major.
std::vector<std::pair<std::string, Tensor>> inputs(DType dtype) {
  return {{"(4, 6)", dense({4, 6}).to(dtype)},
          {"(2, 3, 5)", dense({2, 3, 5}).to(dtype)},
          {"(3, 300)", dense({3, 300}).to(dtype)},
          {"permuted (3, 4, 7)", dense({7, 4, 3}).to(dtype).permute({2, 1, 0})},
          {"every other (5, 33)", dense({5, 66}).to(dtype).slice(-1, 0, 66, 2)}};
}

TEST(LayerNormFused, MatchesComposedValuesAndGradients) {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    const double tol = dtype == DType::Float32 ? 2e-5 : 1e-12;
    for (const auto& [name, x] : inputs(dtype)) {
      const int64_t c = x.shape().back();
      Tensor w = dense({c}).to(dtype), b = dense({c}).to(dtype), r = dense(x.shape()).to(dtype);
      for (bool with_w : {true, false})
        for (bool with_b : {true, false}) {
          const Tensor pw = with_w ? w : Tensor(), pb = with_b ? b : Tensor();
          const std::string what = std::string(dtype_name(dtype)) + " " + name +
                                   (with_w ? " w" : "") + (with_b ? " b" : "");
          expect_runs_close(outcome(layer_norm, x, pw, pb, r),
                            outcome(layer_norm_reference, x, pw, pb, r), tol, what);
        }
    }
  }
}

TEST(LayerNormFused, GradcheckInputWeightAndBias) {
  auto fn = [](const Vars& v) { return layer_norm(v[0], v[1], v[2], 1e-5); };
  for (const Tensor& x : {dense({2, 3, 5}), transposed({2, 3, 5}), strided({2, 3, 5})})
    EXPECT_GRADCHECK(fn, {x, dense({5}), dense({5})});
  EXPECT_GRADCHECK([](const Vars& v) { return layer_norm(v[0], v[1], Variable(), 1e-5); },
                   {dense({4, 3}), dense({3})});
  EXPECT_GRADCHECK([](const Vars& v) { return layer_norm(v[0], Variable(), v[1], 1e-5); },
                   {dense({4, 3}), dense({3})});
  EXPECT_GRADCHECK([](const Vars& v) { return layer_norm(v[0], Variable(), Variable(), 1e-5); },
                   {dense({2, 6})});
  // Weight and bias that are views with a stride of 2.
  EXPECT_GRADCHECK(fn, {dense({3, 4}), strided({4}), strided({4})});
}

TEST(LayerNormReference, GradcheckInputWeightAndBias) {
  auto fn = [](const Vars& v) { return layer_norm_reference(v[0], v[1], v[2], 1e-5); };
  for (const Tensor& x : {dense({2, 3, 5}), transposed({2, 3, 5}), strided({2, 3, 5})})
    EXPECT_GRADCHECK(fn, {x, dense({5}), dense({5})});
  EXPECT_GRADCHECK(
      [](const Vars& v) { return layer_norm_reference(v[0], Variable(), Variable(), 1e-5); },
      {dense({2, 6})});
  EXPECT_GRADCHECK(fn, {dense({3, 4}), strided({4}), strided({4})});
}

TEST(LayerNormFused, HardRowsMatchComposed) {
  // A constant row of large values (variance 0: the output is the bias, and
  // the weight's gradient 0), a large offset (the variance must come from
  // centred values), and zeros.
  const std::vector<std::pair<std::string, Tensor>> rows = {
      {"256 x 1234", full({2, 256}, 1234.0, DType::Float64)},
      {"40000..40003", from_vector({40000, 40001, 40002, 40003}, {1, 4}, DType::Float64)},
      {"zeros", zeros({3, 8}, DType::Float64)}};
  for (DType dtype : {DType::Float32, DType::Float64}) {
    for (const auto& [name, x64] : rows) {
      const int64_t c = x64.shape().back();
      Tensor x = x64.to(dtype), w = positive({c}).to(dtype), b = dense({c}).to(dtype);
      Tensor r = dense(x.shape()).to(dtype);
      Outcome fused = outcome(layer_norm, x, w, b, r);
      for (const Tensor* t : {&fused.y, &fused.dx, &fused.dw, &fused.db})
        ASSERT_TRUE(all_finite(*t)) << name;
      if (name != "40000..40003") {
        EXPECT_EQ(fused.y.to_vector(), b.expand(x.shape()).to_vector()) << name;
        for (double v : fused.dw.to_vector()) ASSERT_EQ(v, 0) << name;
      }
      // Float32 against the float64 composed version: the fused kernel loses
      // no more than float32 rounding on any of these rows.
      Outcome composed = outcome(layer_norm_reference, x64, w.to(DType::Float64),
                                 b.to(DType::Float64), r.to(DType::Float64));
      const double tol = dtype == DType::Float32 ? 1e-4 : 1e-10;
      expect_close(fused.y.to(DType::Float64), composed.y, tol, name + " y");
      expect_close(fused.dx.to(DType::Float64), composed.dx, tol, name + " dx");
      expect_close(fused.dw.to(DType::Float64), composed.dw, tol, name + " dweight");
      expect_close(fused.db.to(DType::Float64), composed.db, tol, name + " dbias");
    }
  }
}

TEST(LayerNormFused, SameBitsAtOneTwoAndThreeThreads) {
  // Large enough that forward and backward both cut the rows into 3 chunks.
  for (DType dtype : {DType::Float32, DType::Float64}) {
    Tensor x = dense({1500, 96}).to(dtype), w = dense({96}).to(dtype), b = dense({96}).to(dtype);
    Tensor r = dense({1500, 96}).to(dtype);
    std::vector<std::vector<double>> first;
    for (int threads : {1, 2, 3}) {
      ThreadsFor pool(threads);
      Outcome out = outcome(layer_norm, x, w, b, r);
      std::vector<std::vector<double>> now = {out.y.to_vector(), out.dx.to_vector(),
                                              out.dw.to_vector(), out.db.to_vector()};
      if (first.empty()) first = now;
      for (size_t k = 0; k < now.size(); ++k)
        EXPECT_EQ(now[k], first[k]) << "output " << k << " at " << threads << " threads";
    }
  }
}

TEST(LayerNormFused, RejectsMismatchedWeightBiasAndDtype) {
  Variable x(dense({2, 5}));
  EXPECT_THROW(layer_norm(x, Variable(dense({4})), Variable(), 1e-5), Error);
  EXPECT_THROW(layer_norm(x, Variable(), Variable(dense({4})), 1e-5), Error);
  EXPECT_THROW(layer_norm(x, Variable(dense({1, 5})), Variable(), 1e-5), Error);
  EXPECT_THROW(layer_norm(x, Variable(dense({5}).to(DType::Float32)), Variable(), 1e-5), Error);
  EXPECT_THROW(layer_norm(Variable(dense({})), Variable(), Variable(), 1e-5), Error);
  EXPECT_THROW(layer_norm(Variable(zeros({2, 5}, DType::Int64)), Variable(), Variable(), 1e-5),
               Error);
  // The reference checks the same.
  EXPECT_THROW(layer_norm_reference(x, Variable(dense({4})), Variable(), 1e-5), Error);
  EXPECT_THROW(layer_norm_reference(x, Variable(), Variable(dense({4})), 1e-5), Error);
  EXPECT_THROW(layer_norm_reference(x, Variable(dense({5}).to(DType::Float32)), Variable(), 1e-5),
               Error);
  EXPECT_THROW(layer_norm_reference(Variable(dense({})), Variable(), Variable(), 1e-5), Error);
}

}  // namespace
}  // namespace gradflow
