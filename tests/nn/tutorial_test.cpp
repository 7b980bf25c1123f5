// The code of docs/tutorial_add_a_layer.md, compiled and run, so the
// tutorial cannot drift from the library. Keep the two in step.
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "nn/linear.h"
#include "nn/module.h"
#include "tensor/map.h"
#include "tensor/ops.h"

namespace tutorial {
using namespace gradflow;

// ---- Step 1: an op with its backward -------------------------------------
// softplus(x) = log(1 + exp(x)); d/dx = sigmoid(x) = 1 / (1 + exp(-x)).
Variable softplus(const Variable& x) {
  const Tensor xd = x.data();
  // Forward: one elementwise kernel. log1p(exp(x)) overflows for large x,
  // so use the stable form max(x, 0) + log1p(exp(-|x|)).
  Tensor y = map_unary(xd, "softplus", [](auto v) {
    return std::max(v, decltype(v){0}) + std::log1p(std::exp(-std::abs(v)));
  });
  // Backward: the output gradient times sigmoid(x), in one fused pass.
  return make_result(y, "softplus", {x}, [xd](const Tensor& g) {
    return std::vector<Tensor>{map_binary(g, xd, "softplus_backward",
                                          [](auto gv, auto v) { return gv / (1 + std::exp(-v)); })};
  });
}

// ---- Step 3: a layer built from it ---------------------------------------
// A gated feed-forward block: y = fc_out(softplus(fc_gate(x)) * fc_up(x)).
class GatedFeedForward : public nn::Module {
 public:
  GatedFeedForward(int64_t dim, int64_t hidden, nn::Init init = {}) {
    auto linear = [&](int64_t from, int64_t to) {
      return std::make_shared<nn::Linear>(from, to, nn::LinearOptions{}, init);
    };
    gate = register_module("gate", linear(dim, hidden));
    up = register_module("up", linear(dim, hidden));
    out = register_module("out", linear(hidden, dim));
  }
  Variable forward(const Variable& x) const {
    return out->forward(softplus(gate->forward(x)) * up->forward(x));
  }
  std::string describe() const override { return "GatedFeedForward"; }
  std::shared_ptr<nn::Linear> gate, up, out;
};

// ---- Step 2: the op's tests ----------------------------------------------
TEST(Tutorial, SoftplusValues) {
  Variable x(from_vector({-30, 0, 2, 100}, DType::Float64));
  std::vector<double> y = softplus(x).data().to_vector();
  EXPECT_NEAR(y[0], std::log1p(std::exp(-30.0)), 1e-18);
  EXPECT_NEAR(y[1], std::log(2.0), 1e-15);
  EXPECT_NEAR(y[2], std::log1p(std::exp(2.0)), 1e-15);
  EXPECT_EQ(y[3], 100);  // no overflow
}

TEST(Tutorial, SoftplusGradcheck) {
  Generator gen(0);
  auto fn = [](const std::vector<Variable>& v) { return softplus(v[0]); };
  Tensor x = randn({3, 4}, gen, DType::Float64);
  for (Tensor input : {x, x.transpose(0, 1), x.slice(1, 0, 4, 2)}) {
    GradcheckResult r = gradcheck(fn, {input});
    EXPECT_TRUE(r.ok) << r.message;
  }
}

// ---- Step 4: the layer's tests ---------------------------------------------
TEST(Tutorial, GatedFeedForwardNamesShapesAndGradients) {
  Generator gen(1);
  GatedFeedForward layer(4, 6, {gen, DType::Float64});
  EXPECT_EQ(layer.num_parameters(), 3 * 4 * 6 + 6 + 6 + 4);
  EXPECT_EQ(layer.named_parameters()[0].first, "gate.weight");
  // Gradient with respect to the input, through every parameter.
  GradcheckResult r = gradcheck([&](const std::vector<Variable>& v) { return layer.forward(v[0]); },
                                {randn({2, 3, 4}, gen, DType::Float64)});
  EXPECT_TRUE(r.ok) << r.message;
  // And every parameter receives a gradient.
  Variable x(randn({2, 4}, gen, DType::Float64));
  sum(layer.forward(x)).backward();
  for (auto& [name, p] : layer.named_parameters()) EXPECT_TRUE(p.grad().defined()) << name;
}

}  // namespace tutorial
