#include "nn/optim/optim.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "autograd/ops.h"
#include "autograd/reference.h"
#include "nn/linear.h"
#include "tensor/ops.h"
#include "tests/tensor/testing.h"

namespace gradflow::nn {
namespace {

Variable param(const std::vector<double>& values, DType dtype = DType::Float64) {
  return Variable(from_vector(values, dtype), /*requires_grad=*/true);
}

void give_grad(Variable p, const std::vector<double>& g) { p.set_grad(from_vector(g, p.dtype())); }

std::vector<double> values(const Variable& p) { return p.data().to_vector(); }

using testing::error_of;
using testing::same_bytes;

// The tensor a state holds under `key`.
Tensor find(const NamedTensors& state, const std::string& key) {
  for (const auto& [k, t] : state) {
    if (k == key) return t;
  }
  ADD_FAILURE() << "no key " << key;
  return scalar_tensor(std::nan(""), DType::Float64);
}

// ---- SGD --------------------------------------------------------------------

TEST(SGD, OneStepIsGradientDescent) {
  Variable p = param({1.0, -2.0});
  SGD opt({p}, /*lr=*/0.1);
  give_grad(p, {0.5, 3.0});
  opt.step();
  // p - lr g = (1 - 0.1 * 0.5, -2 - 0.1 * 3) = (0.95, -2.3)
  EXPECT_DOUBLE_EQ(values(p)[0], 0.95);
  EXPECT_DOUBLE_EQ(values(p)[1], -2.3);
  EXPECT_EQ(opt.step_count(), 1);
}

TEST(SGD, WeightDecayAddsToTheGradient) {
  Variable p = param({2.0});
  SGD opt({p}, 0.1, /*momentum=*/0, /*nesterov=*/false, /*weight_decay=*/0.5);
  give_grad(p, {1.0});
  opt.step();
  // g = 1 + 0.5 * 2 = 2; p = 2 - 0.1 * 2 = 1.8
  EXPECT_DOUBLE_EQ(values(p)[0], 1.8);
}

TEST(SGD, MomentumTwoSteps) {
  Variable p = param({1.0});
  SGD opt({p}, 0.1, /*momentum=*/0.9);
  give_grad(p, {0.5});
  opt.step();
  // First step: b = g = 0.5 (not 0.9 * 0 + g with dampening); p = 1 - 0.1 * 0.5 = 0.95
  EXPECT_DOUBLE_EQ(values(p)[0], 0.95);
  give_grad(p, {-1.0});
  opt.step();
  // b = 0.9 * 0.5 + (-1) = -0.55; p = 0.95 - 0.1 * (-0.55) = 1.005
  EXPECT_DOUBLE_EQ(values(p)[0], 1.005);
}

TEST(SGD, NesterovTwoSteps) {
  Variable p = param({1.0});
  SGD opt({p}, 0.1, 0.9, /*nesterov=*/true);
  give_grad(p, {0.5});
  opt.step();
  // b = 0.5; d = g + 0.9 b = 0.95; p = 1 - 0.1 * 0.95 = 0.905
  EXPECT_DOUBLE_EQ(values(p)[0], 0.905);
  give_grad(p, {-1.0});
  opt.step();
  // b = 0.9 * 0.5 - 1 = -0.55; d = -1 + 0.9 * (-0.55) = -1.495; p = 0.905 + 0.1495 = 1.0545
  EXPECT_DOUBLE_EQ(values(p)[0], 1.0545);
}

TEST(SGD, MomentumBufferIncludesWeightDecay) {
  Variable p = param({2.0});
  SGD opt({p}, 0.1, 0.9, false, /*weight_decay=*/0.5);
  give_grad(p, {1.0});
  opt.step();
  // g = 1 + 0.5 * 2 = 2; b = 2; p = 2 - 0.2 = 1.8
  EXPECT_DOUBLE_EQ(values(p)[0], 1.8);
  give_grad(p, {1.0});
  opt.step();
  // g = 1 + 0.5 * 1.8 = 1.9; b = 0.9 * 2 + 1.9 = 3.7; p = 1.8 - 0.37 = 1.43
  EXPECT_DOUBLE_EQ(values(p)[0], 1.43);
}

// The study's SGD arm: momentum 0.9, coupled weight decay 0.1, and a learning rate the loop's
// schedule changes before every step (set_lr, as examples/toolkit/training/training.cpp does).
TEST(SGD, MomentumWeightDecayAndAScheduledLrThreeStepsByHand) {
  Variable p = param({1.0, -2.0});
  SGD opt({p}, /*lr=*/0.1, /*momentum=*/0.9, /*nesterov=*/false, /*weight_decay=*/0.1);
  const double lrs[3] = {0.1, 0.05, 0.02};
  const std::vector<double> grads[3] = {{0.5, 1.0}, {-1.0, 1.0}, {2.0, -3.0}};
  for (int s = 0; s < 3; ++s) {
    opt.set_lr(lrs[s]);
    give_grad(p, grads[s]);
    opt.step();
  }
  // Element 0 (p = 1):
  //   step 1, lr 0.1:  g = 0.5 + 0.1 * 1 = 0.6;          b = g = 0.6 (first step);
  //                    p = 1 - 0.1 * 0.6 = 0.94
  //   step 2, lr 0.05: g = -1 + 0.1 * 0.94 = -0.906;     b = 0.9 * 0.6 - 0.906 = -0.366;
  //                    p = 0.94 + 0.05 * 0.366 = 0.9583
  //   step 3, lr 0.02: g = 2 + 0.1 * 0.9583 = 2.09583;   b = 0.9 * -0.366 + 2.09583 = 1.76643;
  //                    p = 0.9583 - 0.02 * 1.76643 = 0.9229714
  // Element 1 (p = -2):
  //   step 1: g = 1 - 0.2 = 0.8;                b = 0.8;                     p = -2.08
  //   step 2: g = 1 - 0.208 = 0.792;            b = 0.72 + 0.792 = 1.512;    p = -2.08 - 0.0756
  //                                                                            = -2.1556
  //   step 3: g = -3 - 0.21556 = -3.21556;      b = 1.3608 - 3.21556 = -1.85476;
  //           p = -2.1556 + 0.02 * 1.85476 = -2.1185048
  EXPECT_NEAR(values(p)[0], 0.9229714, 1e-14);
  EXPECT_NEAR(values(p)[1], -2.1185048, 1e-14);
  const std::vector<double> buffer = find(opt.state(), "momentum_buffer.0").to_vector();
  EXPECT_NEAR(buffer[0], 1.76643, 1e-14);
  EXPECT_NEAR(buffer[1], -1.85476, 1e-14);
  EXPECT_EQ(opt.step_count(), 3);
}

TEST(SGD, ParameterWithoutGradKeepsItsValueAndItsMomentumBuffer) {
  Variable a = param({1.0}), b = param({5.0});
  SGD opt({a, b}, 0.1, /*momentum=*/0.9);
  give_grad(a, {1.0});
  give_grad(b, {1.0});
  opt.step();  // b: buffer 1, b = 5 - 0.1 = 4.9
  opt.zero_grad();
  give_grad(a, {1.0});
  opt.step();  // b has no grad: neither b nor its buffer moves (no decay of the buffer either)
  EXPECT_DOUBLE_EQ(values(b)[0], 4.9);
  EXPECT_EQ(find(opt.state(), "momentum_buffer.1").to_vector(), (std::vector<double>{1.0}));
  give_grad(b, {2.0});
  opt.step();  // b: buffer 0.9 * 1 + 2 = 2.9, b = 4.9 - 0.29 = 4.61
  EXPECT_DOUBLE_EQ(values(b)[0], 4.61);
  EXPECT_EQ(find(opt.state(), "param_steps").to_vector(), (std::vector<double>{3, 2}));
}

TEST(SGD, RejectsNegativeOrNonFiniteLrMomentumAndWeightDecay) {
  Variable p = param({1.0});
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  for (double bad : {-0.1, nan, inf}) {
    EXPECT_NE(error_of([&] { SGD({p}, bad, 0.9); }).find("SGD: lr must be finite and >= 0"),
              std::string::npos);
    EXPECT_NE(error_of([&] { SGD({p}, 0.1, bad); }).find("SGD: momentum must be finite and >= 0"),
              std::string::npos);
    EXPECT_NE(error_of([&] {
                SGD({p}, 0.1, 0.9, false, bad);
              }).find("SGD: weight_decay must be finite and >= 0"),
              std::string::npos);
  }
  SGD opt({p}, 0.1, 0.9);
  EXPECT_THROW(opt.set_lr(-1e-3), Error);
  EXPECT_EQ(opt.lr(), 0.1);  // a rejected lr leaves the old one
}

// ---- Adam and AdamW ---------------------------------------------------------

TEST(Adam, OneStepByHand) {
  Variable p = param({1.0, -3.0});
  Adam opt({p}, /*lr=*/0.01);
  give_grad(p, {0.5, -2.0});
  opt.step();
  for (int k = 0; k < 2; ++k) {
    const double p0 = k == 0 ? 1.0 : -3.0, g = k == 0 ? 0.5 : -2.0;
    const double m = 0.1 * g;                                         // 0.9 * 0 + (1 - 0.9) g
    const double v = 0.001 * g * g;                                   // 0.999 * 0 + (1 - 0.999) g^2
    const double step_size = 0.01 / 0.1;                              // lr / (1 - 0.9^1)
    const double denom = std::sqrt(v) / std::sqrt(1 - 0.999) + 1e-8;  // = |g| + 1e-8
    EXPECT_NEAR(values(p)[k], p0 - step_size * m / denom, 1e-15);
  }
  // The first Adam step moves each element by about lr against its gradient's sign.
  EXPECT_NEAR(values(p)[0], 0.99, 1e-9);
  EXPECT_NEAR(values(p)[1], -2.99, 1e-9);
}

TEST(Adam, TwoStepsByHand) {
  Variable p = param({1.0});
  Adam opt({p}, 0.01);
  give_grad(p, {0.5});
  opt.step();
  const double p1 = 1 - (0.01 / 0.1) * 0.05 / (std::sqrt(0.00025) / std::sqrt(0.001) + 1e-8);
  EXPECT_NEAR(values(p)[0], p1, 1e-15);
  give_grad(p, {-1.0});
  opt.step();
  const double m2 = 0.9 * 0.05 + 0.1 * -1.0;                  // -0.055
  const double v2 = 0.999 * 0.00025 + 0.001 * 1.0;            // 0.00124975
  const double bc1 = 1 - 0.9 * 0.9, bc2 = 1 - 0.999 * 0.999;  // 0.19, 0.001999
  const double p2 = p1 - (0.01 / bc1) * m2 / (std::sqrt(v2) / std::sqrt(bc2) + 1e-8);
  EXPECT_NEAR(values(p)[0], p2, 1e-15);
}

TEST(Adam, WeightDecayIsAnL2TermInTheGradient) {
  Variable p = param({2.0});
  Adam opt({p}, 0.01, 0.9, 0.999, 1e-8, /*weight_decay=*/0.1);
  give_grad(p, {0.5});
  opt.step();
  const double g = 0.5 + 0.1 * 2.0;  // 0.7, which then feeds both moments
  const double m = 0.1 * g, v = 0.001 * g * g;
  EXPECT_NEAR(values(p)[0], 2.0 - (0.01 / 0.1) * m / (std::sqrt(v) / std::sqrt(0.001) + 1e-8),
              1e-15);
}

TEST(AdamW, DecaysTheParameterBeforeTheAdamUpdate) {
  Variable p = param({2.0});
  AdamW opt({p}, 0.01, 0.9, 0.999, 1e-8, /*weight_decay=*/0.1);
  give_grad(p, {0.5});
  opt.step();
  const double shrunk = 2.0 * (1 - 0.01 * 0.1);  // 1.998; the gradient stays 0.5
  const double m = 0.1 * 0.5, v = 0.001 * 0.25;
  EXPECT_NEAR(values(p)[0], shrunk - 0.1 * m / (std::sqrt(v) / std::sqrt(0.001) + 1e-8), 1e-15);
}

TEST(AdamW, DefaultsMatchPyTorch) {
  Variable p = param({1.0});
  AdamW opt({p});
  EXPECT_EQ(opt.lr(), 1e-3);
  EXPECT_EQ(find(opt.state(), "weight_decay").item(), 0.01);
  EXPECT_EQ(find(opt.state(), "beta2").item(), 0.999);
}

TEST(Adam, Float32MatchesTheDoubleFormula) {
  Variable p = param({1.0, -3.0, 0.25}, DType::Float32);
  Adam opt({p}, 0.01);
  for (int s = 0; s < 2; ++s) {
    give_grad(p, {0.5, -2.0, 1e-3});
    opt.step();
  }
  // A constant gradient: m_hat = g and v_hat = g^2 exactly, so each step moves by lr * sign(g).
  EXPECT_NEAR(values(p)[0], 0.98, 1e-6);
  EXPECT_NEAR(values(p)[1], -2.98, 1e-6);
  EXPECT_NEAR(values(p)[2], 0.23, 1e-6);
}

// The update from tensor ops (reference_ops() on) against the fused loop: parameters and both
// moments after three steps of changing gradients, with weight decay coupled (Adam) and decoupled
// (AdamW), in float64 and float32.
TEST(Adam, ReferenceUpdateMatchesTheLoop) {
  for (DType dtype : {DType::Float64, DType::Float32}) {
    const double tol = dtype == DType::Float64 ? 1e-14 : 1e-6;
    for (bool decoupled : {false, true}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + (decoupled ? " AdamW" : " Adam"));
      Generator gen(5);
      const Tensor start = randn({4, 3}, gen, dtype);
      std::vector<Tensor> grads;
      for (int s = 0; s < 3; ++s) grads.push_back(randn({4, 3}, gen, dtype));
      std::vector<NamedTensors> states;
      std::vector<std::vector<double>> params;
      for (bool reference : {false, true}) {
        ReferenceOpsGuard path(reference);
        Variable p(start.clone(), true);
        std::unique_ptr<Adam> opt;
        if (decoupled)
          opt = std::make_unique<AdamW>(std::vector<Variable>{p}, 0.01, 0.9, 0.99, 1e-8, 0.1);
        else
          opt = std::make_unique<Adam>(std::vector<Variable>{p}, 0.01, 0.9, 0.99, 1e-8, 0.1);
        for (const Tensor& g : grads) {
          p.set_grad(g.clone());
          opt->step();
        }
        states.push_back(opt->state());
        params.push_back(values(p));
      }
      for (size_t k = 0; k < params[0].size(); ++k)
        EXPECT_NEAR(params[0][k], params[1][k], tol * std::abs(params[1][k])) << "element " << k;
      for (const char* moment : {"exp_avg.0", "exp_avg_sq.0"}) {
        std::vector<double> a = find(states[0], moment).to_vector();
        std::vector<double> b = find(states[1], moment).to_vector();
        for (size_t k = 0; k < a.size(); ++k)
          EXPECT_NEAR(a[k], b[k], tol * std::abs(b[k])) << moment << " element " << k;
      }
    }
  }
}

// ---- bookkeeping --------------------------------------------------------------

TEST(Optimizer, ZeroGradClearsEveryGradient) {
  Variable a = param({1.0}), b = param({2.0, 3.0});
  SGD opt({a, b}, 0.1);
  give_grad(a, {1.0});
  give_grad(b, {1.0, 1.0});
  opt.zero_grad();
  EXPECT_FALSE(a.grad().defined());
  EXPECT_FALSE(b.grad().defined());
  opt.step();  // nothing to do, but the step counts
  EXPECT_EQ(values(a)[0], 1.0);
  EXPECT_EQ(opt.step_count(), 1);
}

TEST(Optimizer, ParametersWithoutGradAreSkippedAndKeepTheirStepCount) {
  Variable a = param({1.0}), b = param({5.0});
  Adam opt({a, b}, 0.01);
  give_grad(a, {0.5});
  const Tensor b_before = b.data().clone();
  opt.step();
  EXPECT_TRUE(same_bytes(b.data(), b_before));
  // b's first update, on the optimizer's second step, gets step-1 bias correction: it moves by
  // (almost exactly) lr, as any first Adam step does.
  give_grad(b, {-4.0});
  opt.step();
  EXPECT_NEAR(values(b)[0], 5.0 + 0.01 * 4.0 / (4.0 + 1e-8), 1e-15);
  EXPECT_EQ(find(opt.state(), "param_steps").to_vector(), (std::vector<double>{2, 1}));
}

TEST(Optimizer, RejectsBadParametersAndHyperparameters) {
  Variable p = param({1.0});
  // (A literal {} would be ambiguous between a list and a list of groups: named here.)
  EXPECT_NE(error_of([] { SGD(std::vector<Variable>{}, 0.1); }).find("empty parameter list"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              SGD({p, p}, 0.1);
            }).find("parameter 1 appears earlier"),
            std::string::npos);
  Variable made = mul(p, 2.0);
  EXPECT_NE(error_of([&] { Adam({made}); }).find("not a leaf"), std::string::npos);
  EXPECT_NE(error_of([&] { SGD({p}, -1); }).find("lr must be finite"), std::string::npos);
  EXPECT_NE(error_of([&] { SGD({p}, 0.1, 0, true); }).find("nesterov needs momentum"),
            std::string::npos);
  EXPECT_NE(error_of([&] { Adam({p}, 0.1, 1.0); }).find("beta1 must be in [0, 1)"),
            std::string::npos);
  SGD opt({p}, 0.1);
  EXPECT_THROW(opt.set_lr(std::nan("")), Error);
}

