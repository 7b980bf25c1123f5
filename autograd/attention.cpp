// Attention as one differentiable op that keeps no (T, S) tensor from the
// forward to the backward, and its composed reference below it.
//
// The kernels of tensor/kernels/attention.h run each head's products and
// softmax while they sit in cache, and the backward recomputes the head's
// weights from q, k and two numbers per query row. Keeping the weights
// instead would cost (B, H, T, S) per layer: in gpt-small 8 MB a layer, more
// than q, k and v together.
#include <limits>

#include "autograd/graph.h"
#include "autograd/ops.h"
#include "autograd/reference.h"
#include "tensor/kernels/attention.h"
#include "tensor/reduce.h"

namespace gradflow {

namespace {

// q (..., T, D), k (..., S, D), v (..., S, Dv) in one dtype, batch axes (...)
// that broadcast, and a mask (undefined, or of any dtype) that broadcasts to
// the scores (..., T, S) without growing them. Returns the common batch axes.
Shape check_attention(const char* op, const Variable& q, const Variable& k, const Variable& v,
                      const Tensor& mask) {
  if (!q.defined() || !k.defined() || !v.defined()) fail(op, ": undefined input");
  const auto shapes = [&] {
    return shape_str(q.shape()) + ", " + shape_str(k.shape()) + ", " + shape_str(v.shape());
  };
  if (q.ndim() < 2 || k.ndim() < 2 || v.ndim() < 2 || q.shape().back() != k.shape().back() ||
      k.shape()[k.ndim() - 2] != v.shape()[v.ndim() - 2])
    fail(op, ": expected q (..., T, D), k (..., S, D), v (..., S, Dv), got ", shapes());
  if (k.dtype() != q.dtype() || v.dtype() != q.dtype())
    fail(op, ": dtypes differ: ", dtype_name(q.dtype()), ", ", dtype_name(k.dtype()), ", ",
         dtype_name(v.dtype()));
  const auto batch = [](const Shape& s) { return Shape(s.begin(), s.end() - 2); };
  const Shape common = broadcast_shapes(broadcast_shapes(batch(q.shape()), batch(k.shape()), op),
                                        batch(v.shape()), op);
  if (mask.defined()) {
    Shape scores = common;
    scores.insert(scores.end(), {q.shape()[q.ndim() - 2], k.shape()[k.ndim() - 2]});
    if (mask.ndim() > static_cast<int64_t>(scores.size()) ||
        broadcast_shapes(mask.shape(), scores, op) != scores)
      fail(op, ": mask of shape ", shape_str(mask.shape()), " does not broadcast to the scores ",
           shape_str(scores));
  }
  return common;
}

}  // namespace

Variable fused_attention(const Variable& q, const Variable& k, const Variable& v, double scale,
                         const Tensor& mask) {
  const Shape common = check_attention("fused_attention", q, k, v, mask);
  // Under a GraphCapture too, where it records a graph: a drawing shows the
  // softmax, not one fused box. (A no-grad pass records nothing to draw.)
  if (reference_ops() || (current_graph_capture() && grad_enabled()))
    return fused_attention_reference(q, k, v, scale, mask);
  // The kernels take one set of batch axes: broadcast ones are expanded here
  // (views) and their gradients summed back below.
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
      },
      {mask});
}

Variable fused_attention_reference(const Variable& q, const Variable& k, const Variable& v,
                                   double scale, const Tensor& mask) {
  check_attention("fused_attention_reference", q, k, v, mask);
  return composed_attention(q, k, v, scale, mask);
}

// The textbook formula, softmax(scale * q k^T, masked keys -inf) v, out of
// the ops of this folder, each with its own backward: read this one first.
// fused_attention above is the fast path, and this is what it is tested
// against.
#ifndef GRADFLOW_EXERCISES  // exercise 6: docs/exercises/06_composed_attention.md
Variable composed_attention(const Variable& q, const Variable& k, const Variable& v, double scale,
                            const Tensor& mask,
                            const std::function<Variable(const Variable&)>& transform,
                            ComposedAttention* kept) {
  // Shape: logits (..., T, S) = scale * q (..., T, D) @ k^T (..., D, S).
  Variable logits = matmul(q, transpose(k, -1, -2)) * scale;
  if (transform) logits = transform(logits);
  // -inf, not a large negative number: a query whose every key is hidden
  // then softmaxes to zero weights (softmax of an all -inf row is zeros,
  // tensor/reduce.h) and so to a zero output and zero gradients, instead of
  // an average of values it must not see.
  Variable weights = softmax(mask.defined() ? masked_fill(logits, mask.to(q.dtype()),
                                                          -std::numeric_limits<double>::infinity())
                                            : logits,
                             -1);
  if (kept) *kept = {logits, weights};
  return matmul(weights, v);  // (..., T, Dv)
}
#endif

}  // namespace gradflow
