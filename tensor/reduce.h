// Reductions over any set of axes (negative axes count from the end), with
// keepdim, and the numerically stable softmax family along one axis.
#pragma once

#include <vector>

#include "tensor/tensor.h"

namespace gradflow {

Tensor sum(const Tensor& a, const Axes& axes = {}, bool keepdim = false);
Tensor mean(const Tensor& a, const Axes& axes = {}, bool keepdim = false);
// Variance with Bessel's correction by default (divide by n - correction).
Tensor var(const Tensor& a, const Axes& axes = {}, bool keepdim = false, int64_t correction = 1);

// Largest value along one axis and its index (the first, on ties; NaN wins).
struct MaxResult {
  Tensor values;
  Tensor indices;  // Int64
};
MaxResult max(const Tensor& a, int64_t axis, bool keepdim = false);
Tensor max(const Tensor& a);  // of every element, shape ()

// Sums a broadcast result back down to `shape` (which must broadcast to
// a.shape()): the reverse of expand, used to reduce gradients.
Tensor sum_to(const Tensor& a, const Shape& shape);

// exp(x - max) / sum(exp(x - max)) along `axis`. A row that is entirely -inf
// (every key masked) gives zeros rather than NaN.
Tensor softmax(const Tensor& a, int64_t axis);
// x - max - log(sum(exp(x - max))) along `axis`; an all -inf row stays -inf.
Tensor log_softmax(const Tensor& a, int64_t axis);

}  // namespace gradflow
