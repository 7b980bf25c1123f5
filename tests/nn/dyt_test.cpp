// DyT (nn/dyt.h), the norm choice dyt: values against numbers worked out by
// hand at its start and after alpha moves (tanh(x) alpha, or alpha outside
// the gain, fails them), gradients in float64 in every argument and layout,
// its parameters, and models built with it.
#include <gtest/gtest.h>

#include "nn/dyt.h"
#include "nn/models.h"
#include "nn/norm_kinds.h"
#include "tests/nn/nn_check.h"

namespace gradflow::nn {
namespace {
using namespace gradflow::testing;

// weight [2, -1], bias [0.25, 0.5], x rows [1, -3] and [4, 0.5]:
// 2 tanh(alpha x0) + 0.25 and -tanh(alpha x1) + 0.5 (Python's math.tanh).
TEST(DyT, ValuesWorkedOutByHand) {
  std::shared_ptr<Norm> norm = norm_kind("dyt").make(2, DType::Float64);
  auto* d = dynamic_cast<DyT*>(norm.get());
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->alpha.data().item(), 0.5);
  expect_near_vec(d->weight.data(), {1, 1}, 0);
  expect_near_vec(d->bias.data(), {0, 0}, 0);
  Tensor(d->weight.data()).copy_(from_vector({2, -1}, DType::Float64));
  Tensor(d->bias.data()).copy_(from_vector({0.25, 0.5}, DType::Float64));
  const Variable x(from_vector({1, -3, 4, 0.5}, {2, 2}, DType::Float64));
  expect_near_vec(norm->forward(x).data(),
                  {1.1742343145200196, 1.4051482536448665, 2.178055160151634, 0.25508133759629087},
                  1e-15);
  Tensor(d->alpha.data()).fill_(2);
  expect_near_vec(norm->forward(x).data(),
                  {2.178055160151634, 1.4999877116507956, 2.2499995498593517, -0.26159415595576485},
                  1e-15);
  EXPECT_EQ(norm->describe(), "DyT(2)");
}

// Float64 central differences in x, alpha, weight and bias, with x in each
// layout and broadcast over its leading axis (stride 0).
TEST(DyT, GradientsInEveryArgumentAndLayout) {
  auto fn = [](const Vars& v) { return dyt(v[0] * 2.0, v[1], v[2], v[3]); };
  for (const Tensor& x : {dense({2, 3, 4}), transposed({2, 3, 4}), strided({2, 3, 4}),
                          dense({1, 3, 4}).expand({2, 3, 4})})
    EXPECT_GRADCHECK(fn, {x, positive({1}), dense({4}), dense({4})});
  EXPECT_GRADCHECK(fn, {dense({3, 4}), positive({1}), strided({4}), dense({1}).expand({4})});
  DyT layer(4, {}, DType::Float64);
  Variable x(dense({2, 3, 4}));
  expect_parameter_grads(layer, [&] { return layer.forward(x); });
}

TEST(DyT, ParametersAndRefusals) {
  DyT layer(6);
  std::vector<std::string> names;
  for (const auto& [name, p] : layer.named_parameters()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"alpha", "weight", "bias"}));
  EXPECT_EQ(layer.num_parameters(), 2 * 6 + 1);
  EXPECT_THROW(DyT(0), Error);
  EXPECT_THROW(layer.forward(Variable(zeros({2, 5}))), Error);
  const Variable w(ones({3})), b(zeros({3}));
  EXPECT_THROW(dyt(Variable(zeros({2, 3})), Variable(ones({2})), w, b), Error);
  EXPECT_THROW(dyt(Variable(zeros({2, 3})), Variable(ones({1})), w, Variable(zeros({2}))), Error);
}

// norm_type = "dyt" reaches every block's norms and the final one.
TEST(DyT, AModelBuiltWithItHasItEverywhere) {
  ModelConfig c;
  c.vocab = 9, c.d_model = 8, c.heads = 2, c.layers = 2, c.d_ff = 12, c.max_len = 8;
  c.norm_type = "dyt";
  Generator gen(3);
  EncoderDecoder m(c, gen);
  int64_t alphas = 0;
  for (const auto& [name, p] : m.named_parameters())
    alphas += name.find("norm.alpha") != std::string::npos;
  EXPECT_EQ(alphas, 2 * 2 + 3 * 2 + 1);  // encoder 2 a layer, decoder 3, the final one
  EXPECT_NE(dynamic_cast<DyT*>(m.final_norm.get()), nullptr);
}

}  // namespace
}  // namespace gradflow::nn
