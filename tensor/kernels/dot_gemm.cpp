#include "tensor/kernels/dot_gemm.h"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <utility>

#include "tensor/kernels/cpu_dispatch.h"
#include "tensor/kernels/lanes.h"

// Compiled with -ffp-contract=fast, as packed_gemm.cpp: each `acc += x * y`
// is one fused multiply-add.

namespace gradflow {

namespace {

// Lane indices for __builtin_shuffle: 32-bit for float, 64-bit for double.
template <class T>
using Mask [[gnu::vector_size(64)]] = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;

// Lane i of one level's first operand (below): lanes of u, or of w at L and
// up, as a two-vector shuffle numbers them; the second operand is B further.
constexpr int lo_lane(int L, int B, int i) {
  const int t = i / (2 * B), q = i % (2 * B);
  return q < B ? 2 * t * B + q : L + 2 * t * B + q - B;
}

#if defined(__clang__)
// The fuzzers' build (tests/fuzz): clang has no __builtin_shuffle, only this
// form with constant lanes, the same ones.
template <class T, int B, size_t... I>
void clang_fold_pair(Vec<T>& u, const Vec<T>& w, std::index_sequence<I...>) {
  constexpr int L = kVecLanes<T>;
  u = __builtin_shufflevector(u, w, lo_lane(L, B, I)...) +
      __builtin_shufflevector(u, w, (lo_lane(L, B, I) + B)...);
}
#endif

// One level of a transposing sum, into u: lanes [2tB, 2tB + B) of the
// result hold u's blocks 2t and 2t + 1 of B lanes added, the next B lanes
// w's, for each t. Both vectors' partial sums advance one level with one
// add and two shuffles. (By reference: a vector returned by value is an ABI
// question g++ warns about where AVX-512 is not the baseline.) g++ keeps the
// tile's accumulators in registers around this form of the shuffle and
// spills some around __builtin_shufflevector's (3.1 us a call against 2.4).
template <class T, int B>
void fold_pair(Vec<T>& u, const Vec<T>& w) {
  constexpr int L = kVecLanes<T>;
#if defined(__clang__)
  clang_fold_pair<T, B>(u, w, std::make_index_sequence<L>{});
#else
  Mask<T> lo, hi;
  for (int i = 0; i < L; ++i) {
    lo[i] = lo_lane(L, B, i);
    hi[i] = lo[i] + B;
  }
  u = __builtin_shuffle(u, w, lo) + __builtin_shuffle(u, w, hi);
#endif
}

// The lane sums of N vectors (N a multiple of the lane count L) into
// sums[0, N), by halving the lanes per vector and the vectors per level:
// 15 adds and 30 shuffles for 16 vectors of 16 floats, where folding each
// vector alone took 16 x 6 (attention's (20 x 256) by (256 x 20): 2.4 us a
// call against 3.0). Each sum adds its lanes in a tree fixed by L.
template <class T, int N, int B = kVecLanes<T> / 2>
void fold_all(Vec<T> (&v)[N], T* sums) {
  constexpr int L = kVecLanes<T>;
  if constexpr (B == 0) {
    // Vector s's lane l now holds the sum of v[s + (N / L) * l].
    if constexpr (N == L) {
      std::memcpy(sums, &v[0], sizeof(Vec<T>));
    } else {
      T lanes[N];
      std::memcpy(lanes, v, sizeof lanes);
      for (int s = 0; s < N / L; ++s)
        for (int l = 0; l < L; ++l) sums[s + (N / L) * l] = lanes[s * L + l];
    }
  } else {
    constexpr int kHalf = N * B / L;  // vectors left after this level
#pragma GCC unroll 16
    for (int s = 0; s < kHalf; ++s) fold_pair<T, B>(v[s], v[s + kHalf]);
    fold_all<T, N, B / 2>(v, sums);
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
      Vec<T> acc[RI * RJ] = {};  // acc[r * RJ + s]
      for (int64_t p = 0; p < whole; p += kL) {
        Vec<T> yv[RJ];
        for (int s = 0; s < RJ; ++s) std::memcpy(&yv[s], y[s] + p, sizeof(Vec<T>));
        for (int r = 0; r < RI; ++r) {
          Vec<T> xv;
          std::memcpy(&xv, x[r] + p, sizeof xv);
          for (int s = 0; s < RJ; ++s) acc[r * RJ + s] += xv * yv[s];
        }
      }
      const int64_t rows = std::min<int64_t>(RI, m - i0), cols = std::min<int64_t>(RJ, n - j0);
      T sums[RI * RJ];
      fold_all<T, RI * RJ>(acc, sums);
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t s = 0; s < cols; ++s) {
          T sum = sums[r * RJ + s];
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
