// Links against the installed package (gradflow::nn brings autograd and
// tensor) and takes one gradient through a layer.
#include <cstdio>

#include "autograd/ops.h"
#include "nn/linear.h"
#include "tensor/ops.h"

int main() {
  using namespace gradflow;
  Generator gen(0);
  nn::Linear layer(3, 2, {}, gen);
  Variable x(from_vector({1, 2, 3}, {1, 3}), true);
  sum(layer.forward(x)).backward();
  // d/dx sum(x W^T + b) = the column sums of W.
  Tensor expected = sum(layer.weight.data(), {0});
  bool ok = x.grad().to_vector() == expected.to_vector();
  std::printf("consumer: gradient through an installed nn::Linear %s\n", ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
