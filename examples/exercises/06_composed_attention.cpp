// Exercise 6: attention from the differentiable ops
// (docs/exercises/06_composed_attention.md). The exercise build compiles this
// in place of composed_attention in autograd/attention.cpp, the solution.
//
// q (..., T, D), k (..., S, D), v (..., S, Dv) -> (..., T, Dv):
//   logits  = scale * q k^T                      (..., T, S)
//   logits  = transform(logits), if a transform is given
//   weights = softmax over S of the logits, -inf where mask != 0
//   out     = weights v
// and, if kept is not null, *kept = {logits (before the mask), weights}.
// Every op you need is in autograd/ops.h; autograd builds the backward.
// Grade: ctest --test-dir build-ex -L exercises -R 06
#include <limits>

#include "autograd/ops.h"
#include "tensor/error.h"

namespace gradflow {

Variable composed_attention(const Variable& q, const Variable& k, const Variable& v, double scale,
                            const Tensor& mask,
                            const std::function<Variable(const Variable&)>& transform,
                            ComposedAttention* kept) {
  (void)q, (void)k, (void)v, (void)scale, (void)mask, (void)transform, (void)kept;  // delete me
  throw Error("exercise 6: write composed_attention (docs/exercises/06_composed_attention.md)");
}

}  // namespace gradflow
