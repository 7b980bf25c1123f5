// Exercise 8: the causal mask (docs/exercises/08_causal_mask.md). The
// exercise build compiles this in place of causal_mask in nn/masks.cpp, the
// solution.
//
// A (T, S) tensor of `dtype`, 1 where query i may not see key j, 0 where it
// may. Query i sits at position i + offset among the S keys (offset > 0 when
// a KV cache holds the first keys) and sees the keys up to its own position.
// Grade: ctest --test-dir build-ex -L exercises -R 08
#include "nn/masks.h"
#include "tensor/creation.h"
#include "tensor/error.h"

namespace gradflow::nn {

Tensor causal_mask(int64_t t, int64_t s, DType dtype, int64_t offset) {
  (void)t, (void)s, (void)dtype, (void)offset;  // delete this line once you use them
  throw Error("exercise 8: write causal_mask (docs/exercises/08_causal_mask.md)");
}

}  // namespace gradflow::nn
