// Exercise 1: the order backward walks the graph in
// (docs/exercises/01_walk_order.md). The exercise build compiles this in
// place of forward_order in autograd/engine.cpp, the solution.
//
// Return every Variable reachable from root through the nodes' inputs
// (root->grad_fn->inputs, and theirs, ...), each once, each after every
// input it was made from, root last. backward walks the list in reverse, so
// that a node runs only after every node that uses it has sent its share.
// Grade: ctest --test-dir build-ex -L exercises -R 01
#include <vector>

#include "autograd/variable.h"
#include "tensor/error.h"

namespace gradflow {

std::vector<VariableImpl*> forward_order(VariableImpl* root) {
  (void)root;  // delete this line once you use it
  throw Error("exercise 1: write forward_order (docs/exercises/01_walk_order.md)");
}

}  // namespace gradflow
