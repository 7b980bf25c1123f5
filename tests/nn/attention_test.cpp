// scaled_dot_product_attention against the library's composed reference
// (fused_attention_reference) in double for every scale mode and mask kind;
// gradient checks; fully masked queries; ScaleMode parsing; the probe and a
// gradient hook at the logits; the fused path (no probe, fixed scale)
// against the composed one.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "nn/attention.h"
#include "tensor/matmul.h"
#include "tests/nn/nn_check.h"

namespace gradflow::nn {
namespace {
using namespace gradflow::testing;

constexpr int64_t B = 2, H = 2, T = 3, S = 4, D = 3, Dv = 2;

// The reference in double: fused_attention_reference's output (B, H, T, Dv),
// and its weights (B, H, T, S), 0 where masked, which it returns for v the
// identity (S, S); the logits scale q k^T (before masking) from
// matmul_reference, the plain triple loop.
std::vector<double> reference_out(const Tensor& q, const Tensor& k, const Tensor& v,
                                  const Tensor& mask, double scale) {
  auto f64 = [](const Tensor& t) { return Variable(t.to(DType::Float64)); };
  return fused_attention_reference(f64(q), f64(k), f64(v), scale, mask).data().to_vector();
}
std::vector<double> reference_weights(const Tensor& q, const Tensor& k, const Tensor& mask,
                                      double scale) {
  const int64_t s = k.shape()[2];
  Tensor identity = zeros({s, s}, DType::Float64);
  for (int64_t j = 0; j < s; ++j) identity.set({j, j}, 1);
  return reference_out(q, k, identity, mask, scale);
}
std::vector<double> reference_logits(const Tensor& q, const Tensor& k, double scale) {
  return mul(matmul_reference(q, k.transpose(-1, -2)), scale).to_vector();
}

// Key padding: batch 0 hides its last key, batch 1 its last two. (B, 1, 1, S).
Tensor padding_mask() {
  return from_vector({0, 0, 0, 1, 0, 0, 1, 1}, {B, 1, 1, S}, DType::Float64);
}

// Causal with the queries at the end of the keys: query i sees keys <= i + S - T.
Tensor causal() { return causal_mask(T, S, DType::Float64, S - T); }

TEST(CausalMask, OnesAboveTheShiftedDiagonal) {
  Tensor m = causal_mask(3, 5, DType::Float32, 1);
  ASSERT_EQ(m.shape(), (Shape{3, 5})) << "the mask is (T, S): 3 queries by 5 keys";
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 5; ++j)
      EXPECT_EQ(m.at({i, j}), j > i + 1 ? 1.0 : 0.0)
          << "offset 1: query " << i << " sits at position " << i + 1 << ", so key " << j
          << (j > i + 1 ? " is in its future: hidden, 1" : " is not in its future: seen, 0");
  EXPECT_EQ(causal_mask(4, 4).at({0, 1}), 1.0) << "no offset: query 0 must not see key 1";
  EXPECT_EQ(causal_mask(4, 4).at({1, 1}), 0.0) << "no offset: query 1 sees itself, key 1";
}

TEST(Attention, EveryScaleModeAndMaskMatchesTheReference) {
  Tensor q = dense({B, H, T, D}), k = dense({B, H, S, D}), v = dense({B, H, S, Dv});
  // The factor each fixed mode stands for, written out independently.
  const std::vector<std::pair<std::string, double>> modes = {
      {"inv_sqrt_dk", 1 / std::sqrt(3.0)},
      {"none", 1.0},
      {"inv_dk", 1 / 3.0},
      {"inv_2sqrt_dk", 1 / (2 * std::sqrt(3.0))},
      {"const:0.3", 0.3}};
  for (const Tensor& mask : {Tensor(), causal(), padding_mask()}) {
    for (const auto& [name, factor] : modes) {
      const double fixed = ScaleMode::parse(name).value(D);
      EXPECT_DOUBLE_EQ(fixed, factor) << name;
      Variable out =
          scaled_dot_product_attention(Variable(q), Variable(k), Variable(v), mask, fixed);
      ASSERT_EQ(out.shape(), (Shape{B, H, T, Dv}));
      expect_near_vec(out.data(), reference_out(q, k, v, mask, factor), 1e-12);
    }
  }
  // A (T, S) float32 mask on float32 inputs.
  Tensor m32 = causal_mask(T, S, DType::Float32, S - T);
  Variable out =
      scaled_dot_product_attention(Variable(q.to(DType::Float32)), Variable(k.to(DType::Float32)),
                                   Variable(v.to(DType::Float32)), m32, 0.5);
  expect_near_vec(out.data(), reference_out(q, k, v, causal(), 0.5), 1e-5);
}

TEST(Attention, GradcheckQueriesKeysValuesAndAScaleOnQ) {
  for (const Tensor& mask : {Tensor(), causal(), padding_mask()}) {
    EXPECT_GRADCHECK(
        [&](const Vars& v) { return scaled_dot_product_attention(v[0], v[1], v[2], mask, 0.6); },
        {dense({B, H, T, D}), dense({B, H, S, D}), dense({B, H, S, Dv})});
    EXPECT_GRADCHECK(
        [&](const Vars& v) {
          // A learned scale is a variant on q (scale_modes.h): q times it.
          return scaled_dot_product_attention(v[0] * v[3], v[1], v[2], mask, 1.0);
        },
        {dense({B, H, T, D}), dense({B, H, S, D}), dense({B, H, S, Dv}),
         full({1}, 0.8, DType::Float64)});
  }
  // Non-contiguous q and k, as the heads split of a projection makes them.
  EXPECT_GRADCHECK(
      [&](const Vars& v) { return scaled_dot_product_attention(v[0], v[1], v[2], causal(), 0.6); },
      {transposed({1, H, T, D}), strided({1, H, S, D}), dense({1, H, S, Dv})});
}

TEST(Attention, FullyMaskedQueryGivesZeroOutputAndZeroGradients) {
  // Query 0 sees no key in any batch; batch 1 sees no key at all.
  Tensor mask = zeros({B, 1, T, S}, DType::Float64);
  for (int64_t s = 0; s < S; ++s) {
    mask.set({0, 0, 0, s}, 1);
    for (int64_t t = 0; t < T; ++t) mask.set({1, 0, t, s}, 1);
  }
  mask.set({0, 0, 1, 2}, 1);
  AnomalyGuard anomaly;  // any NaN or Inf in a backward formula throws
  Variable q(dense({B, H, T, D}), true), k(dense({B, H, S, D}), true),
      v(dense({B, H, S, Dv}), true);
  Variable scale(full({1}, 0.5, DType::Float64), true);
  AttentionProbe probe;
  Variable out = scaled_dot_product_attention(q * scale, k, v, mask, 1.0, &probe);
  expect_all_finite(out.data(), "output");
  expect_all_finite(probe.weights.data(), "weights");
  expect_near_vec(out.data(), reference_out(q.data(), k.data(), v.data(), mask, 0.5), 1e-12);
  for (int64_t h = 0; h < H; ++h) {
    expect_all_equal(out.data().select(0, 0).select(0, h).select(0, 0), 0, "batch 0 query 0");
    expect_all_equal(probe.weights.data().select(0, 0).select(0, h).select(0, 0), 0, "weights");
  }
  expect_all_equal(out.data().select(0, 1), 0, "batch 1");
  ASSERT_NO_THROW(sum(out * Variable(dense(out.shape()))).backward());
  for (const Variable* g : {&q, &k, &v, &scale}) expect_all_finite(g->grad(), "gradient");
  expect_all_equal(q.grad().select(0, 1), 0, "q.grad of batch 1");
  expect_all_equal(k.grad().select(0, 1), 0, "k.grad of batch 1");
  expect_all_equal(v.grad().select(0, 1), 0, "v.grad of batch 1");
  for (int64_t h = 0; h < H; ++h)
    expect_all_equal(q.grad().select(0, 0).select(0, h).select(0, 0), 0, "q.grad of query 0");
  // The unmasked queries still get gradients.
  EXPECT_NE(q.grad().select(0, 0).select(0, 0).select(0, 2).to_vector(), std::vector<double>(D, 0));
}

TEST(Attention, FusedPathMatchesTheComposedPath) {
  // Without a probe and with a fixed scale the weights come from the fused
  // attention kernel; with a probe, from mul, masked_fill and softmax.
  // Same values and gradients, in float32 and float64, for every mask kind
  // (the last hides every key of batch 1). S = 9 keys so that the rows have
  // more entries than the kernels' eight partial sums.
  const int64_t s9 = 9;
  Tensor all_of_b1 = zeros({B, 1, 1, s9}, DType::Float64);
  for (int64_t j = 0; j < s9; ++j) all_of_b1.set({1, 0, 0, j}, 1);
  for (DType dtype : {DType::Float32, DType::Float64}) {
    const double tol = dtype == DType::Float32 ? 1e-5 : 1e-12;
    Tensor q = dense({B, H, T, D}).to(dtype), k = dense({B, H, s9, D}).to(dtype),
           v = dense({B, H, s9, Dv}).to(dtype), r = dense({B, H, T, Dv}).to(dtype);
    for (const Tensor& mask : {Tensor(), causal_mask(T, s9, dtype, s9 - T), all_of_b1}) {
      std::vector<Tensor> results;
      for (bool with_probe : {false, true}) {
        Variable vq(q, true), vk(k, true), vv(v, true);
        AttentionProbe probe;
        Variable out =
            scaled_dot_product_attention(vq, vk, vv, mask, 0.45, with_probe ? &probe : nullptr);
        sum(out * Variable(r)).backward();
        for (const Tensor& t : {out.data(), vq.grad(), vk.grad(), vv.grad()}) results.push_back(t);
      }
      for (size_t i = 0; i < 4; ++i) {
        expect_close(results[i], results[i + 4], tol,
                     "output and q, k, v gradients " + std::to_string(i));
        expect_all_finite(results[i], "fused");
      }
    }
  }
}

TEST(Attention, RejectsMismatchedShapes) {
  Variable q(dense({1, 1, 3, 4})), k(dense({1, 1, 5, 4})), v(dense({1, 1, 5, 2}));
  EXPECT_NO_THROW(scaled_dot_product_attention(q, k, v, Tensor(), 1.0));
  EXPECT_THROW(scaled_dot_product_attention(q, Variable(dense({1, 1, 5, 3})), v, Tensor(), 1.0),
               Error);
  EXPECT_THROW(scaled_dot_product_attention(q, k, Variable(dense({1, 1, 4, 2})), Tensor(), 1.0),
               Error);
  EXPECT_THROW(scaled_dot_product_attention(q, Variable(dense({1, 5, 4})), v, Tensor(), 1.0),
               Error);
  EXPECT_THROW(scaled_dot_product_attention(q, k, v, zeros({4, 5}), 1.0), Error);
}

TEST(ScaleMode, ParsesEveryNameAndRoundTrips) {
  const std::vector<std::string> names = {"inv_sqrt_dk", "none",        "inv_dk",  "inv_2sqrt_dk",
                                          "learned",     "learned_log", "qk_norm", "qk_l2norm",
                                          "log_n",       "ssmax"};
  // Every entry of the table but const, which needs its value.
  ASSERT_EQ(scale_modes().size(), names.size() + 1);
  for (const auto& name : names) {
    ScaleMode m = ScaleMode::parse(name);
    EXPECT_TRUE(m.is(name.c_str())) << name;
    EXPECT_EQ(m.name(), name);
    EXPECT_EQ(ScaleMode(name), m);
  }
  EXPECT_TRUE(ScaleMode{}.is("inv_sqrt_dk"));
  // The fixed factors; a mode whose variant scales q has 1.
  EXPECT_DOUBLE_EQ(ScaleMode::parse("qk_norm").value(16), 0.25);
  for (const char* on_q : {"learned", "learned_log", "qk_l2norm", "log_n", "ssmax"})
    EXPECT_DOUBLE_EQ(ScaleMode::parse(on_q).value(16), 1.0) << on_q;
  for (std::string c : {"const:0.3", "const:0.125", "const:2", "const:1e-3"}) {
    ScaleMode m = ScaleMode::parse(c);
    EXPECT_TRUE(m.is("const"));
    EXPECT_DOUBLE_EQ(m.value(64), std::stod(c.substr(6)));
    EXPECT_EQ(ScaleMode::parse(m.name()).constant(), m.constant()) << c;
  }
  EXPECT_EQ(ScaleMode::parse("const:0.3").name(), "const:0.3");
  for (std::string bad : {"const:", "const:-1", "const:0", "const:abc", "const:0.5x", "const:inf",
                          "const:nan", "foo", "", "INV_DK", "const"})
    EXPECT_THROW(ScaleMode::parse(bad), Error) << "'" << bad << "'";
  // The error lists what would have been accepted, from the table.
  try {
    ScaleMode::parse("log-n");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("log_n, ssmax"), std::string::npos) << e.what();
  }
}

