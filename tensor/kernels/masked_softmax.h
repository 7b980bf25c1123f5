// Attention's scale, mask and softmax for one row of scores, in place: the
// softmax step of tensor/kernels/attention.cpp, which runs it on each query
// row while the head's scores sit in cache, forward and again in the
// backward to recompute the weights.
//
// Letters: S the row's length (the keys).
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "tensor/kernels/fast_math.h"
#include "tensor/kernels/lanes.h"
#include "tensor/tensor.h"

namespace gradflow {

// One row of S scores into y = softmax(z), z = scale * score, -inf where
// mask_row (null: no mask) is non-zero; scores and y may be the same row.
// With find_stats the row's largest z (top) and 1 / sum(exp(z - top)) (inv)
// are computed and returned; without, the given ones are used, and the same
// row gives the same bits (how the attention backward recomputes its weights
// from two numbers per row). Every key masked: zeros, top -inf, inv 0.
template <class T>
void masked_softmax_row(const T* scores, const T* mask_row, T* y, int64_t s, T scale, T& top,
                        T& inv, bool find_stats) {
  const T neg_inf = -std::numeric_limits<T>::infinity();
  if (mask_row) {
    // Both sides computed, then one picked: a branch-free loop g++ vectorises.
    for (int64_t j = 0; j < s; ++j) {
      const T z = scores[j] * scale;
      y[j] = mask_row[j] != 0 ? neg_inf : z;
    }
  } else {
    for (int64_t j = 0; j < s; ++j) y[j] = scores[j] * scale;
  }
  if (find_stats) top = lane_max(y, s, neg_inf);
  if (top == neg_inf) {  // every key masked: no distribution to speak of
    std::fill(y, y + s, T{0});
    inv = 0;
    return;
  }
  // The row's max is subtracted first: softmax(z - c) = softmax(z) for any
  // c, and with c = top every exponent is <= 0, so exp, infinite in float32
  // past about 88, cannot overflow however large the scores. Overflow is not
  // why attention scales its scores (tensor/reduce.cpp's softmax_row,
  // docs/lessons/06_softmax_saturation.md).
  //
  // Masked entries are set to 0 rather than left to exp(-inf): the fast
  // float exp stops at e^-87 (tensor/kernels/fast_math.h), not at 0.
  const T m = top;
  if constexpr (std::is_same_v<T, float>) {
    for (int64_t j = 0; j < s; ++j) {
      const float e = fast::exp(y[j] - m);
      y[j] = y[j] == neg_inf ? 0.0f : e;
    }
  } else {
    for (int64_t j = 0; j < s; ++j) y[j] = y[j] == neg_inf ? 0.0 : std::exp(y[j] - m);
  }
  // Summed in T (16 lanes): rows are short and consumed in T.
  if (find_stats) inv = T{1} / lane_sum<T, 16>(s, [&](int64_t j) { return y[j]; });
  const T by = inv;
  for (int64_t j = 0; j < s; ++j) y[j] *= by;
}

}  // namespace gradflow
