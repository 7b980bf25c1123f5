// Attention's scale, mask and softmax as one row-wise kernel, and its
// backward as another. The composed path (mul, masked_fill, softmax) made
// three passes over the (B, H, T, S) scores and three tensors of that size
// forward, and as many backward; these make one each. autograd's
// scaled_masked_softmax is built on them.
//
// Letters: S the last axis (the keys), R the rows (the product of every
// other axis, B * H * T for attention).
#pragma once

#include "tensor/tensor.h"

namespace gradflow {

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