// A gradient of the wrong shape is refused where it is set (set_grad), not in step's add.
TEST(Optimizer, GradientOfTheWrongShapeIsRefusedBeforeAStep) {
  Variable a = param({1.0}), b = param({2.0, 3.0});
  SGD opt({a, b}, 0.1);
  give_grad(a, {1.0});
  const std::string message = error_of([&] {
    b.set_grad(from_vector({1.0, 1.0, 1.0}, DType::Float64));
  });
  EXPECT_NE(message.find("set_grad: a gradient of float64 (3) for a Variable of float64 (2)"),
            std::string::npos)
      << message;
  EXPECT_FALSE(b.grad().defined());
  EXPECT_EQ(values(a)[0], 1.0);
}

// A step between a forward and its backward changes the values the backward
// would read (w * w keeps w): it gave 1 3 5 for sum(w * w) at w = 1 2 3,
// where 2 4 6 is right. Each update counts as an in-place write, so the
// backward is refused, as PyTorch refuses it.
TEST(Optimizer, AStepBetweenAForwardAndItsBackwardIsRefused) {
  for (int which = 0; which < 3; ++which) {
    SCOPED_TRACE(which);
    Variable w = param({1.0, 2.0, 3.0});
    std::unique_ptr<Optimizer> opt;
    if (which == 0) opt = std::make_unique<SGD>(std::vector<Variable>{w}, 0.5);
    if (which == 1) opt = std::make_unique<AdamW>(std::vector<Variable>{w}, 0.5);
    if (which == 2) opt = std::make_unique<Adam>(std::vector<Variable>{w}, 0.5);
    Variable loss = sum(w * w);
    give_grad(w, {1.0, 1.0, 1.0});  // a previous step's
    opt->step();
    w.zero_grad();
    const std::string message = error_of([&] { loss.backward(); });
    EXPECT_NE(message.find("backward of 'mul': input 0 (shape (3)) was modified in place"),
              std::string::npos)
        << message;
    EXPECT_FALSE(w.grad().defined());
    sum(w * w).backward();  // a forward after the step is fine
    EXPECT_EQ(w.grad().to_vector(),
              (std::vector<double>{2 * values(w)[0], 2 * values(w)[1], 2 * values(w)[2]}));
  }
  // A Linear layer's input gradient reads its weight.
  Linear layer(2, 2, {}, Init(DType::Float64));
  Variable x(from_vector({1.0, 2.0}, DType::Float64), true);
  Variable y = sum(layer.forward(x));
  SGD opt(layer.parameters(), 0.1);
  for (Variable p : layer.parameters()) p.set_grad(ones_like(p.data()));
  opt.step();
  EXPECT_THROW(y.backward(), Error);
  EXPECT_FALSE(x.grad().defined());
}

