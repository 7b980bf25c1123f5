// Exercise 4: tanh's backward (docs/exercises/04_tanh_backward.md). The
// exercise build compiles this in place of tanh_backward in
// autograd/unary.cpp, the solution.
//
// y = tanh(x), element by element. Given y (saved by the forward) and
// g = dL/dy, both of x's shape, return dL/dx, of x's shape.
// Grade: ctest --test-dir build-ex -L exercises -R 04
#include "tensor/elementwise.h"
#include "tensor/error.h"
#include "tensor/map.h"

namespace gradflow {

Tensor tanh_backward(const Tensor& y, const Tensor& g) {
  (void)y, (void)g;  // delete this line once you use them
  throw Error("exercise 4: write tanh_backward (docs/exercises/04_tanh_backward.md)");
}

}  // namespace gradflow
