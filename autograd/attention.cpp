// Attention as one differentiable op that keeps no (T, S) tensor from the
// forward to the backward.
//
// Composed of matmul, scaled_masked_softmax and matmul, attention keeps the
// softmax weights, (B, H, T, S), for its backward: in gpt-small 8 MB a layer,
// more than q, k and v together. Here the kernels of tensor/kernels/attention.h run
// each head's products and softmax while they sit in cache, and the backward
// recomputes the head's weights from q, k and two numbers per query row.
#include "tensor/kernels/attention.h"
#include "autograd/ops.h"

namespace gradflow {

Variable fused_attention(const Variable& q, const Variable& k, const Variable& v, double scale,
                         const Tensor& mask) {
  if (!q.defined() || !k.defined() || !v.defined()) fail("fused_attention: undefined input");
  if (q.ndim() < 2 || k.ndim() < 2 || v.ndim() < 2)
    fail("fused_attention: expected q (..., T, D), k (..., S, D), v (..., S, Dv), got ",
         shape_str(q.shape()), ", ", shape_str(k.shape()), ", ", shape_str(v.shape()));
  // The kernels take one set of batch axes: broadcast ones are expanded here
  // (views) and their gradients summed back below.
  const auto batch = [](const Shape& s) { return Shape(s.begin(), s.end() - 2); };
  const Shape common =
      broadcast_shapes(broadcast_shapes(batch(q.shape()), batch(k.shape()), "fused_attention"),
                       batch(v.shape()), "fused_attention");
  const auto expanded = [&](const Variable& x) {
    Shape s = common;
    s.insert(s.end(), x.shape().end() - 2, x.shape().end());
    return x.data().expand(s);
  };
  const Tensor qd = expanded(q), kd = expanded(k), vd = expanded(v);
  AttentionForward f = attention_forward(qd, kd, vd, scale, mask);
  const bool need_q = q.requires_grad(), need_k = k.requires_grad(), need_v = v.requires_grad();
  return make_result(
      f.out, "fused_attention", {q, k, v},
      [qd, kd, vd, row_max = f.row_max, row_inv = f.row_inv, scale, mask, need_q, need_k, need_v,
       q_shape = q.shape(), k_shape = k.shape(), v_shape = v.shape()](const Tensor& g) {
        AttentionGrads d = attention_backward(g, qd, kd, vd, row_max, row_inv, scale, mask, need_q,
                                              need_k, need_v);
        return std::vector<Tensor>{need_q ? sum_to(d.dq, q_shape) : Tensor(),
                                   need_k ? sum_to(d.dk, k_shape) : Tensor(),
                                   need_v ? sum_to(d.dv, v_shape) : Tensor()};
      });
}

}  // namespace gradflow
