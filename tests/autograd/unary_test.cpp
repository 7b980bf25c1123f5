#include <cmath>

#include "check.h"

namespace gradflow {
namespace {
using namespace testing;
using Vars = std::vector<Variable>;

TEST(Unary, Values) {
  Variable x(from_vector({-1.5, 0.0, 2.0}, DType::Float64));
  expect_near_vec(exp(x).data(), {std::exp(-1.5), 1.0, std::exp(2.0)});
  expect_near_vec(tanh(x).data(), {std::tanh(-1.5), 0.0, std::tanh(2.0)});
  expect_near_vec(relu(x).data(), {0, 0, 2});
  // silu(x) = x / (1 + e^-x): negative below 0, below x above it.
  expect_near_vec(silu(x).data(), {-1.5 / (1 + std::exp(1.5)), 0, 2 / (1 + std::exp(-2.0))});
  expect_near_vec(gelu(x).data(), {-1.5 * 0.5 * (1 + std::erf(-1.5 / std::sqrt(2.0))), 0,
                                   2.0 * 0.5 * (1 + std::erf(2.0 / std::sqrt(2.0)))});
  Variable p(from_vector({0.25, 1.0, 4.0}, DType::Float64));
  expect_near_vec(log(p).data(), {std::log(0.25), 0, std::log(4.0)});
  expect_near_vec(sqrt(p).data(), {0.5, 1, 2});
  expect_near_vec(pow(p, 3).data(), {0.015625, 1, 64});
  expect_near_vec(pow(p, -0.5).data(), {2, 1, 0.5});
}

TEST(Unary, GradcheckAllLayouts) {
  std::vector<GradcheckFn> any_sign = {
      [](const Vars& v) { return exp(v[0]); },    [](const Vars& v) { return tanh(v[0]); },
      [](const Vars& v) { return gelu(v[0]); },   [](const Vars& v) { return silu(v[0]); },
      [](const Vars& v) { return pow(v[0], 2); }, [](const Vars& v) { return pow(v[0], 3); }};
  for (const GradcheckFn& op : any_sign) {
    EXPECT_GRADCHECK(op, {dense({3, 4})});
    EXPECT_GRADCHECK(op, {transposed({3, 4})});
    EXPECT_GRADCHECK(op, {strided({3, 4})});
    EXPECT_GRADCHECK(op, {dense({5}).narrow(0, 1, 1).expand({2, 3})});  // broadcast input
  }
  std::vector<GradcheckFn> positive_only = {
      [](const Vars& v) { return log(v[0]); }, [](const Vars& v) { return sqrt(v[0]); },
      [](const Vars& v) { return pow(v[0], -1.5); }, [](const Vars& v) { return pow(v[0], 0.5); }};
  for (const GradcheckFn& op : positive_only) {
    EXPECT_GRADCHECK(op, {positive({3, 4})});
    EXPECT_GRADCHECK(op, {positive({4, 3}).transpose(0, 1)});
  }
}

// Exercise 4 (tanh_backward), by hand: dL/dx = g (1 - tanh(x)^2), on inputs
// where a sign, a missing square or a missing g would show.
TEST(Unary, TanhBackwardByHand) {
  const std::vector<double> xs = {-1.5, 0, 2}, gs = {1, 2, -1};
  Variable x(from_vector(xs, DType::Float64), true);
  tanh(x).backward(from_vector(gs, DType::Float64));
  for (size_t i = 0; i < xs.size(); ++i) {
    const double y = std::tanh(xs[i]), want = gs[i] * (1 - y * y);
    EXPECT_NEAR(x.grad().to_vector()[i], want, 1e-12)
        << "tanh's backward at x = " << xs[i] << " (y = tanh(x) = " << y
        << ") with dL/dy = " << gs[i] << ": got " << x.grad().to_vector()[i]
        << ", want dL/dy (1 - y^2) = " << want;
  }
}

// Exercise 4 in a model: a network with one tanh layer learns XOR by plain
// gradient descent in float64, through tanh's backward. A wrong backward
// shows as a network that does not learn.
TEST(Unary, TanhNetworkLearnsXor) {
  Generator gen(7);
  Variable x(from_vector({-1, -1, -1, 1, 1, -1, 1, 1}, {4, 2}, DType::Float64));
  Variable target(from_vector({0, 1, 1, 0}, {4, 1}, DType::Float64));
  Variable w1(randn({2, 4}, gen, DType::Float64), true), b1(zeros({4}, DType::Float64), true);
  Variable w2(randn({4, 1}, gen, DType::Float64, 0, 0.5), true);
  Variable b2(zeros({1}, DType::Float64), true);
  const auto loss_now = [&] {
    Variable out = matmul(tanh(matmul(x, w1) + b1), w2) + b2;  // (4, 1)
    return mean(pow(out - target, 2));
  };
  const double first = loss_now().item();
  double last = first;
  for (int step = 0; step < 500; ++step) {
    Variable loss = loss_now();
    last = loss.item();
    for (Variable* p : {&w1, &b1, &w2, &b2}) p->zero_grad();
    loss.backward();
    for (Variable* p : {&w1, &b1, &w2, &b2}) {
      Tensor data = p->data();  // the same memory: a step in place
      add_(data, mul(p->grad(), -0.5));
    }
  }
  EXPECT_LT(last, 0.01) << "a tanh network on XOR, 500 steps of gradient descent: its loss went "
                        << "from " << first << " to " << last << ", where a right tanh backward "
                        << "takes it below 0.01. The gradient through tanh is wrong in sign or "
                        << "size: check dL/dx = dL/dy (1 - y^2)";
}

// Far from 0, e^-x overflows (float32 below -88): silu and its derivative
// are then 0, not NaN, and x and 1 far above 0.
TEST(Unary, SiluIsFiniteAtTheExtremes) {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    Variable x(from_vector({-1000, -100, 100, 1000}, dtype), true);
    Variable y = silu(x);
    sum(y).backward();
    const std::vector<double> v = y.data().to_vector(), d = x.grad().to_vector();
    EXPECT_EQ(v[0], 0);
    EXPECT_NEAR(v[1], -100 * std::exp(-100.0), 1e-40);  // float32: 0, double: -3.7e-42
    EXPECT_EQ(v[2], 100);
    EXPECT_EQ(v[3], 1000);
    // d/dx = s (1 + x (1 - s)): 0 far below 0; 1 far above it.
    EXPECT_EQ(d[0], 0);
    EXPECT_NEAR(d[1], -99 * std::exp(-100.0), 1e-40);
    EXPECT_EQ(d[2], 1);
    EXPECT_EQ(d[3], 1);
  }
  // The derivative by hand at 1.5: s = 1 / (1 + e^-1.5), s (1 + 1.5 (1 - s)).
  Variable x(from_vector({1.5}, DType::Float64), true);
  sum(silu(x)).backward();
  const double s = 1 / (1 + std::exp(-1.5));
  EXPECT_NEAR(x.grad().to_vector()[0], s * (1 + 1.5 * (1 - s)), 1e-15);
}

TEST(Unary, ReluGradcheckAwayFromKink) {
  // Finite differences are wrong within eps of 0, so keep inputs away from it.
  Tensor x = from_vector({-2, -0.5, 0.3, 1.7, -1, 2.5}, {2, 3}, DType::Float64);
  EXPECT_GRADCHECK([](const Vars& v) { return relu(v[0]); }, {x});
  EXPECT_GRADCHECK([](const Vars& v) { return relu(v[0]); }, {x.transpose(0, 1)});
}

}  // namespace
}  // namespace gradflow
