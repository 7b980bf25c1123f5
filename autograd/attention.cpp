// Attention as one differentiable op that keeps no (T, S) tensor from the
// forward to the backward.
//
// Composed of matmul, scaled_masked_softmax and matmul, attention keeps the
// softmax weights, (B, H, T, S), for its backward: in gpt-small 8 MB a layer,
// more than q, k and v together. Here the backward recomputes them from q and
// k (one more (T, D) x (D, S) product and a softmax per head), which the
// projections' backward keeps anyway. The same trade as FlashAttention's,
// without its tiling: the forward and the backward each still hold one
// (B, H, T, S) tensor for a moment.
#include "autograd/ops.h"
#include "tensor/masked_softmax.h"
#include "tensor/matmul.h"
#include "tensor/reduce.h"

namespace gradflow {

Variable fused_attention(const Variable& q, const Variable& k, const Variable& v, double scale,
                         const Tensor& mask) {
  const Tensor qd = q.data(), kd = k.data(), vd = v.data();
  // Shape: q (..., T, D), k (..., S, D), v (..., S, Dv); weights (..., T, S).
  auto weights = [qd, kd, scale, mask] {
    return scaled_masked_softmax(matmul(qd, kd.transpose(-1, -2)), scale, mask);
  };
  const bool need_q = q.requires_grad(), need_k = k.requires_grad(), need_v = v.requires_grad();
  return make_result(matmul(weights(), vd), "fused_attention", {q, k, v},
                     [qd, kd, vd, scale, weights, need_q, need_k, need_v](const Tensor& g) {
                       // g (..., T, Dv). The steps of the composed backward, in its order.
                       const Tensor y = weights();
                       Tensor gq, gk, gv;
                       if (need_v) gv = sum_to(matmul(y.transpose(-1, -2), g), vd.shape());
                       if (need_q || need_k) {
                         const Tensor ds = scaled_masked_softmax_backward(
                             matmul(g, vd.transpose(-1, -2)), y, scale);
                         if (need_q) gq = sum_to(matmul(ds, kd), qd.shape());
                         if (need_k) gk = sum_to(matmul(ds.transpose(-1, -2), qd), kd.shape());
                       }
                       return std::vector<Tensor>{gq, gk, gv};
                     });
}

}  // namespace gradflow