TEST(Optimizer, StridedGradientIsReadCorrectly) {
  Variable p(zeros({2, 2}, DType::Float64), true);
  SGD opt({p}, 1.0);
  p.set_grad(from_vector({1, 2, 3, 4}, {2, 2}, DType::Float64).transpose(0, 1));
  opt.step();
  EXPECT_EQ(values(p), (std::vector<double>{-1, -3, -2, -4}));
}

// ---- state and load_state -------------------------------------------------------

// loss = sum(w * (p - 1)^2) with w = (1, 2, 3, ...), so gradients differ per element and step.
void backward_quadratic(const std::vector<Variable>& params) {
  for (const Variable& p : params) {
    Variable w(arange(1, static_cast<double>(p.numel()) + 1, 1, p.dtype()).reshape(p.shape()));
    sum(mul(pow(sub(p, 1.0), 2), w)).backward();
  }
}

std::vector<Variable> fresh_params() {
  Generator gen(7);
  return {Variable(randn({3, 2}, gen), true), Variable(randn({4}, gen), true)};
}

using MakeOptimizer = std::function<std::unique_ptr<Optimizer>(std::vector<Variable>)>;

void train(Optimizer& opt, int steps) {
  for (int s = 0; s < steps; ++s) {
    opt.zero_grad();
    backward_quadratic(opt.params());
    opt.set_lr(0.05 / (1 + opt.step_count()));  // a decaying schedule
    opt.step();
  }
}

