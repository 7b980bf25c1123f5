// Broadcasting arithmetic. Each backward reduces its gradient back to the
// input's shape with sum_to (an input of shape (1, 4) broadcast against
// (3, 4) receives the sum of the three rows), and skips inputs that need none.
#include "autograd/ops.h"
#include "tensor/elementwise.h"
#include "tensor/map.h"
#include "tensor/reduce.h"

namespace gradflow {

Variable add(const Variable& a, const Variable& b) {
  const Shape sa = a.shape(), sb = b.shape();
  return make_result(add(a.data(), b.data()), "add", {a, b}, [sa, sb](const Tensor& g) {
    return std::vector<Tensor>{sum_to(g, sa), sum_to(g, sb)};
  });
}

Variable sub(const Variable& a, const Variable& b) {
  const Shape sa = a.shape(), sb = b.shape();
  const bool need_b = b.requires_grad();
  return make_result(sub(a.data(), b.data()), "sub", {a, b}, [sa, sb, need_b](const Tensor& g) {
    return std::vector<Tensor>{sum_to(g, sa), need_b ? neg(sum_to(g, sb)) : Tensor()};
  });
}

// z = x * y, broadcast: the gradient at x is g * y (g: the gradient at z,
// shaped like z), summed back to x's shape; at y the same with x and y swapped.
Tensor mul_backward(const Tensor& g, const Tensor& other, const Shape& shape);
#ifndef GRADFLOW_EXERCISES  // exercise 2: docs/exercises/02_mul_backward.md
Tensor mul_backward(const Tensor& g, const Tensor& other, const Shape& shape) {
  return sum_to(mul(g, other), shape);
}
#endif

Variable mul(const Variable& a, const Variable& b) {
  const Tensor x = a.data(), y = b.data();
  const bool need_a = a.requires_grad(), need_b = b.requires_grad();
  return make_result(mul(x, y), "mul", {a, b}, [x, y, need_a, need_b](const Tensor& g) {
    return std::vector<Tensor>{need_a ? mul_backward(g, y, x.shape()) : Tensor(),
                               need_b ? mul_backward(g, x, y.shape()) : Tensor()};
  });
}

Variable div(const Variable& a, const Variable& b) {
  const Tensor x = a.data(), y = b.data();
  const bool need_a = a.requires_grad(), need_b = b.requires_grad();
  return make_result(div(x, y), "div", {a, b}, [x, y, need_a, need_b](const Tensor& g) {
    Tensor ga, gb;
    if (need_a) ga = sum_to(div(g, y), x.shape());
    if (need_b) {
      // -g x / y^2, fused into one pass over the broadcast shape.
      Tensor gx = mul(g, x);
      gb = sum_to(map_binary(gx, y, "div_backward", [](auto p, auto q) { return -p / (q * q); }),
                  y.shape());
    }
    return std::vector<Tensor>{ga, gb};
  });
}

Variable add(const Variable& a, double s) {
  return make_result(add(a.data(), s), "add", {a},
                     [](const Tensor& g) { return std::vector<Tensor>{g}; });
}

Variable sub(const Variable& a, double s) {
  return make_result(sub(a.data(), s), "sub", {a},
                     [](const Tensor& g) { return std::vector<Tensor>{g}; });
}

Variable sub(double s, const Variable& a) {
  return make_result(sub(s, a.data()), "sub", {a},
                     [](const Tensor& g) { return std::vector<Tensor>{neg(g)}; });
}

Variable mul(const Variable& a, double s) {
  return make_result(mul(a.data(), s), "mul", {a},
                     [s](const Tensor& g) { return std::vector<Tensor>{mul(g, s)}; });
}

Variable div(const Variable& a, double s) {
  return make_result(div(a.data(), s), "div", {a},
                     [s](const Tensor& g) { return std::vector<Tensor>{div(g, s)}; });
}

Variable div(double s, const Variable& a) {
  const Tensor x = a.data();
  return make_result(div(s, x), "div", {a}, [x, s](const Tensor& g) {
    return std::vector<Tensor>{map_binary(g, x, "div_backward", [s](auto p, auto q) {
      return static_cast<decltype(p)>(-s) * p / (q * q);
    })};
  });
}

Variable neg(const Variable& a) {
  return make_result(neg(a.data()), "neg", {a},
                     [](const Tensor& g) { return std::vector<Tensor>{neg(g)}; });
}

}  // namespace gradflow
