// Scaled dot-product attention, head by head, as two kernels (forward and
// backward) that keep each head's (T, S) weights in cache from its first
// product to its last:
//
//   weights = softmax(scale * q k^T, masked keys -inf),  out = weights v
//
// One work item per head runs all of its products and the softmax while they
// are hot, rather than a (..., T, S) tensor per step, each a pass through
// memory, and a batch of GEMM calls per product. autograd's fused_attention
// is built on these, and fused_attention_reference composes the same formula
// from matmul, masked_fill and softmax.
//
// The backward recomputes a head's weights from q, k and two numbers per
// query row saved by the forward (the row's maximum and 1 / its sum), so
// nothing of size (T, S) is kept between the two; the recomputed weights are
// bitwise the forward's. This is FlashAttention's trade without its tiling.
//
// Layout: q (..., T, D), k (..., S, D), v (..., S, Dv), with the same batch
// axes (...), any strides as long as each row of D is contiguous (else it is
// copied first). In a transformer these are views of the (B, T, H * D)
// projections, (B, H, T, D) with strides (T H D, D, H D, 1): each head is
// read in place, and out and the gradients are laid out like their inputs,
// so merging the heads back is a view too.
//
// Letters: T queries, S keys, D and Dv head sizes; "..." the batch axes
// (B, H in a transformer).
#pragma once

#include "tensor/tensor.h"

namespace gradflow {

struct AttentionForward {
  Tensor out;      // (..., T, Dv), laid out like q
  Tensor row_max;  // (..., T): max of each row of scale q k^T over unmasked keys
  Tensor row_inv;  // (..., T): 1 / sum(exp(row - max)); 0 for a fully masked row
};

// `mask` is undefined or broadcasts to (..., T, S), of any dtype, non-zero
// where a key is hidden. A query with every key hidden gets zeros.
AttentionForward attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, double scale,
                                   const Tensor& mask);

struct AttentionGrads {
  Tensor dq, dk, dv;  // laid out like q, k and v; undefined when not asked for
};

// With P the weights: dv = P^T dout, dP = dout v^T, dS = scale P (dP - rowsum(P dP)),
// dq = dS k, dk = dS^T q.
// REQUIRES: row_max and row_inv from attention_forward(q, k, v, scale, mask).
AttentionGrads attention_backward(const Tensor& dout, const Tensor& q, const Tensor& k,
                                  const Tensor& v, const Tensor& row_max, const Tensor& row_inv,
                                  double scale, const Tensor& mask, bool need_q, bool need_k,
                                  bool need_v);

}  // namespace gradflow
