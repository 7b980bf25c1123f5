// Links against the installed package and takes one gradient.
#include <cstdio>

#include "autograd/ops.h"
#include "tensor/ops.h"

int main() {
  using namespace gradflow;
  Variable x(from_vector({1, 2, 3}), true);
  sum(x * x).backward();
  std::vector<double> g = x.grad().to_vector();
  bool ok = g == std::vector<double>{2, 4, 6};
  std::printf("consumer: d/dx sum(x^2) at (1, 2, 3) = (%g, %g, %g) %s\n", g[0], g[1], g[2],
              ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
