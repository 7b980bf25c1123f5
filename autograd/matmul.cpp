// Matrix product. The backward products use transposed views, which GEMM
// reads through its transpose flags, so no operand is copied.
#include "tensor/matmul.h"
#include "autograd/ops.h"
#include "tensor/elementwise.h"
#include "tensor/reduce.h"

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

}  // namespace gradflow
