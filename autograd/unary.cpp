// Elementwise functions of one input. Where the derivative is a function of
// the output (exp, sqrt, tanh) the backward keeps the output, not the input.
#include <cmath>
#include <numbers>
#include <type_traits>

#include "autograd/ops.h"
#include "tensor/elementwise.h"
#include "tensor/map.h"

namespace gradflow {

Variable exp(const Variable& x) {
  Tensor y = exp(x.data());
  return make_result(y, "exp", {x},
                     [y](const Tensor& g) { return std::vector<Tensor>{mul(g, y)}; });
}

Variable log(const Variable& x) {
  const Tensor xd = x.data();
  return make_result(log(xd), "log", {x},
                     [xd](const Tensor& g) { return std::vector<Tensor>{div(g, xd)}; });
}

Variable sqrt(const Variable& x) {
  Tensor y = sqrt(x.data());
  return make_result(y, "sqrt", {x}, [y](const Tensor& g) {
    return std::vector<Tensor>{
        map_binary(g, y, "sqrt_backward", [](auto p, auto q) { return p / (q + q); })};
  });
}

Variable pow(const Variable& x, double p) {
  const Tensor xd = x.data();
  return make_result(pow(xd, p), "pow", {x}, [xd, p](const Tensor& g) {
    return std::vector<Tensor>{map_binary(g, xd, "pow_backward", [p](auto gv, auto v) {
      using T = decltype(v);
      return gv * static_cast<T>(p) * static_cast<T>(std::pow(v, static_cast<T>(p - 1)));
    })};
  });
}

// dL/dx = g (1 - y^2) with y = tanh(x): the output is all it needs.
Tensor tanh_backward(const Tensor& y, const Tensor& g);
#ifndef GRADFLOW_EXERCISES  // exercise 4: docs/exercises/04_tanh_backward.md
Tensor tanh_backward(const Tensor& y, const Tensor& g) {
  return map_binary(g, y, "tanh_backward", [](auto p, auto q) { return p * (1 - q * q); });
}
#endif

Variable tanh(const Variable& x) {
  Tensor y = tanh(x.data());
  return make_result(y, "tanh", {x},
                     [y](const Tensor& g) { return std::vector<Tensor>{tanh_backward(y, g)}; });
}

Variable relu(const Variable& x) {
  const Tensor xd = x.data();
  return make_result(relu(xd), "relu", {x}, [xd](const Tensor& g) {
    return std::vector<Tensor>{map_binary(
        g, xd, "relu_backward", [](auto p, auto v) { return v > 0 ? p : decltype(p){0}; })};
  });
}

Variable gelu(const Variable& x) {
  const Tensor xd = x.data();
  return make_result(gelu(xd), "gelu", {x},
                     [xd](const Tensor& g) { return std::vector<Tensor>{gelu_backward(g, xd)}; });
}

// sigmoid(v) = 1 / (1 + exp(-v)) reaches 0 for v below about -88 (float) and
// never NaN: exp(-v) overflows to inf and 1 / inf is 0, so silu and its
// derivative are exactly 0 there, where composing x / (1 + exp(-x)) from the
// ops above would give a gradient of 0 * inf = NaN.
Variable silu(const Variable& x) {
  const Tensor xd = x.data();
  Tensor y = map_unary(xd, "silu", [](auto v) { return v / (1 + std::exp(-v)); });
  return make_result(y, "silu", {x}, [xd](const Tensor& g) {
    return std::vector<Tensor>{map_binary(g, xd, "silu_backward", [](auto p, auto v) {
      const auto s = 1 / (1 + std::exp(-v));
      return p * s * (1 + v * (1 - s));
    })};
  });
}

}  // namespace gradflow
