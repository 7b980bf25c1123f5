// gemm() (tensor/kernels/gemm.h) against exact sums on every small and
// ragged shape its routes meet: m, n, k each of 1, 2, 3, 5, 7, 17, 20, 33,
// 67, 255, 256, 257 up to 2^19 multiply-adds (past the small products'
// bound of 2^18, so both sides of it), every layout of A and B, a bias or
// none, float32 and float64, at every CPU level. Run under GRADFLOW_GEMM=own
// (ctest's GemmPath.own) it covers the own GEMM's small-product routes (the
// lane-wise dot products of dot_gemm.h, the tiles, the packed GEMM); under
// blas, OpenBLAS's. And dot_gemm itself, whichever path this process takes.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "tensor/kernels/cpu_dispatch.h"
#include "tensor/kernels/dot_gemm.h"
#include "tensor/kernels/gemm.h"
#include "tests/tensor/kernels/cpu_levels.h"

namespace gradflow {
namespace {

const int64_t kEdges[] = {1, 2, 3, 5, 7, 17, 20, 33, 67, 255, 256, 257};

// Multiples of 1/8 between -1 and 1: exact in float, so every product and
// the loop's sum in double are exact, and the bound below is the GEMM's own.
double value(int64_t i, int64_t j, int seed) {
  return static_cast<double>((i * 7 + j * 3 + seed) % 17 - 8) / 8;
}

// A (rows, cols) operand with values value(i, j), stored as itself or as
// its transpose, 2 spare elements at the end of every stored row.
template <class T>
struct Operand {
  GemmOperand layout;
  std::vector<T> data;
  Operand(int64_t rows, int64_t cols, bool transposed, int seed) {
    layout = {transposed, (transposed ? rows : cols) + 2};
    data.assign(static_cast<size_t>((transposed ? cols : rows) * layout.ld), T{0});
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j)
        data[static_cast<size_t>(transposed ? j * layout.ld + i : i * layout.ld + j)] =
            static_cast<T>(value(i, j, seed));
  }
};

// The exact C (m x n) and, per element, the sum of its terms' sizes.
struct Expected {
  std::vector<double> sum, size;
};
Expected expected(int64_t m, int64_t n, int64_t k, bool with_bias) {
  Expected e{std::vector<double>(static_cast<size_t>(m * n)),
             std::vector<double>(static_cast<size_t>(m * n))};
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = with_bias ? value(0, j, 5) : 0, size = std::abs(sum);
      for (int64_t p = 0; p < k; ++p) {
        sum += value(i, p, 1) * value(p, j, 2);
        size += std::abs(value(i, p, 1) * value(p, j, 2));
      }
      e.sum[static_cast<size_t>(i * n + j)] = sum;
      e.size[static_cast<size_t>(i * n + j)] = size;
    }
  return e;
}

// One product through gemm() (or dot_gemm, for A B^T), each element within
// k + 1 units of rounding of its terms' sizes (Higham's gamma), and nothing
// written past a row of C's end. Returns the number of wrong elements.
template <class T>
int64_t wrong_elements(int64_t m, int64_t n, int64_t k, bool a_t, bool b_t, bool with_bias,
                       const Expected& e, bool direct_dot) {
  const Operand<T> a(m, k, a_t, 1), b(k, n, b_t, 2);
  std::vector<T> bias(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) bias[static_cast<size_t>(j)] = static_cast<T>(value(0, j, 5));
  const int64_t ldc = n + 3;
  std::vector<T> c(static_cast<size_t>(m * ldc), T{-99});
  const T* pb = with_bias ? bias.data() : nullptr;
  if (direct_dot) {
    dot_gemm(a.data.data(), a.layout.ld, b.data.data(), b.layout.ld, c.data(), ldc, m, n, k, pb);
  } else {
    gemm(a.data.data(), a.layout, b.data.data(), b.layout, c.data(), ldc, m, n, k, pb);
  }
  const double unit = std::numeric_limits<T>::epsilon() / 2;
  const double gamma = static_cast<double>(k + 1) * unit / (1 - static_cast<double>(k + 1) * unit);
  int64_t wrong = 0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      const size_t at = static_cast<size_t>(i * n + j);
      const double got = static_cast<double>(c[static_cast<size_t>(i * ldc + j)]);
      if (!(std::abs(got - e.sum[at]) <= gamma * e.size[at]) && wrong++ < 3)
        ADD_FAILURE() << "C(" << i << ", " << j << ") = " << got << ", expected " << e.sum[at];
    }
    for (int64_t j = n; j < ldc; ++j)
      if (c[static_cast<size_t>(i * ldc + j)] != T{-99} && wrong++ < 3)
        ADD_FAILURE() << "wrote past row " << i << "'s end, at column " << j;
  }
  return wrong;
}

// Every shape of kEdges up to 2^19 multiply-adds, through `direct_dot` or gemm().
void expect_every_shape(bool direct_dot) {
  for (int64_t m : kEdges)
    for (int64_t n : kEdges)
      for (int64_t k : kEdges) {
        if (m * n * k >= (int64_t{1} << 19)) continue;
        for (bool with_bias : {false, true}) {
          const Expected e = expected(m, n, k, with_bias);
          for (int layout = 0; layout < 4; ++layout) {
            const bool a_t = layout & 1, b_t = layout & 2;
            if (direct_dot && (a_t || !b_t)) continue;  // dot_gemm reads A and B^T rows
            at_every_level([&] {
              SCOPED_TRACE(std::to_string(m) + " x " + std::to_string(n) + " x " +
                           std::to_string(k) + (a_t ? " A^T" : "") + (b_t ? " B^T" : "") +
                           (with_bias ? " bias" : "") + " level " + std::to_string(cpu_level()));
              EXPECT_EQ(wrong_elements<float>(m, n, k, a_t, b_t, with_bias, e, direct_dot), 0);
              EXPECT_EQ(wrong_elements<double>(m, n, k, a_t, b_t, with_bias, e, direct_dot), 0);
            });
          }
        }
      }
}

TEST(GemmShapes, EverySmallOrRaggedShapeAndLayoutMatchesTheExactSum) {
  expect_every_shape(/*direct_dot=*/false);
}

TEST(GemmShapes, DotGemmMatchesTheExactSumOnEveryShape) { expect_every_shape(/*direct_dot=*/true); }

}  // namespace
}  // namespace gradflow