void expect_bitwise_resume(const MakeOptimizer& make) {
  std::unique_ptr<Optimizer> straight = make(fresh_params());
  train(*straight, 4);

  std::unique_ptr<Optimizer> first = make(fresh_params());
  train(*first, 2);
  const NamedTensors saved = first->state();
  std::vector<Variable> restored;
  for (const Variable& p : first->params()) restored.emplace_back(p.data().clone(), true);
  train(*first, 1);  // the saved copies must not follow later steps

  std::unique_ptr<Optimizer> resumed = make(restored);
  resumed->load_state(saved);
  EXPECT_EQ(resumed->step_count(), 2);
  EXPECT_EQ(resumed->lr(), 0.05 / 2);  // the last lr set before saving, not the constructor's
  train(*resumed, 2);

  for (size_t i = 0; i < restored.size(); ++i)
    EXPECT_TRUE(same_bytes(resumed->params()[i].data(), straight->params()[i].data())) << i;
  const NamedTensors a = straight->state(), b = resumed->state();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, b[i].first);
    EXPECT_TRUE(same_bytes(a[i].second, b[i].second)) << a[i].first;
  }
}

TEST(OptimizerState, SGDResumesBitwise) {
  expect_bitwise_resume([](std::vector<Variable> ps) {
    return std::make_unique<SGD>(std::move(ps), 0.05, 0.9, /*nesterov=*/true, 1e-2);
  });
}

