// Exercise 3: the engine's gradient accumulation
// (docs/exercises/03_gradient_accumulation.md). The exercise build compiles
// this in place of add_gradient in autograd/engine.cpp, the solution.
//
// backward calls it when a second (third, ...) gradient reaches a value that
// was used more than once: so_far is what the earlier uses sent, g what this
// one sends, both of the value's shape. Return dL/dvalue over all of them so
// far, without changing so_far or g in place.
// Grade: ctest --test-dir build-ex -L exercises -R 03
#include "tensor/elementwise.h"
#include "tensor/error.h"

namespace gradflow {

Tensor add_gradient(const Tensor& so_far, const Tensor& g) {
  (void)so_far, (void)g;  // delete this line once you use them
  throw Error("exercise 3: write add_gradient (docs/exercises/03_gradient_accumulation.md)");
}

}  // namespace gradflow
