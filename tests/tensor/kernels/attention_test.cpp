// The attention kernels against a loop written here: softmax(scale q k^T,
// masked -inf) v per head, and the gradients by the textbook formulas, on
// heads read in place from a (B, T, H * D) projection and on contiguous ones.
#include "tensor/kernels/attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tensor/creation.h"
#include "tests/tensor/testing.h"
#include "tests/tensor/threads_for.h"

namespace gradflow {
namespace {

using testing::element;
using testing::elements;
using testing::error_message;
using testing::expect_tensor;
using testing::sample;

constexpr int64_t B = 2, H = 3, T = 4, S = 5, D = 3, Dv = 2;

// Heads as a transformer has them: (B, T, H * D) split into (B, H, T, D) views.
Tensor split_heads(const Tensor& x, int64_t d) {
  return x.view({x.shape()[0], x.shape()[1], H, d}).transpose(1, 2);
}

struct Reference {
  std::vector<double> out, dq, dk, dv;  // row-major over (B, H, ...)
};

// Everything by the definition, in double, one head at a time.
Reference naive(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                const Tensor& dout, double scale) {
  Reference r;
  r.out.assign(B * H * T * Dv, 0);
  r.dq.assign(B * H * T * D, 0);
  r.dk.assign(B * H * S * D, 0);
  r.dv.assign(B * H * S * Dv, 0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      std::vector<double> p(T * S, 0), dp(T * S, 0);
      for (int64_t i = 0; i < T; ++i) {
        double top = -std::numeric_limits<double>::infinity();
        std::vector<double> z(S);
        for (int64_t j = 0; j < S; ++j) {
          double dot = 0;
          for (int64_t c = 0; c < D; ++c)
            dot += element(q, {b, h, i, c}) * element(k, {b, h, j, c});
          const bool hidden = mask.defined() && element(mask, {i, j}) != 0;
          z[j] = hidden ? -std::numeric_limits<double>::infinity() : dot * scale;
          top = std::max(top, z[j]);
        }
        if (std::isinf(top)) continue;  // every key hidden: zeros
        double total = 0;
        for (int64_t j = 0; j < S; ++j) total += std::exp(z[j] - top);
        for (int64_t j = 0; j < S; ++j) p[i * S + j] = std::exp(z[j] - top) / total;
      }
      const int64_t head = b * H + h;
      for (int64_t i = 0; i < T; ++i)
        for (int64_t c = 0; c < Dv; ++c)
          for (int64_t j = 0; j < S; ++j) {
            r.out[(head * T + i) * Dv + c] += p[i * S + j] * element(v, {b, h, j, c});
            r.dv[(head * S + j) * Dv + c] += p[i * S + j] * element(dout, {b, h, i, c});
            dp[i * S + j] += element(dout, {b, h, i, c}) * element(v, {b, h, j, c});
          }
      for (int64_t i = 0; i < T; ++i) {
        double dot = 0;
        for (int64_t j = 0; j < S; ++j) dot += p[i * S + j] * dp[i * S + j];
        for (int64_t j = 0; j < S; ++j) {
          const double ds = p[i * S + j] * (dp[i * S + j] - dot) * scale;
          for (int64_t c = 0; c < D; ++c) {
            r.dq[(head * T + i) * D + c] += ds * element(k, {b, h, j, c});
            r.dk[(head * S + j) * D + c] += ds * element(q, {b, h, i, c});
          }
        }
      }
    }
  return r;
}

// A causal-style mask with the last query hiding every key.
Tensor test_mask() {
  Tensor m = zeros({T, S}, DType::Int64);
  for (int64_t i = 0; i < T; ++i)
    for (int64_t j = i + 2; j < S; ++j) m.set({i, j}, 1);
  for (int64_t j = 0; j < S; ++j) m.set({T - 1, j}, 1);
  return m;
}

TEST(Attention, ForwardAndBackwardAgainstTheLoop) {
  for (DType dt : {DType::Float64, DType::Float32}) {
    const double tol = dt == DType::Float64 ? 1e-12 : 2e-5;
    // In place from projections, and plain contiguous heads.
    const Tensor projections[] = {split_heads(sample({B, T, H * D}, dt, 1), D),
                                  split_heads(sample({B, S, H * D}, dt, 2), D),
                                  split_heads(sample({B, S, H * Dv}, dt, 3), Dv)};
    const Tensor contiguous[] = {sample({B, H, T, D}, dt, 1), sample({B, H, S, D}, dt, 2),
                                 sample({B, H, S, Dv}, dt, 3)};
    const Tensor dout = sample({B, H, T, Dv}, dt, 4);
    for (const Tensor* qkv : {projections, contiguous})
      for (const Tensor& mask : {Tensor(), test_mask()}) {
        SCOPED_TRACE(std::string(dtype_name(dt)) + (mask.defined() ? " masked" : " unmasked") +
                     (qkv == projections ? " split heads" : " contiguous"));
        const Tensor &q = qkv[0], &k = qkv[1], &v = qkv[2];
        const Reference want = naive(q, k, v, mask, dout, 0.6);
        const AttentionForward f = attention_forward(q, k, v, 0.6, mask);
        expect_tensor(f.out, {B, H, T, Dv}, want.out, tol);
        const AttentionGrads g =
            attention_backward(dout, q, k, v, f.row_max, f.row_inv, 0.6, mask, true, true, true);
        expect_tensor(g.dq, {B, H, T, D}, want.dq, tol);
        expect_tensor(g.dk, {B, H, S, D}, want.dk, tol);
        expect_tensor(g.dv, {B, H, S, Dv}, want.dv, tol);
        // Laid out like the inputs: heads from a projection merge back by a view.
        EXPECT_EQ(f.out.transpose(1, 2).is_contiguous(), qkv == projections);
        EXPECT_EQ(g.dk.transpose(1, 2).is_contiguous(), qkv == projections);
        EXPECT_TRUE(f.out.is_contiguous() || qkv == projections);
      }
  }
}

TEST(Attention, OnlyTheGradientsAskedForAndTheSameBitsAtAnyThreadCount) {
  const Tensor q = sample({B, H, T, D}, DType::Float32, 1),
               k = sample({B, H, S, D}, DType::Float32, 2),
               v = sample({B, H, S, Dv}, DType::Float32, 3),
               dout = sample({B, H, T, Dv}, DType::Float32, 4);
  std::vector<std::vector<double>> runs;
  for (int threads : {1, 2}) {
    testing::ThreadsFor guard(threads);
    const AttentionForward f = attention_forward(q, k, v, 0.5, test_mask());
    const AttentionGrads g = attention_backward(dout, q, k, v, f.row_max, f.row_inv, 0.5,
                                                test_mask(), false, true, false);
    EXPECT_FALSE(g.dq.defined());
    EXPECT_FALSE(g.dv.defined());
    std::vector<double> all = elements(f.out), dk = elements(g.dk);
    all.insert(all.end(), dk.begin(), dk.end());
    runs.push_back(all);
  }
  EXPECT_EQ(runs[0], runs[1]);
}

TEST(Attention, FullyMaskedQueriesGiveZerosAndNoKeysAtAll) {
  const Tensor q = sample({1, 2, 3}), k = sample({1, 4, 3}), v = sample({1, 4, 2});
  const AttentionForward f = attention_forward(q, k, v, 1.0, ones({2, 4}));
  expect_tensor(f.out, {1, 2, 2}, {0, 0, 0, 0});
  const AttentionGrads g = attention_backward(ones({1, 2, 2}, DType::Float64), q, k, v, f.row_max,
                                              f.row_inv, 1.0, ones({2, 4}), true, true, true);
  expect_tensor(g.dq, {1, 2, 3}, std::vector<double>(6, 0));
  expect_tensor(g.dk, {1, 4, 3}, std::vector<double>(12, 0));
  // S = 0: nothing to attend to.
  const AttentionForward e = attention_forward(q, zeros({1, 0, 3}, DType::Float64),
                                               zeros({1, 0, 2}, DType::Float64), 1.0, Tensor());
  expect_tensor(e.out, {1, 2, 2}, {0, 0, 0, 0});
}

TEST(Attention, Errors) {
  EXPECT_EQ(error_message([] {
              attention_forward(zeros({2, 3, 4}), zeros({2, 5, 3}), zeros({2, 5, 2}), 1, Tensor());
            }),
            "attention: expected q (..., T, D), k (..., S, D), v (..., S, Dv) with the same batch "
            "axes, got (2, 3, 4), (2, 5, 3), (2, 5, 2)");
  EXPECT_EQ(
      error_message([] {
        attention_forward(zeros({2, 3, 4}), zeros({2, 5, 4}), zeros({2, 5, 2}), 1, zeros({4, 5}));
      }),
      "attention: mask of shape (4, 5) does not broadcast to the scores (2, 3, 5)");
  EXPECT_TRUE(testing::contains(
      error_message([] {
        attention_forward(zeros({3, 4}), zeros({5, 4}, DType::Float64), zeros({5, 2}), 1, Tensor());
      }),
      "attention: dtypes differ"));
}

}  // namespace
}  // namespace gradflow
