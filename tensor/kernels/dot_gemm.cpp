#include "tensor/kernels/dot_gemm.h"

#include <algorithm>
#include <cstring>

#include "tensor/kernels/cpu_dispatch.h"
#include "tensor/kernels/lanes.h"

// Compiled with -ffp-contract=fast, as packed_gemm.cpp: each `acc += x * y`
// is one fused multiply-add.

namespace gradflow {

namespace {

// The sum of a vector's lanes: its halves added as vectors down to 16 bytes
// (g++ keeps each step in registers), then those lanes in order.
template <class T, int Bytes, class V>
T fold(const V& v) {
  if constexpr (Bytes == 16) {
    T sum = v[0];
    for (size_t i = 1; i < 16 / sizeof(T); ++i) sum += v[i];
    return sum;
  } else {
    using Half [[gnu::vector_size(Bytes / 2)]] = T;
    Half lo, hi;
    std::memcpy(&lo, &v, sizeof lo);
    std::memcpy(&hi, reinterpret_cast<const char*>(&v) + sizeof lo, sizeof hi);
    return fold<T, Bytes / 2>(lo + hi);
  }
}

// Tiles of RI rows of A by RJ rows of Bt, RI x RJ vector accumulators in
// registers. Rows past M or N repeat the last one and are not stored, as in
// gemm.cpp's tiles.
template <class T, int RI, int RJ>
void dot_tiles(const T* a, int64_t lda, const T* bt, int64_t ldb, T* c, int64_t ldc, int64_t m,
               int64_t n, int64_t k, const T* bias) {
  constexpr int64_t kL = kVecLanes<T>;
  const int64_t whole = k / kL * kL;
  for (int64_t i0 = 0; i0 < m; i0 += RI) {
    for (int64_t j0 = 0; j0 < n; j0 += RJ) {
      const T* x[RI];
      const T* y[RJ];
      for (int r = 0; r < RI; ++r) x[r] = a + std::min<int64_t>(i0 + r, m - 1) * lda;
      for (int s = 0; s < RJ; ++s) y[s] = bt + std::min<int64_t>(j0 + s, n - 1) * ldb;
      Vec<T> acc[RI][RJ] = {};
      for (int64_t p = 0; p < whole; p += kL) {
        Vec<T> yv[RJ];
        for (int s = 0; s < RJ; ++s) std::memcpy(&yv[s], y[s] + p, sizeof(Vec<T>));
        for (int r = 0; r < RI; ++r) {
          Vec<T> xv;
          std::memcpy(&xv, x[r] + p, sizeof xv);
          for (int s = 0; s < RJ; ++s) acc[r][s] += xv * yv[s];
        }
      }
      const int64_t rows = std::min<int64_t>(RI, m - i0), cols = std::min<int64_t>(RJ, n - j0);
      // Constant indices (breaks, not bounds) keep the accumulators in registers.
      for (int r = 0; r < RI && r < rows; ++r) {
        for (int s = 0; s < RJ && s < cols; ++s) {
          T sum = fold<T, sizeof(Vec<T>)>(acc[r][s]);
          for (int64_t p = whole; p < k; ++p) sum += x[r][p] * y[s][p];
          c[(i0 + r) * ldc + j0 + s] = bias ? sum + bias[j0 + s] : sum;
        }
      }
    }
  }
}

}  // namespace

template <class T>
void dot_gemm(const T* a, int64_t lda, const T* bt, int64_t ldb, T* c, int64_t ldc, int64_t m,
              int64_t n, int64_t k, const T* bias) {
  // 16 accumulators and 8 loads: 24 of AVX-512's 32 registers (gemm.cpp
  // calls it under AVX-512 only; elsewhere it is right, and slow).
  run_for_this_cpu([&] { dot_tiles<T, 4, 4>(a, lda, bt, ldb, c, ldc, m, n, k, bias); });
}

template void dot_gemm<float>(const float*, int64_t, const float*, int64_t, float*, int64_t,
                              int64_t, int64_t, int64_t, const float*);
template void dot_gemm<double>(const double*, int64_t, const double*, int64_t, double*, int64_t,
                               int64_t, int64_t, int64_t, const double*);

}  // namespace gradflow
