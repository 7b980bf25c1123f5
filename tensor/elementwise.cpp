#include "tensor/elementwise.h"

#include <cmath>
#include <functional>
#include <numbers>
#include <type_traits>

#include "tensor/kernels/fast_math.h"
#include "tensor/map.h"

namespace gradflow {

namespace {
// A scalar operand as a 0-d tensor of a's dtype, so scalar forms reuse the
// broadcasting kernels (the broadcast branch loads it once per run).
Tensor scalar_like(const Tensor& a, double s) { return Tensor::empty({}, a.dtype()).fill_(s); }
}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
  return map_binary(a, b, "add", [](auto x, auto y) { return x + y; });
}
Tensor sub(const Tensor& a, const Tensor& b) {
  return map_binary(a, b, "sub", [](auto x, auto y) { return x - y; });
}
Tensor mul(const Tensor& a, const Tensor& b) {
  return map_binary(a, b, "mul", [](auto x, auto y) { return x * y; });
}
Tensor div(const Tensor& a, const Tensor& b) {
  return map_binary(a, b, "div", [](auto x, auto y) { return x / y; });
}
Tensor add(const Tensor& a, double s) { return add(a, scalar_like(a, s)); }
Tensor sub(const Tensor& a, double s) { return sub(a, scalar_like(a, s)); }
Tensor sub(double s, const Tensor& a) { return sub(scalar_like(a, s), a); }
Tensor mul(const Tensor& a, double s) { return mul(a, scalar_like(a, s)); }
Tensor div(const Tensor& a, double s) { return div(a, scalar_like(a, s)); }
Tensor div(double s, const Tensor& a) { return div(scalar_like(a, s), a); }

Tensor neg(const Tensor& a) {
  return map_unary(a, "neg", [](auto x) { return -x; });
}
Tensor exp(const Tensor& a) {
  return map_unary(a, "exp", [](auto x) { return std::exp(x); });
}
Tensor log(const Tensor& a) {
  return map_unary(a, "log", [](auto x) { return std::log(x); });
}
Tensor sqrt(const Tensor& a) {
  return map_unary(a, "sqrt", [](auto x) { return std::sqrt(x); });
}
Tensor tanh(const Tensor& a) {
  return map_unary(a, "tanh", [](auto x) { return std::tanh(x); });
}
Tensor abs(const Tensor& a) {
  return map_unary(a, "abs", [](auto x) { return std::abs(x); });
}
Tensor pow(const Tensor& a, double exponent) {
  if (exponent == 2) return map_unary(a, "pow", [](auto x) { return x * x; });
  return map_unary(a, "pow", [exponent](auto x) {
    using T = decltype(x);
    return static_cast<T>(std::pow(x, static_cast<T>(exponent)));
  });
}
Tensor relu(const Tensor& a) {
  // x < 0, not x > 0: NaN fails both tests and so passes through, as in PyTorch.
  return map_unary(a, "relu", [](auto x) { return x < 0 ? decltype(x){0} : x; });
}

namespace {
// The two halves of GELU's derivative, d/dx x Phi(x) = Phi(x) + x phi(x), with
// Phi and phi the standard normal's cdf and density; gelu(x) is x Phi(x). One
// place for the float/double split shared by the gelu kernels: float uses
// fast_math.h, which vectorises; double uses libm.
template <class T>
T normal_cdf(T x) {
  const T z = x * T(std::numbers::sqrt2 / 2);
  if constexpr (std::is_same_v<T, float>) {
    return 0.5f * (1 + fast::erf(z));
  } else {
    return 0.5 * (1 + std::erf(z));
  }
}
template <class T>
T x_normal_pdf(T x) {
  const T z = x * T(std::numbers::sqrt2 / 2);
  const T inv_sqrt_2pi = T(std::numbers::inv_sqrtpi / std::numbers::sqrt2);
  if constexpr (std::is_same_v<T, float>) {
    return x * fast::exp(-z * z) * inv_sqrt_2pi;
  } else {
    return x * std::exp(-z * z) * inv_sqrt_2pi;
  }
}
}  // namespace

Tensor gelu(const Tensor& a) {
  return map_unary(a, "gelu", [](auto x) { return x * normal_cdf(x); });
}

Tensor gelu_backward(const Tensor& grad, const Tensor& x) {
  return map_binary(grad, x, "gelu_backward",
                    [](auto p, auto v) { return p * (normal_cdf(v) + x_normal_pdf(v)); });
}