TEST(OptimizerState, AdamResumesBitwise) {
  expect_bitwise_resume([](std::vector<Variable> ps) {
    return std::make_unique<Adam>(std::move(ps), 0.05, 0.9, 0.99, 1e-8, 1e-2);
  });
}

TEST(OptimizerState, AdamWResumesBitwise) {
  expect_bitwise_resume(
      [](std::vector<Variable> ps) { return std::make_unique<AdamW>(std::move(ps), 0.05); });
}

TEST(OptimizerState, NamesEveryTensor) {
  std::vector<std::string> keys;
  AdamW opt(fresh_params());
  for (const auto& [key, t] : opt.state()) keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<std::string>{"step", "lr", "beta1", "beta2", "eps", "weight_decay",
                                            "decoupled_weight_decay", "param_steps", "exp_avg.0",
                                            "exp_avg_sq.0", "exp_avg.1", "exp_avg_sq.1"}));
  keys.clear();
  for (const auto& [key, t] : SGD(fresh_params(), 0.1).state()) keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<std::string>{"step", "lr", "momentum", "nesterov", "weight_decay",
                                            "param_steps"}));
}

// Replaces (or, with an undefined tensor, removes) one key of a state.
NamedTensors with(NamedTensors state, const std::string& key, const Tensor& t) {
  for (auto it = state.begin(); it != state.end(); ++it) {
    if (it->first != key) continue;
    if (t.defined()) {
      it->second = t;
    } else {
      state.erase(it);
    }
    break;
  }
  return state;
}

