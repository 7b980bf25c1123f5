// Sums and maxima along one contiguous row, for the fused row-wise kernels
// (tensor/kernels/norm.cpp, tensor/kernels/masked_softmax.h, tensor/kernels/attention.cpp).
//
// Why lanes: a single running total `s += v[i]` is one long chain of
// dependent additions, and without -ffast-math g++ may not reorder it, so it
// stays scalar. Eight interleaved partial sums, added up at the end, are an
// order g++ can keep exactly while using vector registers. The order depends
// only on n, so a row gives the same bits whichever thread computes it.
#pragma once

#include <cstdint>

namespace gradflow {

inline constexpr int kLanes = 8;

// One 64-byte vector of T (GCC's vector extension): a zmm register with
// AVX-512, two ymm with AVX2. The GEMM tiles' accumulators (gemm.cpp,
// packed_gemm.cpp); wider vector types are not kept in registers.
template <class T>
using Vec [[gnu::vector_size(64)]] = T;
template <class T>
inline constexpr int64_t kVecLanes = 64 / sizeof(T);

// The sum of term(i) for i in [0, n), in double by default. `term` is
// inlined; it returns Acc, so float inputs are widened before they are added.
// The attention kernels sum their short rows (16 keys in seq2seq-tiny) in
// float with 16 lanes, one 512-bit vector, where widening to double cost
// more than the row's arithmetic for an error far below what it resolves.
template <class Acc = double, int Lanes = kLanes, class Term>
Acc lane_sum(int64_t n, const Term& term) {
  Acc part[Lanes] = {};
  int64_t i = 0;
  for (; i + Lanes <= n; i += Lanes)
    for (int k = 0; k < Lanes; ++k) part[k] += term(i + k);
  for (int k = 0; i < n; ++i, ++k) part[k] += term(i);
  Acc total = 0;
  for (int k = 0; k < Lanes; ++k) total += part[k];
  return total;
}

// The largest of v[0, n), or `init` when n is 0. NaNs are skipped, as
// std::max(m, v) skips them in tensor/reduce.cpp's softmax.
template <class T>
T lane_max(const T* v, int64_t n, T init) {
  T part[kLanes];
  for (int k = 0; k < kLanes; ++k) part[k] = init;
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int k = 0; k < kLanes; ++k) part[k] = v[i + k] > part[k] ? v[i + k] : part[k];
  for (int k = 0; i < n; ++i, ++k) part[k] = v[i] > part[k] ? v[i] : part[k];
  T best = init;
  for (int k = 0; k < kLanes; ++k) best = part[k] > best ? part[k] : best;
  return best;
}

}  // namespace gradflow
