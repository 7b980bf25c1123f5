// Initialisers: bounds and empirical moments on a big tensor against the
// Glorot and He formulas, fans of a kernel-shaped weight, seeded determinism.
#include <gtest/gtest.h>

#include <cmath>

#include "nn/init.h"
#include "nn/layers.h"
#include "tests/nn/nn_check.h"

namespace gradflow::nn {
namespace {
using namespace gradflow::testing;

struct Moments {
  double mean, std, max_abs;
};

Moments moments(const Tensor& t) {
  std::vector<double> v = t.to_vector();
  double s = 0, s2 = 0, m = 0;
  for (double x : v) {
    s += x;
    s2 += x * x;
    m = std::max(m, std::abs(x));
  }
  const double n = static_cast<double>(v.size());
  return {s / n, std::sqrt(s2 / n - (s / n) * (s / n)), m};
}

// (out, in) = (300, 500): fan_in 500, fan_out 300, 150k draws; the sample
// std is then within about 0.5% of the true one, so 3% is a safe margin.
constexpr int64_t kOut = 300, kIn = 500;

Variable weight(DType dtype = DType::Float32) { return Variable(zeros({kOut, kIn}, dtype), true); }

TEST(Init, XavierUniformBoundAndStd) {
  Generator gen(1);
  Variable w = weight();
  init::xavier_uniform_(w, gen);
  const double a = std::sqrt(6.0 / (kIn + kOut));
  Moments m = moments(w.data());
  EXPECT_LE(m.max_abs, a);
  EXPECT_GT(m.max_abs, 0.99 * a);
  EXPECT_NEAR(m.std, a / std::sqrt(3.0), 0.03 * a / std::sqrt(3.0));
  EXPECT_NEAR(m.mean, 0, 0.01 * a);
  init::xavier_uniform_(w, gen, 2.0);
  EXPECT_LE(moments(w.data()).max_abs, 2 * a);
  EXPECT_GT(moments(w.data()).max_abs, 1.98 * a);
}

TEST(Init, XavierNormalStd) {
  Generator gen(2);
  Variable w = weight(DType::Float64);
  init::xavier_normal_(w, gen, 0.5);
  const double s = 0.5 * std::sqrt(2.0 / (kIn + kOut));
  Moments m = moments(w.data());
  EXPECT_NEAR(m.std, s, 0.03 * s);
  EXPECT_NEAR(m.mean, 0, 0.01 * s);
}

TEST(Init, KaimingUniformAndNormalUseFanIn) {
  Generator gen(3);
  Variable w = weight();
  init::kaiming_uniform_(w, gen);  // gain sqrt(2): std sqrt(2 / fan_in)
  const double s = std::sqrt(2.0 / kIn), bound = std::sqrt(3.0) * s;
  Moments m = moments(w.data());
  EXPECT_LE(m.max_abs, bound);
  EXPECT_GT(m.max_abs, 0.99 * bound);
  EXPECT_NEAR(m.std, s, 0.03 * s);
  init::kaiming_normal_(w, gen);
  m = moments(w.data());
  EXPECT_NEAR(m.std, s, 0.03 * s);
  EXPECT_NEAR(m.mean, 0, 0.01 * s);
  init::kaiming_normal_(w, gen, 1.0);
  EXPECT_NEAR(moments(w.data()).std, 1.0 / std::sqrt(kIn), 0.03 / std::sqrt(kIn));
}

TEST(Init, KernelShapedWeightMultipliesBothFans) {
  // (out 64, in 32, 3, 3): fan_in = 288, fan_out = 576.
  Generator gen(4);
  Variable w(zeros({64, 32, 3, 3}), true);
  init::xavier_uniform_(w, gen);
  const double a = std::sqrt(6.0 / (288 + 576));
  Moments m = moments(w.data());
  EXPECT_LE(m.max_abs, a);
  EXPECT_GT(m.max_abs, 0.99 * a);
  init::kaiming_normal_(w, gen);
  const double s = std::sqrt(2.0 / 288);
  EXPECT_NEAR(moments(w.data()).std, s, 0.03 * s);
}

TEST(Init, NormalUniformConstant) {
  Generator gen(5);
  Variable w = weight();
  init::normal_(w, gen, 3.0, 0.5);
  Moments m = moments(w.data());
  EXPECT_NEAR(m.mean, 3.0, 0.01);
  EXPECT_NEAR(m.std, 0.5, 0.015);
  init::uniform_(w, gen, -2.0, 6.0);
  for (double x : w.data().to_vector()) ASSERT_TRUE(x >= -2.0 && x < 6.0) << x;
  m = moments(w.data());
  EXPECT_NEAR(m.mean, 2.0, 0.05);
  EXPECT_NEAR(m.std, 8.0 / std::sqrt(12.0), 0.03 * 8.0 / std::sqrt(12.0));
  init::constant_(w, 0.75);
  expect_all_equal(w.data(), 0.75, "constant_");
}

TEST(Init, WritesInPlaceIntoTheLiveParameter) {
  Generator gen(6);
  Variable w(zeros({4, 3}), true);
  Tensor alias = w.data();
  init::xavier_uniform_(w, gen);
  EXPECT_EQ(alias.storage(), w.data().storage());
  EXPECT_NE(moments(alias).max_abs, 0);
}

TEST(Init, SameSeedSameValues) {
  for (auto fill : {+[](const Variable&w, Generator&g) { init::xavier_uniform_(w, g); },
                    +[](const Variable&w, Generator&g) { init::xavier_normal_(w, g); },
                    +[](const Variable&w, Generator&g) { init::kaiming_uniform_(w, g); },
                    +[](const Variable&w, Generator&g) { init::kaiming_normal_(w, g); }}) {
    Generator g1(77), g2(77), g3(78);
    Variable a(zeros({16, 8}), true), b(zeros({16, 8}), true), c(zeros({16, 8}), true);
    fill(a, g1);
    fill(b, g2);
    fill(c, g3);
    EXPECT_EQ(a.data().to_vector(), b.data().to_vector());
    EXPECT_NE(a.data().to_vector(), c.data().to_vector());
  }
}

TEST(Init, LayerDefaultsFollowPyTorch) {
  Generator gen(8);
  Linear lin(400, 300, {}, gen);  // U(-1/sqrt(in), 1/sqrt(in)) for weight and bias
  const double bound = 1 / std::sqrt(400.0);
  Moments m = moments(lin.weight.data());
  EXPECT_LE(m.max_abs, bound);
  EXPECT_NEAR(m.std, bound / std::sqrt(3.0), 0.03 * bound / std::sqrt(3.0));
  EXPECT_LE(moments(lin.bias.data()).max_abs, bound);
  Embedding emb(1000, 100, gen);  // N(0, 1)
  m = moments(emb.weight.data());
  EXPECT_NEAR(m.std, 1.0, 0.03);
  EXPECT_NEAR(m.mean, 0.0, 0.01);
  LayerNorm ln(7);
  expect_all_equal(ln.weight.data(), 1, "LayerNorm weight");
  expect_all_equal(ln.bias.data(), 0, "LayerNorm bias");
  // Same seed, same layer.
  Generator g1(9), g2(9);
  EXPECT_EQ(Linear(8, 4, {}, g1).weight.data().to_vector(),
            Linear(8, 4, {}, g2).weight.data().to_vector());
}

TEST(Init, FanBasedInitNeedsTwoDimensions) {
  Generator gen(7);
  Variable bias(zeros({8}), true);
  EXPECT_THROW(init::xavier_uniform_(bias, gen), Error);
  EXPECT_THROW(init::xavier_normal_(bias, gen), Error);
  EXPECT_THROW(init::kaiming_uniform_(bias, gen), Error);
  EXPECT_THROW(init::kaiming_normal_(bias, gen), Error);
}

}  // namespace
}  // namespace gradflow::nn