// Attention runs in float32, where a larger constant would be infinity.
TEST(ScaleMode, AConstantMustFitInFloat32) {
  EXPECT_EQ(ScaleMode::parse("const:3e38").constant(), 3e38);
  for (std::string bad : {"const:1e300", "const:3.5e38"}) {
    try {
      ScaleMode::parse(bad);
      FAIL() << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("does not fit in float32"), std::string::npos)
          << e.what();
    }
  }
}

TEST(ScaleMode, ConstantNameKeepsEveryDigit) {
  // Sweeps of d_k^-alpha give constants like 64^-0.75; the name is what goes
  // into files and flags, so reading it back must give the same number.
  const double c = std::pow(64.0, -0.75);
  char text[64];
  std::snprintf(text, sizeof text, "const:%.17g", c);
  ScaleMode m = ScaleMode::parse(text);
  EXPECT_EQ(ScaleMode::parse(m.name()).constant(), c) << m.name();
  ScaleMode p = ScaleMode::parse("const:0.21022410381342863");
  EXPECT_EQ(ScaleMode::parse(p.name()).constant(), p.constant()) << p.name();
}

TEST(AttentionProbe, RecordsLogitsAndWeightsWithoutChangingTheOutput) {
  Tensor q = dense({B, H, T, D}), k = dense({B, H, S, D}), v = dense({B, H, S, Dv});
  for (const Tensor& mask : {Tensor(), causal(), padding_mask()}) {
    AttentionProbe probe;
    Variable with =
        scaled_dot_product_attention(Variable(q), Variable(k), Variable(v), mask, 0.4, &probe);
    Variable without =
        scaled_dot_product_attention(Variable(q), Variable(k), Variable(v), mask, 0.4);
    // Equal to rounding: without the probe the fused kernel computes the weights.
    expect_close(with.data(), without.data(), 1e-14);
    ASSERT_EQ(probe.logits.shape(), (Shape{B, H, T, S}));
    ASSERT_EQ(probe.weights.shape(), (Shape{B, H, T, S}));
    expect_near_vec(probe.logits.data(), reference_logits(q, k, 0.4),
                    1e-12);  // unmasked: before masking
    expect_near_vec(probe.weights.data(), reference_weights(q, k, mask, 0.4), 1e-12);
    std::vector<double> w = probe.weights.data().to_vector();
    for (int64_t row = 0; row < B * H * T; ++row) {
      double total = 0;
      for (int64_t s = 0; s < S; ++s) total += w[row * S + s];
      EXPECT_NEAR(total, 1.0, 1e-12) << "row " << row;
    }
  }
}

