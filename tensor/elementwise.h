// Elementwise math with NumPy/PyTorch broadcasting. Results are new
// contiguous tensors of the inputs' (floating) dtype; both inputs must have
// the same dtype. Comparisons return 1 or 0 in that dtype, so a comparison
// can be used directly as a mask or multiplied in.
#pragma once

#include "tensor/tensor.h"

namespace gradflow {

Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor add(const Tensor& a, double s);
Tensor sub(const Tensor& a, double s);
Tensor sub(double s, const Tensor& a);
Tensor mul(const Tensor& a, double s);
Tensor div(const Tensor& a, double s);
Tensor div(double s, const Tensor& a);

Tensor neg(const Tensor& a);
Tensor exp(const Tensor& a);
Tensor log(const Tensor& a);
Tensor sqrt(const Tensor& a);
Tensor tanh(const Tensor& a);
Tensor pow(const Tensor& a, double exponent);
Tensor relu(const Tensor& a);
Tensor gelu(const Tensor& a);  // x * Phi(x) = 0.5 x (1 + erf(x / sqrt 2))
// grad * gelu'(x), the backward of gelu in one pass.
Tensor gelu_backward(const Tensor& grad, const Tensor& x);
// gelu_backward(grad, x) and gelu(x) from one pass that computes erf and exp
// once, for a backward that needs both (autograd's gelu_linear). grad and x
// must have the same shape (no broadcasting) and dtype; any strides. grad is taken by
// value: handed the only handle to a contiguous grad (a temporary, or
// std::move), grad_x is written over it instead of into a new tensor, so the
// pass holds one tensor of x's size less.
struct GeluBackward {
  Tensor grad_x;  // grad * gelu'(x)
  Tensor value;   // gelu(x)
};
GeluBackward gelu_backward_with_value(Tensor grad, const Tensor& x);
Tensor abs(const Tensor& a);

Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, double s);
Tensor lt(const Tensor& a, double s);

// cond ? a : b, elementwise; cond may be of any dtype (non-zero is true).
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
// x where mask is zero, value where it is non-zero.
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value);

// True when every element is finite (no NaN or Inf).
bool all_finite(const Tensor& a);

// dst += src, in place, src broadcast to dst's shape.
void add_(Tensor& dst, const Tensor& src);

inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator+(const Tensor& a, double s) { return add(a, s); }
inline Tensor operator-(const Tensor& a, double s) { return sub(a, s); }
inline Tensor operator*(const Tensor& a, double s) { return mul(a, s); }
inline Tensor operator/(const Tensor& a, double s) { return div(a, s); }
inline Tensor operator*(double s, const Tensor& a) { return mul(a, s); }
inline Tensor operator-(const Tensor& a) { return neg(a); }

}  // namespace gradflow
