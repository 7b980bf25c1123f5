// matmul (BLAS) against matmul_reference and against a loop written here,
// on batched, broadcast, transposed, sliced, size-1 and size-0 operands.
#include "tensor/matmul.h"

#include <gtest/gtest.h>

#include <array>

#include "tensor/creation.h"
#include "tensor/kernels/gemm.h"
#include "tests/tensor/testing.h"
#include "tests/tensor/threads_for.h"

namespace gradflow {
namespace {

using testing::broadcast_index;
using testing::contains;
using testing::element;
using testing::elements;
using testing::error_message;
using testing::expect_tensor;
using testing::for_each_index;
using testing::Index;
using testing::sample;

// out[..., i, j] = sum_t a[..., i, t] b[..., t, j], batch axes broadcast;
// `out` is the expected result shape, written out by hand in each test.
std::vector<double> naive_matmul(const Tensor& a, const Tensor& b, const Shape& out) {
  const int64_t k = a.shape().back();
  Shape batch_a(a.shape().begin(), a.shape().end() - 2),
      batch_b(b.shape().begin(), b.shape().end() - 2);
  std::vector<double> expected;
  for_each_index(out, [&](const Index& o) {
    Index batch(o.begin(), o.end() - 2);
    Index ia = broadcast_index(batch, batch_a), ib = broadcast_index(batch, batch_b);
    ia.insert(ia.end(), {o[o.size() - 2], 0});
    ib.insert(ib.end(), {0, o.back()});
    double acc = 0;
    for (int64_t t = 0; t < k; ++t) {
      ia.back() = t;
      ib[ib.size() - 2] = t;
      acc += element(a, ia) * element(b, ib);
    }
    expected.push_back(acc);
  });
  return expected;
}

// Checks matmul and matmul_reference against the loop.
void expect_matmul(const Tensor& a, const Tensor& b, const Shape& out) {
  SCOPED_TRACE(shape_str(a.shape()) + " strides " + shape_str(a.strides()) + " @ " +
               shape_str(b.shape()) + " strides " + shape_str(b.strides()) + " " +
               std::string(dtype_name(a.dtype())));
  double tol = a.dtype() == DType::Float64 ? 1e-13 : 2e-6;
  std::vector<double> expected = naive_matmul(a, b, out);
  Tensor fast = matmul(a, b);
  EXPECT_EQ(fast.dtype(), a.dtype());
  expect_tensor(fast, out, expected, tol);
  expect_tensor(matmul_reference(a, b), out, expected, tol);
}

TEST(Matmul, HandComputed2D) {
  Tensor a = from_vector({1, 2, 3, 4}, {2, 2}, DType::Float64);
  Tensor b = from_vector({5, 6, 7, 8}, {2, 2}, DType::Float64);
  expect_tensor(matmul(a, b), {2, 2}, {19, 22, 43, 50});
  expect_tensor(matmul(a.transpose(0, 1), b), {2, 2}, {26, 30, 38, 44});
  expect_tensor(matmul(a, b.transpose(0, 1)), {2, 2}, {17, 23, 39, 53});
  Tensor row = from_vector({1, 2, 3}, {1, 3}), col = from_vector({4, 5, 6}, {3, 1});
  expect_tensor(matmul(row, col), {1, 1}, {32});
  expect_tensor(matmul(col, row), {3, 3}, {4, 8, 12, 5, 10, 15, 6, 12, 18});
}

TEST(Matmul, TwoDimensionalBothDtypes) {
  for (DType dt : {DType::Float64, DType::Float32}) {
    expect_matmul(sample({3, 4}, dt, 1), sample({4, 5}, dt, 2), {3, 5});
    expect_matmul(sample({7, 33}, dt, 3), sample({33, 9}, dt, 4), {7, 9});
    expect_matmul(sample({64, 48}, dt, 5), sample({48, 40}, dt, 6), {64, 40});
  }
}

TEST(Matmul, BatchedWithBroadcastBatchDims) {
  for (DType dt : {DType::Float64, DType::Float32}) {
    expect_matmul(sample({2, 3, 4, 5}, dt, 1), sample({5, 6}, dt, 2), {2, 3, 4, 6});
    expect_matmul(sample({1, 3, 4}, dt, 3), sample({2, 4, 5}, dt, 4), {2, 3, 5});
    expect_matmul(sample({2, 1, 3, 4}, dt, 5), sample({5, 4, 6}, dt, 6), {2, 5, 3, 6});
    expect_matmul(sample({3, 4}, dt, 7), sample({2, 4, 5}, dt, 8), {2, 3, 5});
    expect_matmul(sample({2, 3, 4}, dt, 9), sample({2, 4, 5}, dt, 1), {2, 3, 5});
  }
}

TEST(Matmul, TransposedOperands) {
  for (DType dt : {DType::Float64, DType::Float32}) {
    Tensor a = sample({4, 3}, dt, 1), b = sample({5, 4}, dt, 2);
    expect_matmul(a.transpose(0, 1), b.transpose(0, 1), {3, 5});
    expect_matmul(a.transpose(0, 1), sample({4, 6}, dt, 3), {3, 6});
    expect_matmul(sample({6, 4}, dt, 4), b.transpose(0, 1), {6, 5});
    // Batched: the last two axes swapped, and the batch axes permuted.
    Tensor ba = sample({2, 5, 3}, dt, 5).transpose(-1, -2);  // (2, 3, 5)
    Tensor bb = sample({2, 6, 5}, dt, 6).transpose(1, 2);    // (2, 5, 6)
    expect_matmul(ba, bb, {2, 3, 6});
    expect_matmul(ba, sample({5, 6}, dt, 7), {2, 3, 6});  // (B, M, K) @ (K, N), a not contiguous
    Tensor pa = sample({3, 2, 4}, dt, 8).permute({1, 0, 2});  // (2, 3, 4), batch stride 4
    expect_matmul(pa, sample({2, 4, 5}, dt, 9), {2, 3, 5});
    expect_matmul(pa, sample({4, 5}, dt, 9), {2, 3, 5});
  }
}

TEST(Matmul, SlicedAndExpandedOperands) {
  for (DType dt : {DType::Float64, DType::Float32}) {
    // Column slices: row stride 10 > 3 columns, and an offset.
    Tensor wide = sample({4, 10}, dt, 1);
    Tensor cols = wide.narrow(1, 2, 3);  // (4, 3)
    expect_matmul(cols, sample({3, 5}, dt, 2), {4, 5});
    expect_matmul(sample({5, 4}, dt, 3), cols, {5, 3});
    expect_matmul(cols.transpose(0, 1), sample({4, 2}, dt, 4), {3, 2});
    // Row slices with a step, and column steps GEMM cannot read (copied first).
    Tensor stepped = sample({8, 9}, dt, 5).slice(0, 1, 8, 2).slice(1, 0, 9, 3);  // (4, 3)
    expect_matmul(stepped, sample({3, 2}, dt, 6), {4, 2});
    expect_matmul(sample({2, 4}, dt, 7), stepped, {2, 3});
    expect_matmul(stepped.transpose(0, 1), stepped, {3, 3});
    // A slice of a batch.
    Tensor batch = sample({3, 4, 6}, dt, 8).narrow(2, 1, 4).narrow(0, 1, 2);  // (2, 4, 4)
    expect_matmul(batch, batch, {2, 4, 4});
    // Stride-0 operands: an expanded row, an expanded batch.
    Tensor rep = sample({1, 4}, dt, 9).expand({3, 4});
    expect_matmul(rep, sample({4, 2}, dt, 1), {3, 2});
    expect_matmul(sample({2, 3}, dt, 2), sample({3, 1}, dt, 3).expand({3, 4}), {2, 4});
    expect_matmul(sample({3, 4}, dt, 4).expand({2, 3, 4}), sample({2, 4, 2}, dt, 5), {2, 3, 2});
  }
}

TEST(Matmul, SizeOneDims) {
  for (DType dt : {DType::Float64, DType::Float32}) {
    expect_matmul(sample({1, 4}, dt, 1), sample({4, 1}, dt, 2), {1, 1});
    expect_matmul(sample({3, 1}, dt, 3), sample({1, 5}, dt, 4), {3, 5});
    expect_matmul(sample({1, 1}, dt, 5), sample({1, 1}, dt, 6), {1, 1});
    // A row taken from a column of a transposed matrix: (1, 4) with stride 5.
    Tensor row = sample({4, 5}, dt, 7).transpose(0, 1).narrow(0, 2, 1);
    expect_matmul(row, sample({4, 3}, dt, 8), {1, 3});
    // A column taken with a step: (4, 1).
    Tensor col = sample({8, 3}, dt, 9).slice(0, 0, 8, 2).narrow(1, 1, 1);
    expect_matmul(sample({2, 4}, dt, 1), col, {2, 1});
    expect_matmul(sample({1, 1, 3}, dt, 2), sample({4, 3, 1}, dt, 3), {4, 1, 1});
  }
}

TEST(Matmul, SizeZeroDims) {
  for (DType dt : {DType::Float64, DType::Float32}) {
    expect_matmul(sample({0, 4}, dt), sample({4, 5}, dt), {0, 5});
    expect_matmul(sample({3, 4}, dt), sample({4, 0}, dt), {3, 0});
    expect_matmul(sample({0, 3, 4}, dt), sample({4, 5}, dt), {0, 3, 5});
    expect_matmul(sample({2, 0, 4}, dt), sample({4, 5}, dt), {2, 0, 5});
    expect_matmul(sample({2, 3, 4}, dt), sample({2, 4, 0}, dt), {2, 3, 0});
  }
}

TEST(Matmul, InnerDimensionZeroGivesZeros) {
  for (DType dt : {DType::Float64, DType::Float32}) {
    expect_tensor(matmul(zeros({3, 0}, dt), zeros({0, 5}, dt)), {3, 5}, std::vector<double>(15, 0));
    expect_tensor(matmul(zeros({2, 3, 0}, dt), zeros({2, 0, 4}, dt)), {2, 3, 4},
                  std::vector<double>(24, 0));
    expect_tensor(matmul_reference(zeros({3, 0}, dt), zeros({0, 5}, dt)), {3, 5},
                  std::vector<double>(15, 0));
  }
}

// A stack of (M, 0) matrices times a (0, N) matrix is also all zeros; the
// (B, T, K) @ (K, N) fast path must not try to view (B, T, 0) as (-1, 0).
TEST(Matmul, InnerDimensionZeroBatchTimesMatrix) {
  Tensor out = matmul(zeros({2, 3, 0}), zeros({0, 5}));
  expect_tensor(out, {2, 3, 5}, std::vector<double>(30, 0));
}

TEST(Matmul, LargeBatchedAgainstReference) {
  // Big enough for OpenBLAS to block and thread; the reference is the loop.
  Tensor a = sample({3, 70, 90}, DType::Float64, 1).transpose(1, 2);  // (3, 90, 70)
  Tensor b = sample({70, 50}, DType::Float64, 2);
  Tensor fast = matmul(a, b), ref = matmul_reference(a, b);
  ASSERT_EQ(fast.shape(), (Shape{3, 90, 50}));
  expect_tensor(fast, {3, 90, 50}, elements(ref), 1e-12);
  Tensor f32 = matmul(a.to(DType::Float32), b.to(DType::Float32));
  expect_tensor(f32, {3, 90, 50}, elements(ref), 1e-5);
}

TEST(Matmul, Errors) {
  EXPECT_EQ(error_message([] {
              matmul(zeros({2, 3}), zeros({4, 5}));
            }),
            "matmul: inner dimensions differ: (2, 3) @ (4, 5)");
  EXPECT_EQ(error_message([] {
              matmul_reference(zeros({2, 3}), zeros({4, 5}));
            }),
            "matmul: inner dimensions differ: (2, 3) @ (4, 5)");
  EXPECT_EQ(error_message([] {
              matmul(zeros({3}), zeros({3, 2}));
            }),
            "matmul: both operands need at least 2 dimensions, got (3) @ (3, 2)");
  EXPECT_EQ(error_message([] {
              matmul(zeros({2, 3}), zeros({3, 2}, DType::Float64));
            }),
            "matmul: dtypes differ: float32 and float64");
  std::string msg = error_message([] { matmul(zeros({2, 2, 3}), zeros({3, 3, 4})); });
  EXPECT_TRUE(contains(msg, "matmul") && contains(msg, "(2)") && contains(msg, "(3)")) << msg;
  EXPECT_TRUE(contains(error_message([] {
                         matmul(zeros({2, 2}, DType::Int64), zeros({2, 2}, DType::Int64));
                       }),
                       "matmul: expected a floating dtype"));
  EXPECT_TRUE(contains(error_message([] { matmul(Tensor(), zeros({2, 2})); }), "matmul"));
}

// The register-tiled path (at most 2^15 multiply-adds) in each of its cases:
// B read in place (whole 16-column tiles) or copied (a transpose, a ragged
// width), A in either layout, and M not a multiple of the 4-row tile.
TEST(Matmul, SmallProductsInEveryLayout) {
  for (DType dt : {DType::Float64, DType::Float32})
    for (int64_t m : {1, 3, 16})
      for (int64_t n : {16, 32, 17})
        for (int64_t k : {1, 7, 16}) {
          Tensor a = sample({m, k}, dt, 1), b = sample({k, n}, dt, 2);
          expect_matmul(a, b, {m, n});
          expect_matmul(sample({k, m}, dt, 3).transpose(0, 1), b, {m, n});
          expect_matmul(a, sample({n, k}, dt, 4).transpose(0, 1), {m, n});
          expect_matmul(sample({m, k + 5}, dt, 5).narrow(1, 2, k), b, {m, n});  // row stride > K
        }
}

// The 12 x 32 tiles (products above 2^15 multiply-adds with a small B), with
// M and N not whole tiles, B read in place (N = 64) or packed, A in either
// layout; and a product past them (K > 1024) that OpenBLAS computes.
TEST(Matmul, MediumProductsInEveryLayout) {
  for (DType dt : {DType::Float64, DType::Float32})
    for (int64_t m : {13, 40})
      for (int64_t n : {45, 64}) {
        const int64_t k = 100;
        Tensor a = sample({m, k}, dt, 1), b = sample({k, n}, dt, 2);
        expect_matmul(a, b, {m, n});
        expect_matmul(sample({k, m}, dt, 3).transpose(0, 1), b, {m, n});
        expect_matmul(a, sample({n, k}, dt, 4).transpose(0, 1), {m, n});
      }
  expect_matmul(sample({20, 1100}, DType::Float32, 5), sample({1100, 30}, DType::Float32, 6),
                {20, 30});
}

// Thin products, one of M, N, K at most 32, on the 12 x 32 tiles past the
// narrow ones' bounds: N = 256 over a short K, and K = 1100 (beyond 1024).
TEST(Matmul, ThinProductsInEveryLayout) {
  for (DType dt : {DType::Float64, DType::Float32})
    for (auto [m, n, k] : {std::array<int64_t, 3>{40, 256, 20}, {33, 64, 1100}}) {
      Tensor a = sample({m, k}, dt, 1), b = sample({k, n}, dt, 2);
      expect_matmul(a, b, {m, n});
      expect_matmul(sample({k, m}, dt, 3).transpose(0, 1), b, {m, n});
      expect_matmul(a, sample({n, k}, dt, 4).transpose(0, 1), {m, n});
    }
}

// linear(x, w, b) = x w^T + b, against the loop.
void expect_linear(const Tensor& x, const Tensor& w, const Tensor& bias) {
  SCOPED_TRACE(shape_str(x.shape()) + " @ " + shape_str(w.shape()) + "^T " +
               std::string(dtype_name(x.dtype())));
  const int64_t n = w.shape()[0];
  Shape out = x.shape();
  out.back() = n;
  const Tensor x2 = x.reshape({-1, x.shape().back()});
  std::vector<double> expected = naive_matmul(x2, w.transpose(0, 1), {x2.shape()[0], n});
  if (bias.defined())
    for (size_t i = 0; i < expected.size(); ++i)
      expected[i] += element(bias, {static_cast<int64_t>(i) % n});
  expect_tensor(linear(x, w, bias), out, expected, x.dtype() == DType::Float64 ? 1e-12 : 1e-5);
}

TEST(Linear, AgainstTheLoop) {
  for (DType dt : {DType::Float64, DType::Float32}) {
    expect_linear(sample({3, 4}, dt, 1), sample({5, 4}, dt, 2), sample({5}, dt, 3));
    expect_linear(sample({2, 3, 4}, dt, 1), sample({5, 4}, dt, 2), Tensor());
    expect_linear(sample({4}, dt, 1), sample({5, 4}, dt, 2), sample({5}, dt, 3));
    expect_linear(sample({4, 3}, dt, 1).transpose(0, 1), sample({4, 5}, dt, 2).transpose(0, 1),
                  sample({10}, dt, 3).slice(0, 0, 10, 2));
    // Our tiles (N = 48) and OpenBLAS (N = 130, adding to the bias rows with
    // beta = 1), cut into row pieces, and into column pieces when there are
    // few rows (M = 20).
    for (int threads : {1, 2}) {
      testing::ThreadsFor guard(threads);
      expect_linear(sample({2, 150, 64}, dt, 4), sample({48, 64}, dt, 5), sample({48}, dt, 6));
      expect_linear(sample({150, 64}, dt, 4), sample({130, 64}, dt, 5), sample({130}, dt, 6));
      expect_linear(sample({20, 64}, dt, 4), sample({200, 64}, dt, 5), sample({200}, dt, 6));
    }
  }
  // K = 0: the bias alone.
  expect_tensor(linear(zeros({2, 0}), zeros({3, 0}), from_vector({1, 2, 3}, {3})), {2, 3},
                {1, 2, 3, 1, 2, 3});
}

TEST(Linear, Errors) {
  EXPECT_EQ(error_message([] {
              linear(zeros({2, 3}), zeros({4, 5}), Tensor());
            }),
            "linear: expected x (..., K) and weight (N, K), got x (2, 3) and weight (4, 5)");
  EXPECT_EQ(error_message([] {
              linear(zeros({2, 3}), zeros({4, 3}), zeros({3}));
            }),
            "linear: expected bias (4) for weight (4, 3), got (3)");
  EXPECT_TRUE(contains(error_message([] {
                         linear(zeros({2, 3}), zeros({4, 3}, DType::Float64), Tensor());
                       }),
                       "linear: dtypes differ"));
}

TEST(Matmul, ResultIsFreshAndContiguous) {
  Tensor a = sample({2, 3, 4}), b = sample({4, 5});
  Tensor c = matmul(a, b);
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_NE(c.storage(), a.storage());
  std::vector<double> before = elements(a);
  matmul(a.transpose(1, 2).contiguous().transpose(1, 2), b);
  EXPECT_EQ(elements(a), before);  // inputs untouched
}

// Our own kernels' bits do not depend on the thread count: matmul cuts a
// product into a piece per thread, and every piece runs the kernel the whole
// product picked. Before, a piece picked by its own size: (64 x 64) @
// (64 x 192)^T ran dot_gemm on one thread and the tiles on two. OpenBLAS's
// may depend on where a piece starts, so its products are left out (under
// GemmPath.own every product here is ours).
TEST(Matmul, OwnKernelsGiveTheSameBitsAtAnyThreadCount) {
  int64_t checked = 0;
  for (DType dt : {DType::Float32, DType::Float64})
    for (int64_t m : {63, 64, 65})
      for (int64_t n : {64, 192, 256})
        for (int64_t k : {40, 64, 160})
          for (int layout = 0; layout < 4; ++layout) {
            const bool a_t = layout & 1, b_t = layout & 2;
            const Tensor a = a_t ? sample({k, m}, dt, 1).transpose(0, 1) : sample({m, k}, dt, 1);
            const Tensor b = b_t ? sample({n, k}, dt, 2).transpose(0, 1) : sample({k, n}, dt, 2);
            const GemmOperand la{a_t, a_t ? m : k}, lb{b_t, b_t ? k : n};
            const bool ours = dt == DType::Float32
                                  ? gemm_kernel<float>(m, n, k, la, lb) != GemmKernel::kBlas
                                  : gemm_kernel<double>(m, n, k, la, lb) != GemmKernel::kBlas;
            if (!ours) continue;
            ++checked;
            const std::vector<double> one = matmul(a, b).to_vector();
            for (int threads : {2, 3}) {
              testing::ThreadsFor pool(threads);
              ASSERT_EQ(matmul(a, b).to_vector(), one)
                  << dtype_name(dt) << " (" << m << " x " << k << ") @ (" << k << " x " << n
                  << "), layout " << layout << ", " << threads << " threads";
            }
          }
  if (checked == 0) GTEST_SKIP() << "every product here goes to OpenBLAS on this machine";
}

}  // namespace
}  // namespace gradflow