TEST(OptimizerState, LoadStateNamesTheOffendingKeyAndChangesNothing) {
  Adam opt(fresh_params(), 0.01);
  train(opt, 1);
  const NamedTensors good = opt.state();
  Adam other(fresh_params(), 0.01);
  auto message = [&](const NamedTensors& s) { return error_of([&] { other.load_state(s); }); };

  EXPECT_EQ(message(with(good, "exp_avg.1", zeros({2, 2}))),
            "Adam.load_state: \"exp_avg.1\" is float32 (2, 2), expected float32 (4)");
  EXPECT_NE(message(with(good, "exp_avg_sq.0", zeros({3, 2}, DType::Float64))).find("exp_avg_sq.0"),
            std::string::npos);
  EXPECT_EQ(message(with(good, "exp_avg.0", Tensor())),
            "Adam.load_state: missing key \"exp_avg.0\"");
  NamedTensors extra = good;
  extra.emplace_back("momentum_buffer.0", zeros({3, 2}));
  EXPECT_EQ(message(extra), "Adam.load_state: unexpected key \"momentum_buffer.0\"");
  NamedTensors twice = good;
  twice.push_back(good[0]);
  EXPECT_EQ(message(twice), "Adam.load_state: duplicate key \"step\"");
  EXPECT_EQ(message(with(good, "beta1", scalar_tensor(0.9000001, DType::Float64))),
            "Adam.load_state: \"beta1\" is 0.9000001 in the state but 0.9 in this optimizer; build "
            "the optimizer with the saved value");
  EXPECT_NE(message(with(good, "param_steps", from_indices({1, 5}, {2}))).find("param_steps"),
            std::string::npos);

  // Every failure above left `other` untouched.
  EXPECT_EQ(other.step_count(), 0);
  for (const auto& [key, t] : other.state()) {
    if (key.rfind("exp_avg", 0) == 0) {
      EXPECT_EQ(max(abs(t)).item(), 0.0) << key;
    }
  }
  // SGD state into Adam: the first foreign key is named.
  SGD sgd(fresh_params(), 0.1);
  EXPECT_EQ(message(sgd.state()), "Adam.load_state: unexpected key \"momentum\"");
}

