#include "tensor/gemm.h"

#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

namespace gradflow {

GemmLayout gemm_layout(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride) {
  if ((col_stride == 1 || cols == 1) && (rows == 1 || row_stride >= std::max<int64_t>(1, cols)))
    return {true, {false, rows == 1 ? std::max<int64_t>(1, cols) : row_stride}};
  if ((row_stride == 1 || rows == 1) && (cols == 1 || col_stride >= std::max<int64_t>(1, rows)))
    return {true, {true, cols == 1 ? std::max<int64_t>(1, rows) : col_stride}};
  return {};
}

namespace {

// C (M, N) = A (M, K) B (K, N) as plain loops, in tiles of 4 rows by 16
// columns of C held in registers: for each k, the tile gains A(i, k) times
// row k of B, a 16-wide multiply-add g++ vectorises. A is read in place
// whatever its layout (four scalars per k). B's rows are read in place when
// they are stored rows of a width that is a whole number of tiles; otherwise
// B is first copied into a row-major buffer padded with zeros to whole tiles.
// Every element sums over k in order, whatever the tiling.
template <class T>
void small_gemm(const T* a, GemmOperand la, const T* b, GemmOperand lb, T* c, int64_t ldc,
                int64_t m, int64_t n, int64_t k, bool accumulate) {
  constexpr int64_t kRows = 4, kCols = 16;
  // A 16-wide vector of T (GCC's vector extension; it picks the machine's
  // widest registers), so a 4 x 16 tile stays in four registers.
  using Vec [[gnu::vector_size(kCols * sizeof(T))]] = T;
  const int64_t a_row = la.transposed ? 1 : la.ld, a_col = la.transposed ? la.ld : 1;
  const T* rows_of_b = b;
  int64_t ldb = lb.ld;
  if (lb.transposed || n % kCols != 0) {
    const int64_t np = (n + kCols - 1) / kCols * kCols;
    thread_local std::vector<T> padded;  // per thread: callers run these in parallel
    padded.assign(static_cast<size_t>(k * np), T{0});
    const int64_t b_row = lb.transposed ? 1 : lb.ld, b_col = lb.transposed ? lb.ld : 1;
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < n; ++j)
        padded[static_cast<size_t>(p * np + j)] = b[p * b_row + j * b_col];
    rows_of_b = padded.data();
    ldb = np;
  }
  for (int64_t i0 = 0; i0 < m; i0 += kRows) {
    // Rows past the end repeat the last row; their results are not stored.
    const T* x[kRows];
    for (int64_t r = 0; r < kRows; ++r) x[r] = a + std::min(i0 + r, m - 1) * a_row;
    const int64_t rows = std::min(kRows, m - i0);
    for (int64_t j0 = 0; j0 < n; j0 += kCols) {
      const T* in = rows_of_b + j0;
      Vec v0 = {}, v1 = {}, v2 = {}, v3 = {};
      for (int64_t p = 0; p < k; ++p, in += ldb) {
        Vec row;
        std::memcpy(&row, in, sizeof row);
        v0 += x[0][p * a_col] * row;
        v1 += x[1][p * a_col] * row;
        v2 += x[2][p * a_col] * row;
        v3 += x[3][p * a_col] * row;
      }
      T acc[kRows][kCols];
      std::memcpy(acc[0], &v0, sizeof v0);
      std::memcpy(acc[1], &v1, sizeof v1);
      std::memcpy(acc[2], &v2, sizeof v2);
      std::memcpy(acc[3], &v3, sizeof v3);
      const int64_t cols = std::min(kCols, n - j0);
      for (int64_t r = 0; r < rows; ++r) {
        T* out = c + (i0 + r) * ldc + j0;
        if (accumulate) {
          for (int64_t j = 0; j < cols; ++j) out[j] += acc[r][j];
        } else {
          for (int64_t j = 0; j < cols; ++j) out[j] = acc[r][j];
        }
      }
    }
  }
}

CBLAS_TRANSPOSE blas_flag(GemmOperand o) { return o.transposed ? CblasTrans : CblasNoTrans; }

}  // namespace

template <class T>
void gemm(const T* a, GemmOperand la, const T* b, GemmOperand lb, T* c, int64_t ldc, int64_t m,
          int64_t n, int64_t k, bool accumulate, bool small) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {  // an empty sum: C stays, or becomes 0
    if (!accumulate)
      for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, T{0});
    return;
  }
  if (small) {
    small_gemm(a, la, b, lb, c, ldc, m, n, k, accumulate);
    return;
  }
  // OpenBLAS runs on the calling thread: callers split work over gradflow's
  // pool instead (see parallel.h). Set once, before the first GEMM.
  static const bool single_threaded = (openblas_set_num_threads(1), true);
  (void)single_threaded;
  const T beta = accumulate ? T{1} : T{0};
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, blas_flag(la), blas_flag(lb), m, n, k, 1.0f, a, la.ld, b, lb.ld,
                beta, c, ldc);
  } else {
    cblas_dgemm(CblasRowMajor, blas_flag(la), blas_flag(lb), m, n, k, 1.0, a, la.ld, b, lb.ld, beta,
                c, ldc);
  }
}

template void gemm<float>(const float*, GemmOperand, const float*, GemmOperand, float*, int64_t,
                          int64_t, int64_t, int64_t, bool, bool);
template void gemm<double>(const double*, GemmOperand, const double*, GemmOperand, double*, int64_t,
                           int64_t, int64_t, int64_t, bool, bool);

}  // namespace gradflow
