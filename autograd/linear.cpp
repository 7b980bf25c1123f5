// A Linear layer's product, x weight^T + bias, as one op, and the same after
// a GELU for a feed-forward's second layer; each with its composed reference
// below it.
//
// GEMM adds the bias (tensor/matmul.h), so the (..., N) output takes no pass
// of its own for it, and the backward reads the gradient once per input.
#include "autograd/ops.h"
#include "autograd/reference.h"
#include "tensor/elementwise.h"
#include "tensor/matmul.h"
#include "tensor/reduce.h"

namespace gradflow {

namespace {

// The operands of linear and gelu_linear, checked, and which gradients are
// wanted: x (..., K), weight (N, K), bias (N) or undefined.
struct Operands {
  Tensor x, w, b;
  bool need_x, need_w, need_b;
};

Operands operands(const char* op, const Variable& x, const Variable& weight, const Variable& bias) {
  if (!x.defined() || !weight.defined()) fail(op, ": undefined input");
  if (weight.ndim() != 2 || x.ndim() < 1 || x.shape().back() != weight.shape()[1])
    fail(op, ": expected x (..., K) and weight (N, K), got x ", shape_str(x.shape()),
         " and weight ", shape_str(weight.shape()));
  if (bias.defined() && (bias.ndim() != 1 || bias.shape()[0] != weight.shape()[0]))
    fail(op, ": expected bias (", weight.shape()[0], ") for weight ", shape_str(weight.shape()),
         ", got ", shape_str(bias.shape()));
  if (x.dtype() != weight.dtype() || (bias.defined() && bias.dtype() != x.dtype()))
    fail(op, ": dtypes differ: x ", dtype_name(x.dtype()), ", weight ", dtype_name(weight.dtype()),
         bias.defined() ? ", bias " : "", bias.defined() ? dtype_name(bias.dtype()) : "");
  return {x.data(),          weight.data(),          bias.defined() ? bias.data() : Tensor(),
          x.requires_grad(), weight.requires_grad(), bias.defined() && bias.requires_grad()};
}

}  // namespace

Variable linear(const Variable& x, const Variable& weight, const Variable& bias) {
  const Operands in = operands("linear", x, weight, bias);
  if (reference_ops()) return linear_reference(x, weight, bias);
  return make_result(linear(in.x, in.w, in.b), "linear", {x, weight, bias},
                     [xd = in.x, w = in.w, need_x = in.need_x, need_w = in.need_w,
                      need_b = in.need_b](const Tensor& g) {
                       // Shape: x as (M, K) rows, weight (N, K), g as (M, N) rows:
                       // dx = g weight, dweight = g^T x, dbias = the column sums of g.
                       const int64_t n = w.shape()[0], k = w.shape()[1];
                       const Tensor g_rows = g.reshape({-1, n});
                       Tensor gx, gw, gb;
                       if (need_x) gx = matmul(g_rows, w).view(xd.shape());
                       if (need_w) gw = matmul(g_rows.transpose(0, 1), xd.reshape({-1, k}));
                       if (need_b) gb = sum(g_rows, {0});
                       return std::vector<Tensor>{gx, gw, gb};
                     });
}

Variable linear_reference(const Variable& x, const Variable& weight, const Variable& bias) {
  operands("linear_reference", x, weight, bias);
  // Shape: x as (M, K) rows, since matmul wants a matrix; y (M, N) back to (..., N).
  const int64_t k = weight.shape()[1];
  Shape out_shape = x.shape();
  out_shape.back() = weight.shape()[0];
  Variable y = matmul(reshape(x, {-1, k}), transpose(weight, 0, 1));
  if (bias.defined()) y = y + bias;  // (N) broadcast over the rows
  return reshape(y, out_shape);
}

// gelu(h) is not kept from the forward to the backward: the backward
// recomputes it from h, which gelu's own derivative needs anyway. In a
// transformer's feed-forward that is one (B, T, d_ff) tensor less per layer
// (8 MB a layer in gpt-small). When both h and the weight want a gradient,
// gelu(h) comes out of the same pass over h as dh (one erf per element).
Variable gelu_linear(const Variable& h, const Variable& weight, const Variable& bias) {
  const Operands in = operands("gelu_linear", h, weight, bias);
  if (reference_ops()) return gelu_linear_reference(h, weight, bias);
  return make_result(linear(gelu(in.x), in.w, in.b), "gelu_linear", {h, weight, bias},
                     [hd = in.x, w = in.w, need_h = in.need_x, need_w = in.need_w,
                      need_b = in.need_b](const Tensor& g) {
                       // Shape: h (..., K), weight (N, K), g (..., N); a = gelu(h) as (M, K) rows.
                       const int64_t n = w.shape()[0], k = w.shape()[1];
                       const Tensor g_rows = g.reshape({-1, n});
                       Tensor gh, gw, gb, a;
                       if (need_h) {
                         Tensor da = matmul(g_rows, w).view(hd.shape());  // the gradient at gelu(h)
                         if (need_w) {
                           GeluBackward both = gelu_backward_with_value(std::move(da), hd);
                           gh = both.grad_x;
                           a = both.value;
                         } else {
                           gh = gelu_backward(da, hd);
                         }
                       } else if (need_w) {
                         a = gelu(hd);
                       }
                       if (need_w) gw = matmul(g_rows.transpose(0, 1), a.reshape({-1, k}));
                       if (need_b) gb = sum(g_rows, {0});
                       return std::vector<Tensor>{gh, gw, gb};
                     });
}

Variable gelu_linear_reference(const Variable& h, const Variable& weight, const Variable& bias) {
  operands("gelu_linear_reference", h, weight, bias);
  return linear_reference(gelu(h), weight, bias);
}

}  // namespace gradflow
