// Exercise 2: the backward of mul, with broadcasting
// (docs/exercises/02_mul_backward.md). The exercise build compiles this in
// place of mul_backward in autograd/arithmetic.cpp, the solution.
//
// z = x * y, where x and y broadcast to z's shape. Given g = dL/dz (z's
// shape), return dL/dx = g * y summed back to x's shape. mul calls it twice:
// mul_backward(g, y, x.shape()) for x, mul_backward(g, x, y.shape()) for y.
// Grade: ctest --test-dir build-ex -L exercises -R 02
#include "tensor/elementwise.h"
#include "tensor/error.h"
#include "tensor/reduce.h"

namespace gradflow {

Tensor mul_backward(const Tensor& g, const Tensor& other, const Shape& shape) {
  (void)g, (void)other, (void)shape;  // delete this line once you use them
  throw Error("exercise 2: write mul_backward (docs/exercises/02_mul_backward.md)");
}

}  // namespace gradflow
