// LayerNorm over the last axis as two row-wise kernels, forward and
// backward, the way llm.c writes them: the forward keeps each row's mean and
// 1/std so the backward needs only those and x. autograd's layer_norm is
// built on these; this layer knows nothing of gradients beyond the formulas.
//
// Letters: C the last axis (the one normalised), R the number of rows (the
// product of every other axis).
#pragma once

#include "tensor/tensor.h"

namespace gradflow {

struct LayerNormForward {
  Tensor y;     // x's shape: (x - mean) * rstd * weight + bias
  Tensor mean;  // (R), x's dtype
  Tensor rstd;  // (R), 1 / sqrt(var + eps), var the biased variance (as PyTorch)
};

// x is (..., C) of any layout; weight and bias are (C) or undefined (then 1
// and 0), all of one floating dtype. Throws naming layer_norm otherwise.
LayerNormForward layer_norm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                    double eps);

struct LayerNormGrads {
  Tensor dx;       // x's shape
  Tensor dweight;  // (C)
  Tensor dbias;    // (C)
};

// With xhat = (x - mean) * rstd and g = dy * weight, row by row:
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat))
// and over all rows dweight = sum(dy * xhat), dbias = sum(dy). Only the
// gradients asked for are computed; the others stay undefined. The column
// sums are cut into a fixed number of row groups, never by thread, so they
// are bitwise the same at any thread count.
// REQUIRES: mean and rstd from layer_norm_forward(x, weight, ...); dy of x's shape.
LayerNormGrads layer_norm_backward(const Tensor& dy, const Tensor& x, const Tensor& mean,
                                   const Tensor& rstd, const Tensor& weight, bool need_dx,
                                   bool need_dweight, bool need_dbias);

}  // namespace gradflow