// ---- clip_grad_norm ---------------------------------------------------------------

TEST(ClipGradNorm, ScalesANormOfTenDownToOne) {
  Variable a = param({6.0}), b = param({0.0, 8.0}, DType::Float32);
  give_grad(a, {6.0});
  give_grad(b, {0.0, 8.0});
  EXPECT_DOUBLE_EQ(clip_grad_norm({a, b}, 1.0), 10.0);  // sqrt(36 + 64)
  const double coef = 1.0 / (10.0 + 1e-6);
  EXPECT_DOUBLE_EQ(a.grad().item(), 6.0 * coef);
  EXPECT_FLOAT_EQ(static_cast<float>(b.grad().at({1})), static_cast<float>(8.0 * coef));
  EXPECT_NEAR(clip_grad_norm({a, b}, 1.0), 1.0, 1e-6);
}

TEST(ClipGradNorm, UnderTheThresholdGradsAreBitwiseUnchanged) {
  Variable a = param({1.0, 2.0}, DType::Float32), b = param({3.0});
  give_grad(a, {0.1, -0.2});
  give_grad(b, {0.3});
  const Tensor ga = a.grad().clone(), gb = b.grad().clone();
  EXPECT_NEAR(clip_grad_norm({a, b}, 1.0), std::sqrt(0.01 + 0.04 + 0.09), 1e-7);
  EXPECT_TRUE(same_bytes(a.grad(), ga));
  EXPECT_TRUE(same_bytes(b.grad(), gb));
}

