// The packed GEMM (tensor/kernels/packed_gemm.h) against a plain loop in
// double, on sizes at and just past the edge of every block (the register
// tile, k's block, the A block, the B panel) of every CPU level's tiling,
// for each layout of A and B, row strides wider than the rows, with and
// without a bias, in float32 and float64.
#include "tensor/kernels/packed_gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "tensor/kernels/cpu_dispatch.h"
#include "tensor/parallel.h"
#include "tests/tensor/kernels/cpu_levels.h"

namespace gradflow {
namespace {

struct Size {
  int64_t m, n, k;
};

// The blocks (packed_gemm.cpp): tiles 12 x 32/16 (AVX-512, float/double) and
// 6 x 16/8 (AVX2 and baseline); k in blocks of 192 (AVX-512) or 384; A blocks
// of 504/252 rows (AVX-512) and 252/126 (otherwise); B panels of 4096 columns.
const std::vector<Size> kSizes = {
    {1, 1, 1},    {7, 17, 33},   {12, 32, 192},  {13, 33, 193}, {6, 16, 384},
    {5, 15, 385}, {25, 65, 385}, {255, 255, 17}, {1, 255, 255}, {255, 1, 31},
    {505, 33, 7}, {253, 17, 3},  {127, 9, 2},    {3, 4097, 2},  {24, 64, 1000},
};

// Distinct values of mixed sign, about 1 in size.
template <class T>
std::vector<T> values(int64_t count, int seed) {
  std::vector<T> v(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i)
    v[static_cast<size_t>(i)] = static_cast<T>(std::sin(0.37 * static_cast<double>(i * seed + 1)));
  return v;
}

// A (rows, cols) operand stored as itself or as its transpose, with 3 spare
// elements at the end of every stored row.
template <class T>
struct Operand {
  GemmOperand layout;
  std::vector<T> data;
  Operand(int64_t rows, int64_t cols, bool transposed, int seed) {
    const int64_t stored_rows = transposed ? cols : rows, stored_cols = transposed ? rows : cols;
    layout = {transposed, stored_cols + 3};
    data = values<T>(stored_rows * layout.ld, seed);
  }
  double at(int64_t i, int64_t j) const {
    return static_cast<double>(
        data[static_cast<size_t>(layout.transposed ? j * layout.ld + i : i * layout.ld + j)]);
  }
};

// Runs one product and compares each element with the loop, within the
// bound of summing k products in T: k units of rounding on the sum of the
// terms' sizes (Higham's gamma_k), plus one for the bias.
template <class T>
void expect_product(Size s, bool a_t, bool b_t, bool with_bias) {
  SCOPED_TRACE(std::to_string(s.m) + " x " + std::to_string(s.n) + " x " + std::to_string(s.k) +
               (a_t ? " A^T" : "") + (b_t ? " B^T" : "") + (with_bias ? " bias" : "") +
               (sizeof(T) == 4 ? " float" : " double") + " level " + std::to_string(cpu_level()));
  const Operand<T> a(s.m, s.k, a_t, 3), b(s.k, s.n, b_t, 5);
  const std::vector<T> bias = values<T>(s.n, 7);
  const int64_t ldc = s.n + 2;
  std::vector<T> c(static_cast<size_t>(s.m * ldc), T{-99});
  packed_gemm(a.data.data(), a.layout, b.data.data(), b.layout, c.data(), ldc, s.m, s.n, s.k,
              with_bias ? bias.data() : nullptr);
  const double unit = std::numeric_limits<T>::epsilon() / 2;
  const double gamma =
      static_cast<double>(s.k + 1) * unit / (1 - static_cast<double>(s.k + 1) * unit);
  int64_t wrong = 0;
  for (int64_t i = 0; i < s.m; ++i) {
    for (int64_t j = 0; j < s.n; ++j) {
      double sum = with_bias ? static_cast<double>(bias[static_cast<size_t>(j)]) : 0;
      double size = std::abs(sum);
      for (int64_t p = 0; p < s.k; ++p) {
        sum += a.at(i, p) * b.at(p, j);
        size += std::abs(a.at(i, p) * b.at(p, j));
      }
      const double got = static_cast<double>(c[static_cast<size_t>(i * ldc + j)]);
      if (std::abs(got - sum) > gamma * size && wrong++ < 5)
        ADD_FAILURE() << "C(" << i << ", " << j << ") = " << got << ", expected " << sum;
    }
    for (int64_t j = s.n; j < ldc; ++j)  // the stride's spare elements stay as they were
      if (c[static_cast<size_t>(i * ldc + j)] != T{-99} && wrong++ < 5)
        ADD_FAILURE() << "wrote past row " << i << "'s end, at column " << j;
  }
  EXPECT_EQ(wrong, 0);
}

template <class T>
void expect_every_layout() {
  for (const Size& s : kSizes)
    for (bool a_t : {false, true})
      for (bool b_t : {false, true}) expect_product<T>(s, a_t, b_t, /*with_bias=*/a_t == b_t);
}

TEST(PackedGemm, Float32MatchesTheLoopAtEveryBlockEdge) {
  at_every_level([] { expect_every_layout<float>(); });
}

TEST(PackedGemm, Float64MatchesTheLoopAtEveryBlockEdge) {
  at_every_level([] { expect_every_layout<double>(); });
}

// On the pool the threads share each packed panel of B and take blocks of
// rows of C: every edge again, at 2 and 3 threads (blocks of other heights,
// panels packed in pieces).
TEST(PackedGemm, OnThePoolMatchesTheLoopAtEveryBlockEdge) {
  for (int threads : {2, 3}) {
    set_num_threads(threads);
    at_every_level([] {
      expect_every_layout<float>();
      expect_every_layout<double>();
    });
  }
  set_num_threads(1);
}

// The thread count changes who computes a block, not its bits.
TEST(PackedGemm, TheThreadCountChangesNoBit) {
  const int64_t m = 301, n = 4200, k = 400;  // rows in several blocks, two panels of B, k in three
  const Operand<float> a(m, k, true, 3), b(k, n, false, 5);
  const std::vector<float> bias = values<float>(n, 7);
  std::vector<std::vector<float>> runs;
  for (int threads : {1, 2, 3}) {
    set_num_threads(threads);
    runs.emplace_back(static_cast<size_t>(m * n));
    packed_gemm(a.data.data(), a.layout, b.data.data(), b.layout, runs.back().data(), n, m, n, k,
                bias.data());
  }
  set_num_threads(1);
  EXPECT_EQ(runs[0], runs[1]);
  EXPECT_EQ(runs[0], runs[2]);
}

// The bits of an element do not depend on where the caller cuts C: each
// element sums over k in the same blocks, in the same order.
TEST(PackedGemm, ARowOrColumnRangeGivesTheSameBitsAsTheWhole) {
  const int64_t m = 70, n = 90, k = 400;
  const Operand<float> a(m, k, false, 3), b(k, n, true, 5);
  std::vector<float> whole(static_cast<size_t>(m * n)), pieces(static_cast<size_t>(m * n));
  packed_gemm(a.data.data(), a.layout, b.data.data(), b.layout, whole.data(), n, m, n, k,
              static_cast<const float*>(nullptr));
  // Rows [0, 29) and [29, 70); then columns [0, 41) and [41, 90) of the rows' second part.
  packed_gemm(a.data.data(), a.layout, b.data.data(), b.layout, pieces.data(), n, 29, n, k,
              static_cast<const float*>(nullptr));
  const float* a2 = a.data.data() + 29 * a.layout.ld;
  float* c2 = pieces.data() + 29 * n;
  packed_gemm(a2, a.layout, b.data.data(), b.layout, c2, n, m - 29, 41, k,
              static_cast<const float*>(nullptr));
  packed_gemm(a2, a.layout, b.data.data() + 41 * b.layout.ld, b.layout, c2 + 41, n, m - 29, 49, k,
              static_cast<const float*>(nullptr));
  EXPECT_EQ(whole, pieces);
}

}  // namespace
}  // namespace gradflow
