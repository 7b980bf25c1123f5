// Elementwise kernels from a scalar function: map_unary, map_binary and
// map_ternary apply f to every element (with broadcasting) and return a new
// contiguous tensor. Every elementwise op in gradflow is one line on top of
// these, and a contributor's new op can be too:
//
//   Tensor softsign(const Tensor& x) {
//     return map_unary(x, "softsign", [](auto v) { return v / (1 + std::abs(v)); });
//   }
//
// f is called with float or double (matching the inputs' dtype) and must
// return the same type. When every operand walks with step 1 the loop body is
// a plain indexed loop, which g++ vectorises at -O3. Large tensors are split
// over the thread pool (parallel.h), so f must be safe to call from several
// threads at once (a lambda that only reads what it captures is).
#pragma once

#include <string_view>

#include "tensor/strided_loop.h"
#include "tensor/tensor.h"

namespace gradflow {

inline void check_same_dtype(const Tensor& a, const Tensor& b, std::string_view op) {
  if (!a.defined() || !b.defined()) fail(op, ": undefined tensor");
  if (a.dtype() != b.dtype())
    fail(op, ": dtypes differ: ", dtype_name(a.dtype()), " and ", dtype_name(b.dtype()));
}

template <class F>
Tensor map_unary(const Tensor& a, std::string_view op, F f) {
  if (!a.defined()) fail(op, ": undefined tensor");
  Tensor out = Tensor::empty(a.shape(), a.dtype());
  visit_float(a.dtype(), op, [&](auto zero) {
    using T = decltype(zero);
    T* o = out.data<T>();
    const T* x = a.data<T>();
    parallel_for_each_run<2>(a.shape(), {out.strides(), a.strides()},
                             [&](int64_t n, Offsets<2> off, Offsets<2> st) {
                               T* po = o + off[0];
                               const T* px = x + off[1];
                               if (st[1] == 1) {
                                 for (int64_t i = 0; i < n; ++i) po[i] = f(px[i]);
                               } else {
                                 for (int64_t i = 0; i < n; ++i) po[i] = f(px[i * st[1]]);
                               }
                             });
  });
  return out;
}

template <class F>
Tensor map_binary(const Tensor& a, const Tensor& b, std::string_view op, F f) {
  check_same_dtype(a, b, op);
  Shape shape = broadcast_shapes(a.shape(), b.shape(), op);
  Tensor out = Tensor::empty(shape, a.dtype());
  Strides sa = broadcast_strides(a.shape(), a.strides(), shape);
  Strides sb = broadcast_strides(b.shape(), b.strides(), shape);
  visit_float(a.dtype(), op, [&](auto zero) {
    using T = decltype(zero);
    T* o = out.data<T>();
    const T* x = a.data<T>();
    const T* y = b.data<T>();
    parallel_for_each_run<3>(shape, {out.strides(), sa, sb},
                             [&](int64_t n, Offsets<3> off, Offsets<3> st) {
                               T* po = o + off[0];
                               const T* px = x + off[1];
                               const T* py = y + off[2];
                               // The three layouts that matter for speed: same shape, and a scalar
                               // (or a broadcast row) on either side.
                               if (st[1] == 1 && st[2] == 1) {
                                 for (int64_t i = 0; i < n; ++i) po[i] = f(px[i], py[i]);
                               } else if (st[1] == 1 && st[2] == 0) {
                                 const T vy = *py;
                                 for (int64_t i = 0; i < n; ++i) po[i] = f(px[i], vy);
                               } else if (st[1] == 0 && st[2] == 1) {
                                 const T vx = *px;
                                 for (int64_t i = 0; i < n; ++i) po[i] = f(vx, py[i]);
                               } else {
                                 for (int64_t i = 0; i < n; ++i)
                                   po[i] = f(px[i * st[1]], py[i * st[2]]);
                               }
                             });
  });
  return out;
}

template <class F>
Tensor map_ternary(const Tensor& a, const Tensor& b, const Tensor& c, std::string_view op, F f) {
  check_same_dtype(a, b, op);
  check_same_dtype(a, c, op);
  Shape shape = broadcast_shapes(broadcast_shapes(a.shape(), b.shape(), op), c.shape(), op);
  Tensor out = Tensor::empty(shape, a.dtype());
  Strides sa = broadcast_strides(a.shape(), a.strides(), shape);
  Strides sb = broadcast_strides(b.shape(), b.strides(), shape);
  Strides sc = broadcast_strides(c.shape(), c.strides(), shape);
  visit_float(a.dtype(), op, [&](auto zero) {
    using T = decltype(zero);
    T* o = out.data<T>();
    const T* x = a.data<T>();
    const T* y = b.data<T>();
    const T* z = c.data<T>();
    parallel_for_each_run<4>(shape, {out.strides(), sa, sb, sc},
                             [&](int64_t n, Offsets<4> off, Offsets<4> st) {
                               T* po = o + off[0];
                               const T* px = x + off[1];
                               const T* py = y + off[2];
                               const T* pz = z + off[3];
                               if (st[1] == 1 && st[2] == 1 && st[3] == 1) {
                                 for (int64_t i = 0; i < n; ++i) po[i] = f(px[i], py[i], pz[i]);
                               } else {
                                 for (int64_t i = 0; i < n; ++i)
                                   po[i] = f(px[i * st[1]], py[i * st[2]], pz[i * st[3]]);
                               }
                             });
  });
  return out;
}

}  // namespace gradflow
