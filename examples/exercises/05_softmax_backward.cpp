// Exercise 5: the backward of softmax (docs/exercises/05_softmax_backward.md).
// The exercise build compiles this in place of softmax_backward in
// autograd/softmax.cpp, the solution.
//
// y = softmax(x) along `axis`; y and g = dL/dy have x's shape. Return
// dL/dx = J^T g with J = diag(y) - y y^T along the axis, without forming J:
// dx_i = y_i (g_i - sum_j g_j y_j).
// Grade: ctest --test-dir build-ex -L exercises -R 05
#include "tensor/elementwise.h"
#include "tensor/error.h"
#include "tensor/reduce.h"

namespace gradflow {

Tensor softmax_backward(const Tensor& y, const Tensor& g, int64_t axis) {
  (void)y, (void)g, (void)axis;  // delete this line once you use them
  throw Error("exercise 5: write softmax_backward (docs/exercises/05_softmax_backward.md)");
}

}  // namespace gradflow
