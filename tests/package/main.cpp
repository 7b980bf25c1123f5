// Builds against the installed package, as docs/library.md "Use gradflow in
// your project" says: one gradient through a layer, checked by hand, then a
// wrong call, which must arrive as a gradflow::Error of one line.
#include <gradflow/gradflow.h>
#include <gradflow/nn/linear.h>  // one header on its own works too

#include <cstdio>
#include <string>

int main() {
  using namespace gradflow;
  Generator gen(0);
  nn::Linear layer(3, 2, {}, gen);
  Variable x(from_vector({1, 2, 3}, {1, 3}), true);
  sum(layer.forward(x)).backward();
  // d/dx sum(x W^T + b) = the column sums of W.
  Tensor expected = sum(layer.weight.data(), {0});
  const bool grad_ok = x.grad().to_vector() == expected.to_vector();
  std::printf("consumer: gradient through an installed nn::Linear %s\n", grad_ok ? "ok" : "WRONG");

  std::string message;
  try {
    layer.forward(Variable(zeros({1, 4})));  // 4 features into a layer built for 3
  } catch (const Error& e) {
    message = e.what();
  }
  const bool error_ok = !message.empty() && message.find('\n') == std::string::npos;
  std::printf("consumer: a wrong shape %s: %s\n", error_ok ? "reads" : "is NOT reported as",
              message.c_str());
  return grad_ok && error_ok ? 0 : 1;
}
