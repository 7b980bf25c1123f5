// layer_norm and rms_norm: values against a hand computation (biased
// variance), gradient checks with respect to input, weight and bias, and the
// numerical edge cases (constant rows of large values, all-zero rows).
#include <gtest/gtest.h>

#include <cmath>

#include "nn/norm.h"
#include "tests/nn/nn_check.h"

namespace gradflow::nn {
namespace {
using namespace gradflow::testing;

// Rows of the last axis, in double: (x - mean) / sqrt(var + eps) * w + b with
// var = mean((x - mean)^2), the biased variance.
std::vector<double> layer_norm_by_hand(const Tensor& x, const Tensor& w, const Tensor& b,
                                       double eps) {
  const int64_t c = x.shape().back(), rows = x.numel() / c;
  std::vector<double> xv = x.to_vector(), wv = w.to_vector(), out(xv.size());
  std::vector<double> bv = b.defined() ? b.to_vector() : std::vector<double>(c, 0);
  for (int64_t r = 0; r < rows; ++r) {
    const double* row = &xv[r * c];
    double mu = 0, var = 0;
    for (int64_t i = 0; i < c; ++i) mu += row[i];
    mu /= c;
    for (int64_t i = 0; i < c; ++i) var += (row[i] - mu) * (row[i] - mu);
    var /= c;
    for (int64_t i = 0; i < c; ++i)
      out[r * c + i] = (row[i] - mu) / std::sqrt(var + eps) * wv[i] + bv[i];
  }
  return out;
}

std::vector<double> rms_norm_by_hand(const Tensor& x, const Tensor& w, double eps) {
  const int64_t c = x.shape().back(), rows = x.numel() / c;
  std::vector<double> xv = x.to_vector(), wv = w.to_vector(), out(xv.size());
  for (int64_t r = 0; r < rows; ++r) {
    double ms = 0;
    for (int64_t i = 0; i < c; ++i) ms += xv[r * c + i] * xv[r * c + i];
    ms /= c;
    for (int64_t i = 0; i < c; ++i) out[r * c + i] = xv[r * c + i] / std::sqrt(ms + eps) * wv[i];
  }
  return out;
}

TEST(LayerNorm, ValuesMatchAHandComputationWithBiasedVariance) {
  Tensor x = dense({3, 2, 6}), w = dense({6}), b = dense({6});
  expect_near_vec(layer_norm(Variable(x), Variable(w), Variable(b), 1e-5).data(),
                  layer_norm_by_hand(x, w, b, 1e-5), 1e-12);
  // A row with a tiny variance shows the eps: var + eps, not max(var, eps).
  Tensor small = from_vector({0, 1e-3, 2e-3, 3e-3}, DType::Float64);
  Tensor one = ones({4}, DType::Float64), zero = zeros({4}, DType::Float64);
  expect_near_vec(layer_norm(Variable(small), Variable(one), Variable(zero), 1e-5).data(),
                  layer_norm_by_hand(small, one, zero, 1e-5), 1e-12);
  // No bias.
  expect_near_vec(layer_norm(Variable(x), Variable(w), Variable(), 1e-5).data(),
                  layer_norm_by_hand(x, w, Tensor(), 1e-5), 1e-12);
  // The layer: weight 1, bias 0, eps 1e-5 by default; float32.
  LayerNorm ln(6);
  EXPECT_EQ(ln.weight.dtype(), DType::Float32);
  expect_near_vec(ln.forward(Variable(x.to(DType::Float32))).data(),
                  layer_norm_by_hand(x, ones({6}, DType::Float64), Tensor(), 1e-5), 2e-5);
}

TEST(LayerNorm, GradcheckInputWeightAndBias) {
  auto fn = [](const Vars& v) { return layer_norm(v[0], v[1], v[2], 1e-5); };
  for (const Tensor& x : {dense({2, 3, 5}), transposed({2, 3, 5}), strided({2, 3, 5})})
    EXPECT_GRADCHECK(fn, {x, dense({5}), dense({5})});
  EXPECT_GRADCHECK([](const Vars& v) { return layer_norm(v[0], v[1], Variable(), 1e-5); },
                   {dense({4, 3}), dense({3})});
  // The module's forward and its registered parameters.
  LayerNorm ln(5, {}, DType::Float64);
  EXPECT_GRADCHECK(
      [&](const Vars& v) {
        ln.weight = v[1];
        ln.bias = v[2];
        return ln.forward(v[0]);
      },
      {dense({2, 5}), dense({5}), dense({5})});
  LayerNorm fresh(5, {}, DType::Float64);
  Variable x(dense({3, 5}));
  expect_parameter_grads(fresh, [&] { return fresh.forward(x); });
}

TEST(RMSNorm, ValuesAndGradcheck) {
  Tensor x = dense({3, 4}), w = dense({4});
  expect_near_vec(rms_norm(Variable(x), Variable(w), 1e-6).data(), rms_norm_by_hand(x, w, 1e-6),
                  1e-12);
  RMSNorm layer(4, {}, DType::Float64);
  EXPECT_EQ(layer.named_parameters().size(), 1u);
  expect_near_vec(layer.forward(Variable(x)).data(), rms_norm_by_hand(x, ones({4}), 1e-6), 1e-12);
  auto fn = [](const Vars& v) { return rms_norm(v[0], v[1], 1e-6); };
  for (const Tensor& in : {dense({2, 3, 4}), transposed({2, 3, 4}), strided({2, 3, 4})})
    EXPECT_GRADCHECK(fn, {in, dense({4})});
  Variable input(dense({2, 4}));
  expect_parameter_grads(layer, [&] { return layer.forward(input); });
  EXPECT_THROW(rms_norm(Variable(x), Variable(dense({3})), 1e-6), Error);
}

TEST(LayerNorm, ConstantRowOfLargeValuesGivesTheBias) {
  // 256 copies of 1234.0: variance 0, output exactly the bias.
  Variable x(full({2, 256}, 1234.0), true);
  Variable w(rand({256}, test_gen(), DType::Float32, 0.5, 2.0), true);
  Variable b(randn({256}, test_gen()), true);
  Variable y = layer_norm(x, w, b, 1e-5);
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t i = 0; i < 256; ++i) ASSERT_EQ(y.data().at({r, i}), b.data().at({i}));
  Tensor g = randn({2, 256}, test_gen());
  sum(y * Variable(g)).backward();
  expect_all_finite(x.grad(), "x.grad");
  expect_all_finite(w.grad(), "w.grad");
  expect_all_finite(b.grad(), "b.grad");
  expect_all_equal(w.grad(), 0, "w.grad of a constant row");  // normalized is 0
  expect_near_vec(b.grad(), sum(g, {0}).to_vector(), 1e-5);
  // With the row centred at 0 the variance has zero derivative, so
  // dx = (g w - mean(g w)) / sqrt(eps), row by row.
  Tensor gw = mul(g, w.data());
  expect_near_vec(x.grad(), div(sub(gw, mean(gw, {-1}, true)), std::sqrt(1e-5)).to_vector(), 1e-3);
}

TEST(LayerNorm, LargeOffsetRowInFloat32MatchesFloat64) {
  Tensor x = from_vector({40000, 40001, 40002, 40003}, {1, 4}, DType::Float64);
  Tensor w = from_vector({1.5, -0.5, 2, 1}, DType::Float64);
  Tensor b = from_vector({0.1, 0.2, -0.3, 0}, DType::Float64);
  std::vector<double> expected = layer_norm_by_hand(x, w, b, 1e-5);
  Variable xf(x.to(DType::Float32), true), wf(w.to(DType::Float32), true);
  Variable yf = layer_norm(xf, wf, Variable(b.to(DType::Float32)), 1e-5);
  expect_near_vec(yf.data(), expected, 1e-3);
  // Gradients agree with the float64 ones too.
  Tensor r = from_vector({0.3, -1, 0.7, 0.2}, {1, 4}, DType::Float64);
  Variable xd(x, true), wd(w, true);
  sum(layer_norm(xd, wd, Variable(b), 1e-5) * Variable(r)).backward();
  sum(yf * Variable(r.to(DType::Float32))).backward();
  expect_near_vec(xf.grad(), xd.grad().to_vector(), 1e-3);
  expect_near_vec(wf.grad(), wd.grad().to_vector(), 1e-3);
}

TEST(LayerNorm, AllZeroRowIsFinite) {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    Variable x(zeros({3, 8}, dtype), true);
    Variable w(ones({8}, dtype), true), b(full({8}, 0.25, dtype), true);
    Variable y = layer_norm(x, w, b, 1e-5);
    expect_all_equal(y.data(), 0.25, "layer_norm of zeros");
    Tensor g = randn({3, 8}, test_gen(), dtype);
    sum(y * Variable(g)).backward();
    expect_all_finite(x.grad(), "x.grad");
    expect_all_finite(w.grad(), "w.grad");
    // As for any constant row: dx = (g - mean(g)) w / sqrt(eps).
    expect_near_vec(x.grad(), div(sub(g, mean(g, {-1}, true)), std::sqrt(1e-5)).to_vector(), 1e-3);
    Variable z(zeros({2, 8}, dtype), true);
    Variable rz = rms_norm(z, w, 1e-6);
    expect_all_equal(rz.data(), 0, "rms_norm of zeros");
    sum(rz * Variable(randn({2, 8}, test_gen(), dtype))).backward();
    expect_all_finite(z.grad(), "rms z.grad");
  }
}

TEST(LayerNorm, RejectsAMismatchedLastAxis) {
  Variable x(dense({2, 5}));
  EXPECT_THROW(layer_norm(x, Variable(dense({4})), Variable(dense({4})), 1e-5), Error);
  EXPECT_THROW(LayerNorm(0), Error);
  LayerNorm ln(4);
  EXPECT_THROW(ln.forward(Variable(zeros({2, 5}))), Error);
  EXPECT_EQ(ln.describe().rfind("LayerNorm(4", 0), 0u);
}

}  // namespace
}  // namespace gradflow::nn
