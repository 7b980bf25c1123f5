// Elementwise functions of one input. Where the derivative is a function of
// the output (exp, sqrt, tanh) the backward keeps the output, not the input.
#include <cmath>
#include <numbers>
#include <type_traits>

#include "autograd/ops.h"
#include "tensor/elementwise.h"
#include "tensor/fast_math.h"
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

Variable tanh(const Variable& x) {
  Tensor y = tanh(x.data());
  return make_result(y, "tanh", {x}, [y](const Tensor& g) {
    return std::vector<Tensor>{
        map_binary(g, y, "tanh_backward", [](auto p, auto q) { return p * (1 - q * q); })};
  });
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
  return make_result(gelu(xd), "gelu", {x}, [xd](const Tensor& g) {
    // d/dx x Phi(x) = Phi(x) + x phi(x), in one pass with the multiply by g.
    return std::vector<Tensor>{map_binary(g, xd, "gelu_backward", [](auto p, auto v) {
      using T = decltype(v);
      const T z = v * T(std::numbers::sqrt2 / 2);
      const T inv_sqrt_2pi = T(std::numbers::inv_sqrtpi / std::numbers::sqrt2);
      if constexpr (std::is_same_v<T, float>) {  // vectorises; see tensor/fast_math.h
        return p * (0.5f * (1 + fast::erf(z)) + v * fast::exp(-z * z) * inv_sqrt_2pi);
      } else {
        return p * (0.5 * (1 + std::erf(z)) + v * std::exp(-z * z) * inv_sqrt_2pi);
      }
    })};
  });
}

}  // namespace gradflow
