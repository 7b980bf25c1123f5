// Linear, Embedding, the activation modules, Dropout and the positional
// encodings: values against hand loops and formulas, gradient checks in
// float64 with respect to the input and every parameter.
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/data_parallel.h"
#include "nn/layers.h"
#include "tests/nn/nn_check.h"

namespace gradflow::nn {
namespace {
using namespace gradflow::testing;

// y[n][o] = sum_i x[n][i] W[o][i] + b[o], x flattened to (N, in).
std::vector<double> linear_by_hand(const Tensor& x, const Tensor& w, const Tensor& b) {
  const int64_t out = w.shape()[0], in = w.shape()[1], n = x.numel() / in;
  std::vector<double> xv = x.to_vector(), wv = w.to_vector(), y(n * out);
  std::vector<double> bv = b.defined() ? b.to_vector() : std::vector<double>(out, 0);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double acc = bv[o];
      for (int64_t i = 0; i < in; ++i) acc += xv[r * in + i] * wv[o * in + i];
      y[r * out + o] = acc;
    }
  return y;
}

TEST(Linear, MatchesAHandLoopIn2dAnd3d) {
  Generator gen(1);
  Linear lin(5, 3, {}, gen);
  for (const Shape& shape : {Shape{4, 5}, Shape{2, 3, 5}}) {
    Tensor x = randn(shape, gen);
    Variable y = lin.forward(Variable(x));
    Shape expected = shape;
    expected.back() = 3;
    EXPECT_EQ(y.shape(), expected);
    expect_near_vec(y.data(), linear_by_hand(x, lin.weight.data(), lin.bias.data()), 1e-5);
  }
  Linear no_bias(5, 3, {.bias = false}, gen);
  EXPECT_FALSE(no_bias.bias.defined());
  EXPECT_EQ(no_bias.named_parameters().size(), 1u);
  Tensor x = randn({4, 5}, gen);
  expect_near_vec(no_bias.forward(Variable(x)).data(),
                  linear_by_hand(x, no_bias.weight.data(), Tensor()), 1e-5);
  EXPECT_EQ(lin.describe(), "Linear(5 -> 3)");
  EXPECT_EQ(no_bias.describe(), "Linear(5 -> 3, no bias)");
}

TEST(Linear, DefaultInitIsUniformWithinOneOverSqrtIn) {
  Generator gen(2);
  Linear lin(64, 32, {}, gen);
  const double bound = 1.0 / 8.0;
  for (const Variable& p : lin.parameters())
    for (double w : p.data().to_vector()) EXPECT_LE(std::abs(w), bound);
  EXPECT_EQ(lin.weight.shape(), (Shape{32, 64}));
  EXPECT_EQ(lin.bias.shape(), (Shape{32}));
}

TEST(Linear, GradcheckInputWeightAndBiasOnEveryLayout) {
  Generator gen(3);
  Linear lin(4, 3, {}, {gen, DType::Float64});
  // The layer's own forward runs with v[1], v[2] as its weight and bias.
  auto fn = [&](const Vars& v) {
    lin.weight = v[1];
    lin.bias = v[2];
    return lin.forward(v[0]);
  };
  for (const Shape& shape : {Shape{3, 4}, Shape{2, 3, 4}})
    for (const Tensor& x : {dense(shape), transposed(shape), strided(shape)})
      EXPECT_GRADCHECK(fn, {x, dense({3, 4}), dense({3})});
  // The weight itself as a transposed view.
  EXPECT_GRADCHECK(fn, {dense({2, 4}), transposed({3, 4}), dense({3})});
}

TEST(Linear, ParameterGradientsReachTheRegisteredParameters) {
  Generator gen(4);
  Linear lin(3, 2, {}, {gen, DType::Float64});
  Variable x(dense({2, 2, 3}));
  expect_parameter_grads(lin, [&] { return lin.forward(x); });
}

TEST(Linear, AcceptsASingleVector) {
  // The header promises (..., in) -> (..., out); "..." may be empty, as in PyTorch.
  Generator gen(11);
  Linear lin(5, 3, {}, gen);
  Tensor x = randn({5}, gen);
  Variable y = lin.forward(Variable(x));
  EXPECT_EQ(y.shape(), (Shape{3}));
  expect_near_vec(y.data(), linear_by_hand(x, lin.weight.data(), lin.bias.data()), 1e-5);
}

TEST(Linear, RejectsBadShapes) {
  Generator gen(5);
  EXPECT_THROW(Linear(0, 3, {}, gen), Error);
  EXPECT_THROW(Linear(3, -1, {}, gen), Error);
  Linear lin(4, 2, {}, gen);
  EXPECT_THROW(lin.forward(Variable(zeros({2, 3}))), Error);
  EXPECT_THROW(lin.forward(Variable(scalar_tensor(1.0))), Error);
}

TEST(Embedding, PicksRowsAndAccumulatesRepeatedIds) {
  Generator gen(6);
  Embedding emb(5, 3, {gen, DType::Float64});
  Tensor ids = from_indices({4, 0, 4, 2, 1, 4}, {2, 3});
  Variable y = emb.forward(ids);
  ASSERT_EQ(y.shape(), (Shape{2, 3, 3}));
  const std::vector<int64_t> flat = {4, 0, 4, 2, 1, 4};
  for (int64_t i = 0; i < 6; ++i)
    for (int64_t c = 0; c < 3; ++c)
      EXPECT_EQ(y.data().at({i / 3, i % 3, c}), emb.weight.data().at({flat[i], c}));
  sum(y).backward();
  // Row r's gradient counts how often r was picked.
  const std::vector<double> counts = {1, 1, 1, 0, 3};
  for (int64_t r = 0; r < 5; ++r)
    for (int64_t c = 0; c < 3; ++c) EXPECT_EQ(emb.weight.grad().at({r, c}), counts[r]);
  EXPECT_EQ(emb.describe(), "Embedding(5, 3)");
}

TEST(Embedding, GradcheckWeightAndBadIds) {
  Generator gen(7);
  Embedding emb(4, 3, {gen, DType::Float64});
  Tensor ids = from_indices({3, 1, 3, 0}, {2, 2});
  auto fn = [&](const Vars& v) {
    emb.weight = v[0];
    return emb.forward(ids);
  };
  EXPECT_GRADCHECK(fn, {dense({4, 3})});
  EXPECT_GRADCHECK(fn, {transposed({4, 3})});
  Embedding fresh(4, 3, {gen, DType::Float64});
  expect_parameter_grads(fresh, [&] { return fresh.forward(ids) * fresh.forward(ids); });
  EXPECT_THROW(fresh.forward(from_indices({4}, {1})), Error);
  EXPECT_THROW(fresh.forward(from_indices({-1}, {1})), Error);
  EXPECT_THROW(fresh.forward(from_vector({1.0})), Error);  // ids must be int64
}

TEST(Activation, GeluAndReluModules) {
  const std::vector<double> xs = {-3, -1, -0.25, 0, 0.5, 2};
  Variable x(from_vector(xs, DType::Float64), true);
  GELU gelu_layer;
  ReLU relu_layer;
  std::vector<double> g, r;
  for (double v : xs) {
    g.push_back(0.5 * v * (1 + std::erf(v / std::sqrt(2.0))));
    r.push_back(v > 0 ? v : 0);
  }
  expect_near_vec(gelu_layer.forward(x).data(), g, 1e-12);
  expect_near_vec(relu_layer.forward(x).data(), r, 0);
  EXPECT_EQ(gelu_layer.num_parameters(), 0);
  EXPECT_EQ(gelu_layer.describe(), "GELU(erf)");
  EXPECT_EQ(relu_layer.describe(), "ReLU");
  EXPECT_GRADCHECK([&](const Vars& v) { return gelu_layer.forward(v[0]); }, {dense({3, 4})});
  // Away from the kink at 0.
  EXPECT_GRADCHECK([&](const Vars& v) { return relu_layer.forward(v[0]); },
                   {from_vector({-2, -0.5, 0.3, 1.7}, DType::Float64)});
}

TEST(Dropout, EvalAndZeroPAreTheIdentity) {
  Generator gen(8);
  Tensor x = randn({4, 5}, gen);
  Dropout drop(0.5, gen);
  drop.eval();
  expect_near_vec(drop.forward(Variable(x)).data(), x.to_vector(), 0);
  Dropout none(0.0, gen);
  EXPECT_TRUE(none.is_training());
  expect_near_vec(none.forward(Variable(x)).data(), x.to_vector(), 0);
}

TEST(Dropout, TrainingZeroesAboutPAndScalesSurvivors) {
  const double p = 0.3;
  const int64_t n = 100000;
  Generator gen(9);
  Dropout drop(p, gen);
  Variable x(full({n}, 2.0), true);
  Variable y = drop.forward(x);
  const float survivor = static_cast<float>(2.0 * static_cast<float>(1.0 / (1.0 - p)));
  int64_t zeros_seen = 0;
  std::vector<double> out = y.data().to_vector();
  for (double v : out) {
    if (v == 0) {
      ++zeros_seen;
    } else {
      ASSERT_FLOAT_EQ(v, survivor);
    }
  }
  // Binomial(n, p): std sqrt(n p (1-p)) ~ 145; allow 5 std.
  EXPECT_NEAR(static_cast<double>(zeros_seen), p * n, 725);
  // The gradient is the mask: 1/(1-p) where kept, 0 where dropped.
  sum(y).backward();
  std::vector<double> g = x.grad().to_vector();
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(g[i] == 0, out[i] == 0) << i;
}

// The parts of backward_in_parallel run at once and would race on the one
// generator: a drawing Dropout refuses there; p = 0 and eval mode draw nothing.
TEST(Dropout, RefusesToDrawInsideAParallelPart) {
  Generator gen(5);
  Dropout drop(0.3, gen), none(0.0, gen);
  Variable x(randn({4, 3}, gen), true);
  try {
    backward_in_parallel(2, [&](int64_t) { return sum(drop.forward(x)); });
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Dropout: p = 0.3 draws from a shared generator"),
              std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(backward_in_parallel(2, [&](int64_t) { return sum(none.forward(x)); }));
  // One part alone shares the generator with nothing (the programs run a
  // batch with dropout as one part).
  EXPECT_NO_THROW(backward_in_parallel(1, [&](int64_t) { return sum(drop.forward(x)); }));
  drop.eval();
  EXPECT_NO_THROW(backward_in_parallel(2, [&](int64_t) { return sum(drop.forward(x)); }));
}

TEST(Dropout, SameSeedSameMaskAndTheGeneratorAdvances) {
  Tensor x = ones({1000});
  Generator g1(42), g2(42);
  Dropout a(0.5, g1), b(0.5, g2);
  std::vector<double> first = a.forward(Variable(x)).data().to_vector();
  EXPECT_EQ(first, b.forward(Variable(x)).data().to_vector());
  EXPECT_NE(first, a.forward(Variable(x)).data().to_vector());
}

TEST(Dropout, RejectsPOutsideZeroToOne) {
  for (double p : {-0.1, 1.0, 1.5, std::nan("")}) EXPECT_THROW(Dropout{p}, Error) << p;
  EXPECT_NO_THROW(Dropout{0.999});
}

// PE(pos, 2j) = sin(pos / 10000^(2j/d)), PE(pos, 2j+1) = cos(pos / 10000^(2j/d)).
double pe(int64_t pos, int64_t i, int64_t d) {
  const int64_t j2 = i - i % 2;
  const double angle = pos / std::pow(10000.0, static_cast<double>(j2) / static_cast<double>(d));
  return i % 2 == 0 ? std::sin(angle) : std::cos(angle);
}

TEST(Positional, SinusoidalMatchesTheFormula) {
  for (int64_t d : {8, 5}) {
    SinusoidalPositionalEncoding enc(64, d, DType::Float64);
    Tensor table = enc.forward(Variable(zeros({1, 64, d}, DType::Float64))).data();
    for (auto [pos, i] : std::vector<std::pair<int64_t, int64_t>>{
             {0, 0}, {0, 1}, {1, 0}, {3, 2}, {7, d - 1}, {40, 3}, {63, 4}}) {
      EXPECT_NEAR(table.at({0, pos, i}), pe(pos, i, d), 1e-12) << pos << ", " << i;
    }
    EXPECT_EQ(table.at({0, 0, 1}), 1.0);
    EXPECT_EQ(table.at({0, 0, 0}), 0.0);
  }
  // Adds to the input, with the start offset.
  SinusoidalPositionalEncoding enc(16, 4, DType::Float64);
  Tensor x = dense({2, 3, 4});
  Tensor y = enc.forward(Variable(x), 5).data();
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t t = 0; t < 3; ++t)
      for (int64_t i = 0; i < 4; ++i)
        EXPECT_NEAR(y.at({b, t, i}), x.at({b, t, i}) + pe(5 + t, i, 4), 1e-12);
  EXPECT_EQ(enc.num_parameters(), 0);
  EXPECT_THROW(enc.forward(Variable(x), 14), Error);
  EXPECT_THROW(enc.forward(Variable(x), -1), Error);
  EXPECT_THROW(enc.forward(Variable(dense({2, 3, 5}))), Error);
}

TEST(Positional, LearnedUsesRowsFromTheStartOffset) {
  Generator gen(10);
  LearnedPositionalEmbedding pos(10, 3, {gen, DType::Float64});
  Variable x(dense({2, 4, 3}), true);
  Variable y = pos.forward(x, 6);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t t = 0; t < 4; ++t)
      for (int64_t c = 0; c < 3; ++c)
        EXPECT_EQ(y.data().at({b, t, c}),
                  x.data().at({b, t, c}) + pos.weight.data().at({6 + t, c}));
  sum(y).backward();
  // Rows 6..9 each collect one gradient per batch entry; the others none.
  for (int64_t r = 0; r < 10; ++r)
    for (int64_t c = 0; c < 3; ++c) EXPECT_EQ(pos.weight.grad().at({r, c}), r >= 6 ? 2.0 : 0.0);
  auto fn = [&](const Vars& v) {
    pos.weight = v[1];
    return pos.forward(v[0], 2);
  };
  EXPECT_GRADCHECK(fn, {dense({1, 3, 3}), dense({10, 3})});
  EXPECT_THROW(pos.forward(x, 7), Error);
}

}  // namespace
}  // namespace gradflow::nn
