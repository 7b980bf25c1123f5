// Matrix product. The backward products use transposed views, which GEMM
// reads through its transpose flags, so no operand is copied.
#include "tensor/matmul.h"
#include "autograd/ops.h"
#include "tensor/elementwise.h"

namespace gradflow {

Variable matmul(const Variable& a, const Variable& b) {
  const Tensor x = a.data(), y = b.data();
  const bool need_a = a.requires_grad(), need_b = b.requires_grad();
  return make_result(matmul(x, y), "matmul", {a, b}, [x, y, need_a, need_b](const Tensor& g) {
    Tensor ga, gb;
    // Shape: x (..., M, K), y (..., K, N), g (..., M, N).
    if (need_a) ga = sum_to(matmul(g, y.transpose(-1, -2)), x.shape());
    if (need_b) {
      if (y.ndim() == 2 && x.ndim() > 2) {
        // One weight shared by a stack: dW = X^T G with the stack folded into
        // the inner dimension, (K, B*M) @ (B*M, N), instead of B products summed.
        const int64_t k = x.shape().back(), n = y.shape().back();
        gb = matmul(x.reshape({-1, k}).transpose(0, 1), g.reshape({-1, n}));
      } else {
        gb = sum_to(matmul(x.transpose(-1, -2), g), y.shape());
      }
    }
    return std::vector<Tensor>{ga, gb};
  });
}

// matmul(gelu(h), w) without keeping gelu(h): the backward recomputes it
// from h, which the gelu's own backward needs anyway. In a transformer's
// feed-forward that is one (B, T, d_ff) tensor less per layer held from the
// forward to the backward (8 MB a layer in gpt-small). When both gradients
// are wanted, gelu(h) comes out of the same pass over h as dh, so the
// recomputation costs no second erf.
Variable gelu_matmul(const Variable& h, const Variable& w) {
  if (w.ndim() != 2) fail("gelu_matmul: w must be 2-D, got shape ", shape_str(w.shape()));
  const Tensor x = h.data(), y = w.data();
  const bool need_h = h.requires_grad(), need_w = w.requires_grad();
  return make_result(
      matmul(gelu(x), y), "gelu_matmul", {h, w}, [x, y, need_h, need_w](const Tensor& g) {
        Tensor gh, gw, a;  // a = gelu(x), for gw
        // Shape: x (..., M, K), y (K, N), g (..., M, N).
        if (need_h && need_w) {
          GeluBackward both = gelu_backward_with_value(matmul(g, y.transpose(-1, -2)), x);
          gh = both.grad_x;
          a = both.value;
        } else if (need_h) {
          gh = gelu_backward(matmul(g, y.transpose(-1, -2)), x);
        } else if (need_w) {
          a = gelu(x);
        }
        if (need_w) {
          const int64_t k = x.shape().back(), n = y.shape().back();
          gw = matmul(a.reshape({-1, k}).transpose(0, 1), g.reshape({-1, n}));
        }
        return std::vector<Tensor>{gh, gw};
      });
}

}  // namespace gradflow
