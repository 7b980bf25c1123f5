// Attention's scale, mask and softmax as one row-wise kernel, and its
// backward as another. The composed path (mul, masked_fill, softmax) made
// three passes over the (B, H, T, S) scores and three tensors of that size
// forward, and as many backward; these make one each. autograd's
// scaled_masked_softmax is built on them.
//
// Letters: S the last axis (the keys), R the rows (the product of every
// other axis, B * H * T for attention).
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
// from two numbers per row). Every key masked: zeros, top -inf, inv 0. The
// row kernel of scaled_masked_softmax and of tensor/kernels/attention.h.
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

// softmax(z) along the last axis, with z = scale * scores where mask is 0
// and -inf where it is not. `mask` is undefined, or of any dtype and shape
// that broadcasts to scores' shape, 1 (non-zero) where a key is hidden. A row
// with every entry masked gives zeros, as softmax of an all -inf row does
// (tensor/reduce.h), not NaN.
Tensor scaled_masked_softmax(const Tensor& scores, double scale, const Tensor& mask);

// The gradient at the scores, from the forward's output y alone:
//   dscores = scale * y * (dy - sum(dy * y)) along the last axis.
// Masked entries have y = 0, so they get 0, and a fully masked row 0 throughout.
Tensor scaled_masked_softmax_backward(const Tensor& dy, const Tensor& y, double scale);

}  // namespace gradflow
