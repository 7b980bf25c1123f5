// The attention probe (attention.h) with a score transform: its logits are
// scale * q k^T before the transform (what the study measures the scale
// by), its weights the softmax after it, and the logits stay a live graph
// node a gradient hook can watch. The transform is ALiBi's bias (alibi.cpp)
// through a layer, and a plain function through scaled_dot_product_attention.
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/ops.h"
#include "nn/attention.h"
#include "tensor/ops.h"
#include "tests/nn/nn_check.h"

namespace gradflow::nn {
namespace {
using namespace gradflow::testing;

// ALiBi's slopes for two heads: 2^(-8/2) and 2^(-16/2).
const double kSlopes[] = {0.0625, 0.00390625};

// (B, T, C) through `proj`, split into heads: (B, H, T, D).
Variable heads_of(const MultiHeadAttention& a, const Linear& proj, const Tensor& x) {
  const int64_t b = x.shape()[0], t = x.shape()[1];
  return transpose(reshape(proj.forward(Variable(x)), {b, t, a.heads(), a.d_k()}), 1, 2);
}

TEST(AttentionProbe, KeepsTheLogitsBeforeAScoreTransform) {
  Generator gen(4);
  MultiHeadAttention a(8, {.heads = 2, .positional = "alibi"}, {gen, DType::Float64});
  const Tensor x = mul(dense({2, 5, 8}), 3.0);  // logits well away from the bias's size
  a.record_probe = true;
  Variable x_var(x);
  Variable y = a.forward(x_var, x_var);

  // Before the transform: scale q k^T and nothing else.
  const Variable scaled =
      matmul(heads_of(a, *a.q_proj, x), transpose(heads_of(a, *a.k_proj, x), -1, -2)) *
      (1 / std::sqrt(static_cast<double>(a.d_k())));
  expect_close(a.probe.logits.data(), scaled.data(), 1e-12, "logits");

  // The weights are after it: softmax(logits - m_h |i - j|).
  Tensor bias = zeros({1, 2, 5, 5}, DType::Float64);
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t i = 0; i < 5; ++i)
      for (int64_t j = 0; j < 5; ++j)
        bias.set({0, h, i, j}, -kSlopes[h] * std::abs(static_cast<double>(i - j)));
  expect_close(a.probe.weights.data(), softmax(scaled + Variable(bias), -1).data(), 1e-12,
               "weights");

  // Still the graph's node: the gradient at the logits reaches a hook.
  Tensor seen;
  a.probe.logits.register_hook([&](const Tensor& g) {
    seen = g;
    return g;
  });
  sum(y).backward();
  ASSERT_TRUE(seen.defined());
  EXPECT_EQ(seen.shape(), (Shape{2, 2, 5, 5}));
}

TEST(AttentionProbe, ScaledDotProductAttentionKeepsTheTransformsInput) {
  const Variable q(dense({1, 1, 3, 4})), k(dense({1, 1, 4, 4})), v(dense({1, 1, 4, 4}));
  const Tensor mask = causal_mask(3, 4, DType::Float64, 1);
  AttentionProbe probe;
  // A transform that doubles the logits: had the probe kept its output, the
  // logits would be twice scale * q k^T.
  Variable out = scaled_dot_product_attention(q, k, v, mask, 0.5, &probe,
                                              [](const Variable& logits) { return logits * 2.0; });
  const Variable scaled = matmul(q, transpose(k, -1, -2)) * 0.5;
  expect_close(probe.logits.data(), scaled.data(), 1e-12, "logits");
  // The output is the transform's: the same as scale 1 without a transform.
  AttentionProbe plain;
  expect_close(out.data(), scaled_dot_product_attention(q, k, v, mask, 1.0, &plain).data(), 1e-12,
               "output");
  expect_close(probe.weights.data(), plain.weights.data(), 1e-12, "weights");
  EXPECT_TRUE(probe.mask.defined());
}

}  // namespace
}  // namespace gradflow::nn
