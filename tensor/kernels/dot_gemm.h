// Small products whose two operands both lie along k in memory, C = A B^T
// with A's rows and B's columns stored contiguously: attention's scores
// Q K^T and the gradient of its weights, (20 x 256) by (256 x 20) per
// sequence and head in the study's recall task.
//
// Why a kernel of its own: the tiles of gemm.cpp and packed_gemm.cpp
// broadcast a value of A over a vector of a row of B, so they copy a strided
// B into rows padded to 16 or 32 columns first (packed_gemm packs A too),
// costly for a short product with 20 columns. This one multiplies vectors of
// A's row and B's column lane by lane, in place, then adds the lanes: each
// element sums k in fixed lanes, folds them in a fixed order and adds the
// tail past the last whole vector in order, so its bits depend on K and the
// CPU level only.
//
// Internal to tensor/: gemm.cpp calls it.
#pragma once

#include <cstdint>

namespace gradflow {

// C (M, N, row stride ldc) = A (M, K, row stride lda) times the transpose of
// Bt (N, K, row stride ldb), plus `bias` (N values, or null) on every row.
// REQUIRES: M, N, K > 0.
template <class T>
void dot_gemm(const T* a, int64_t lda, const T* bt, int64_t ldb, T* c, int64_t ldc, int64_t m,
              int64_t n, int64_t k, const T* bias);

}  // namespace gradflow