TEST(AttentionProbe, HookOnTheLogitsSeesTheirGradient) {
  Variable q(dense({B, H, T, D}), true), k(dense({B, H, S, D}), true),
      v(dense({B, H, S, Dv}), true);
  const double scale = 0.4;
  AttentionProbe probe;
  Variable out = scaled_dot_product_attention(q, k, v, causal(), scale, &probe);
  Tensor seen;
  int calls = 0;
  probe.logits.register_hook([&](const Tensor& g) {
    seen = g.clone();
    ++calls;
    return Tensor();
  });
  sum(out * Variable(dense(out.shape()))).backward();
  ASSERT_EQ(calls, 1);
  ASSERT_EQ(seen.shape(), (Shape{B, H, T, S}));
  // Masked logits get no gradient, and dq = scale * G k, the chain rule
  // through logits = scale * q k^T.
  Tensor m = causal().expand({B, H, T, S});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t) {
        for (int64_t s = 0; s < S; ++s)
          if (m.at({b, h, t, s}) != 0) {
            EXPECT_EQ(seen.at({b, h, t, s}), 0);
          }
        for (int64_t d = 0; d < D; ++d) {
          double dq = 0;
          for (int64_t s = 0; s < S; ++s)
            dq += scale * seen.at({b, h, t, s}) * k.data().at({b, h, s, d});
          EXPECT_NEAR(q.grad().at({b, h, t, d}), dq, 1e-12);
        }
      }
}

}  // namespace
}  // namespace gradflow::nn