GeluBackward gelu_backward_with_value(Tensor grad, const Tensor& x) {
  constexpr std::string_view op = "gelu_backward_with_value";
  check_same_dtype(grad, x, op);
  if (grad.shape() != x.shape())
    fail(op, ": grad of shape ", shape_str(grad.shape()), " does not match x of shape ",
         shape_str(x.shape()));
  // Nobody else can see grad's elements when this is its storage's only
  // handle, so they may be overwritten (each is read before it is written).
  const bool in_place = grad.is_contiguous() && grad.storage().use_count() == 1;
  GeluBackward out{in_place ? grad : Tensor::empty(x.shape(), x.dtype()),
                   Tensor::empty(x.shape(), x.dtype())};
  visit_float(x.dtype(), op, [&](auto zero) {
    using T = decltype(zero);
    T* dx = out.grad_x.data<T>();
    T* value = out.value.data<T>();
    const T* g = grad.data<T>();
    const T* xs = x.data<T>();
    // Shape: grad, x, grad_x and value all (...); the outputs are contiguous,
    // so a run steps through them by 1.
    parallel_for_each_run<4>(
        x.shape(), {out.grad_x.strides(), out.value.strides(), grad.strides(), x.strides()},
        [&](int64_t n, Offsets<4> off, Offsets<4> st) {
          T* pd = dx + off[0];
          T* pv = value + off[1];
          const T* pg = g + off[2];
          const T* px = xs + off[3];
          auto both = [](T p, T v, T& d, T& a) {
            const T cdf = normal_cdf(v);
            a = v * cdf;
            d = p * (cdf + x_normal_pdf(v));
          };
          if (st[2] == 1 && st[3] == 1) {
            for (int64_t i = 0; i < n; ++i) both(pg[i], px[i], pd[i], pv[i]);
          } else {
            for (int64_t i = 0; i < n; ++i) both(pg[i * st[2]], px[i * st[3]], pd[i], pv[i]);
          }
        });
  });
  return out;
}

namespace {
template <class Pred>
Tensor compare(const Tensor& a, const Tensor& b, const char* op, Pred pred) {
  return map_binary(
      a, b, op, [pred](auto x, auto y) { return pred(x, y) ? decltype(x){1} : decltype(x){0}; });
}
}  // namespace

Tensor eq(const Tensor& a, const Tensor& b) { return compare(a, b, "eq", std::equal_to<>{}); }
Tensor ne(const Tensor& a, const Tensor& b) { return compare(a, b, "ne", std::not_equal_to<>{}); }
Tensor lt(const Tensor& a, const Tensor& b) { return compare(a, b, "lt", std::less<>{}); }
Tensor le(const Tensor& a, const Tensor& b) { return compare(a, b, "le", std::less_equal<>{}); }
Tensor gt(const Tensor& a, const Tensor& b) { return compare(a, b, "gt", std::greater<>{}); }
Tensor ge(const Tensor& a, const Tensor& b) { return compare(a, b, "ge", std::greater_equal<>{}); }
Tensor gt(const Tensor& a, double s) { return gt(a, scalar_like(a, s)); }
Tensor lt(const Tensor& a, double s) { return lt(a, scalar_like(a, s)); }

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  if (!cond.defined()) fail("where: undefined condition");
  return map_ternary(cond.to(a.dtype()), a, b, "where",
                     [](auto c, auto x, auto y) { return c != 0 ? x : y; });
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
  if (!mask.defined()) fail("masked_fill: undefined mask");
  if (broadcast_shapes(x.shape(), mask.shape(), "masked_fill") != x.shape())
    fail("masked_fill: mask of shape ", shape_str(mask.shape()),
         " does not broadcast to the input's shape ", shape_str(x.shape()));
  return map_binary(x, mask.to(x.dtype()), "masked_fill", [value](auto v, auto m) {
    return m != 0 ? static_cast<decltype(v)>(value) : v;
  });
}

bool all_finite(const Tensor& a) {
  bool finite = true;
  visit_float(a.dtype(), "all_finite", [&](auto zero) {
    using T = decltype(zero);
    const T* base = a.data<T>();
    for_each_run<1>(a.shape(), {a.strides()}, [&](int64_t n, Offsets<1> off, Offsets<1> st) {
      // x - x is 0 for finite x and NaN for NaN and Inf; summing keeps it branch-free.
      T acc = 0;
      for (int64_t i = 0; i < n; ++i) acc += base[off[0] + i * st[0]] - base[off[0] + i * st[0]];
      finite = finite && acc == 0;
    });
  });
  return finite;
}

void add_(Tensor& dst, const Tensor& src) {
  check_same_dtype(dst, src, "add_");
  if (broadcast_shapes(src.shape(), dst.shape(), "add_") != dst.shape())
    fail("add_: source of shape ", shape_str(src.shape()), " does not broadcast to ",
         shape_str(dst.shape()));
  Strides ss = broadcast_strides(src.shape(), src.strides(), dst.shape());
  dst.storage()->bump_version();
  visit_float(dst.dtype(), "add_", [&](auto zero) {
    using T = decltype(zero);
    T* d = dst.data<T>();
    const T* s = src.data<T>();
    auto kernel = [&](int64_t n, Offsets<2> o, Offsets<2> st) {
      T* pd = d + o[0];
      const T* ps = s + o[1];
      if (st[0] == 1 && st[1] == 1) {
        for (int64_t i = 0; i < n; ++i) pd[i] += ps[i];
      } else {
        for (int64_t i = 0; i < n; ++i) pd[i * st[0]] += ps[i * st[1]];
      }
    };
    // A dst that repeats an element (a stride 0 from expand) is added to
    // once per repeat, in order: only then is it left to one thread.
    bool repeats = false;
    for (size_t k = 0; k < dst.shape().size(); ++k)
      repeats = repeats || (dst.strides()[k] == 0 && dst.shape()[k] > 1);
    if (repeats)
      for_each_run<2>(dst.shape(), {dst.strides(), ss}, kernel);
    else
      parallel_for_each_run<2>(dst.shape(), {dst.strides(), ss}, kernel);
  });
}

}  // namespace gradflow