// As torch.nn.utils.clip_grad_norm_: the factor max_norm / (norm + 1e-6) is NaN for a NaN
// norm, which makes every gradient NaN (they were left as they were), and 0 for an infinite one.
TEST(ClipGradNorm, NonFiniteNormScalesEveryGradAsPyTorchDoes) {
  Variable a = param({1.0, 2.0}), b = param({1.0}, DType::Float32);
  give_grad(a, {std::nan(""), 100.0});
  give_grad(b, {100.0});
  EXPECT_TRUE(std::isnan(clip_grad_norm({a, b}, 1.0)));
  EXPECT_TRUE(std::isnan(a.grad().at({0})) && std::isnan(a.grad().at({1})));
  EXPECT_TRUE(std::isnan(b.grad().item()));
  const double inf = std::numeric_limits<double>::infinity();
  give_grad(a, {inf, 1.0});
  give_grad(b, {100.0});
  EXPECT_EQ(clip_grad_norm({a, b}, 1.0), inf);
  EXPECT_TRUE(std::isnan(a.grad().at({0})));  // inf * 0
  EXPECT_EQ(a.grad().at({1}), 0.0);
  EXPECT_EQ(b.grad().item(), 0.0);
}

TEST(ClipGradNorm, AccumulatesInDoubleSkipsMissingGradsAndCountsDuplicatesOnce) {
  Variable a = param({0.0, 0.0}, DType::Float32), none = param({1.0});
  give_grad(a, {3e20, 4e20});  // the squares overflow float32 but not double
  EXPECT_NEAR(clip_grad_norm({a, none, a}, 1e30), 5e20, 5e20 * 1e-7);
  EXPECT_FALSE(none.grad().defined());
  EXPECT_THROW(clip_grad_norm({a}, -1.0), Error);
}

// ---- convergence ---------------------------------------------------------------------

// Minimises sum(w * (p - 1)^2) from a random start; every optimizer gets p within 1e-3 of 1.
void expect_converges(const MakeOptimizer& make, int steps) {
  std::unique_ptr<Optimizer> opt = make(fresh_params());
  for (int s = 0; s < steps; ++s) {
    opt->zero_grad();
    backward_quadratic(opt->params());
    opt->step();
  }
  for (const Variable& p : opt->params()) EXPECT_LT(max(abs(sub(p.data(), 1.0))).item(), 1e-3);
}

TEST(Convergence, SGD) {
  expect_converges([](auto ps) { return std::make_unique<SGD>(std::move(ps), 0.02); }, 500);
}

TEST(Convergence, SGDMomentumAndNesterov) {
  expect_converges([](auto ps) { return std::make_unique<SGD>(std::move(ps), 0.02, 0.9); }, 300);
  expect_converges([](auto ps) { return std::make_unique<SGD>(std::move(ps), 0.02, 0.9, true); },
                   300);
}

TEST(Convergence, AdamAndAdamW) {
  expect_converges([](auto ps) { return std::make_unique<Adam>(std::move(ps), 0.05); }, 500);
  // Decoupled decay pulls towards 0 as well, so with a small decay p settles just below 1.
  expect_converges(
      [](auto ps) { return std::make_unique<AdamW>(std::move(ps), 0.05, 0.9, 0.999, 1e-8, 1e-5); },
      500);
}

}  // namespace
}  // namespace gradflow::nn
