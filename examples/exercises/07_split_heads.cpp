// Exercise 7: splitting the projections into heads
// (docs/exercises/07_split_heads.md). The exercise build compiles this in
// place of MultiHeadAttention::split_heads in nn/attention.cpp, the solution.
//
// x (B, T, C) with C = H * D, a projection's output: channels h * D to
// h * D + D - 1 of each position are head h's. Return (B, H, T, D), element
// [b, h, t, d] = x[b, t, h * D + d]. heads() is H and d_k() is D.
// Grade: ctest --test-dir build-ex -L exercises -R 07
#include "autograd/ops.h"
#include "nn/attention.h"
#include "tensor/error.h"

namespace gradflow::nn {

Variable MultiHeadAttention::split_heads(const Variable& x) const {
  (void)x;  // delete this line once you use it
  throw Error("exercise 7: write split_heads (docs/exercises/07_split_heads.md)");
}

}  // namespace gradflow::nn
