// One matrix product on raw row-major memory, the kernel under matmul,
// linear and attention: C (M, N) = op(A) (M, K) op(B) (K, N), optionally
// added to what C holds. Small and narrow products run in register-tiled
// loops of our own: at most kSmallGemmMacs multiply-adds (attention's
// 16 x 16 x 16 heads), where OpenBLAS's per-call setup, packing and locks
// cost several times the arithmetic, and products with N <= 128 whose A fits
// in L2 (a small model's Linear layers), where its packing costs more than
// it saves (gemm.cpp says what was measured). The rest go to cblas_sgemm /
// cblas_dgemm on the calling thread, or to our own GEMM when OpenBLAS runs
// generic kernels on this CPU or GRADFLOW_GEMM=own (blas_info.h): the tiles
// or dot_gemm.h for small products, packed_gemm.h for the rest. Callers
// split work over the pool themselves (parallel.h).
//
// Internal to tensor/: a kernel's building block, not a user-facing op.
#pragma once

#include <cstdint>

namespace gradflow {

// How GEMM reads one (rows, cols) matrix: row-major as is, or as the
// transpose of a row-major matrix; `ld` is the stride between its stored rows.
struct GemmOperand {
  bool transposed = false;
  int64_t ld = 0;
};

// The operand for a (rows, cols) view with these strides, if GEMM can read
// it in place: `ok` is false when neither layout fits (copy it first).
struct GemmLayout {
  bool ok = false;
  GemmOperand operand;
};
GemmLayout gemm_layout(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride);

inline constexpr int64_t kSmallGemmMacs = int64_t{1} << 15;
inline bool is_small_gemm(int64_t m, int64_t n, int64_t k) { return m * n * k <= kSmallGemmMacs; }

// The kernel that runs a product (see above): register tiles (any of their
// shapes: each sums an element's k products in order, the same bits), our
// dot_gemm, our packed GEMM, or OpenBLAS. Kernels sum in different orders,
// so matmul picks one on the whole product and every piece it cuts it into
// runs that one: the bits then do not depend on the thread count (a piece
// that chose by its own size took another kernel, (64 x 64) @ (64 x 192)^T
// ran dot_gemm on one thread and the tiles on two).
enum class GemmKernel { kTiles, kDot, kPacked, kBlas };
template <class T>
GemmKernel gemm_kernel(int64_t m, int64_t n, int64_t k, GemmOperand la, GemmOperand lb);

// C (M, N, row stride ldc) = A (M, K) B (K, N), plus `bias` (N values, or
// null) on every row, on `kernel` (a piece of a product: its product's).
template <class T>
void gemm(const T* a, GemmOperand la, const T* b, GemmOperand lb, T* c, int64_t ldc, int64_t m,
          int64_t n, int64_t k, GemmKernel kernel, const T* bias = nullptr);

// The same on the kernel the product's own shape picks.
template <class T>
void gemm(const T* a, GemmOperand la, const T* b, GemmOperand lb, T* c, int64_t ldc, int64_t m,
          int64_t n, int64_t k, const T* bias = nullptr) {
  gemm(a, la, b, lb, c, ldc, m, n, k, gemm_kernel<T>(m, n, k, la, lb), bias);
}

// Where row i of op(A) starts.
template <class T>
const T* gemm_row(const T* a, GemmOperand la, int64_t i) {
  return la.transposed ? a + i : a + i * la.ld;
}

}  // namespace gradflow
