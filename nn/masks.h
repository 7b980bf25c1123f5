// Attention masks, made here and nowhere else.
//
// The convention, everywhere in gradflow: a mask is a float tensor in which
// a nonzero entry hides a key from a query and 0 lets the query see it. It
// broadcasts to the scores' shape (B, H, T, S): (T, S) for one pattern for
// every row and head, (B, 1, 1, S) for keys hidden per sequence, (B, 1, T, S)
// for both. An undefined Tensor means no mask. A query whose keys are all
// hidden gets zero weights and a zero output (attention.h).
//
// B batch, H heads, T query positions, S key positions.
#pragma once

#include <cstdint>

#include "tensor/tensor.h"

namespace gradflow::nn {

// (T, S), 1 above the shifted diagonal: query i may not see key j > i + offset.
// With a KV cache of `offset` positions, the T new queries sit at the end of
// the S = offset + T keys.
Tensor causal_mask(int64_t t, int64_t s, DType dtype = DType::Float32, int64_t offset = 0);

// pad (B, S), nonzero at padding positions -> (B, 1, 1, S), the same values:
// padded keys are hidden from every query. Undefined in, undefined out.
Tensor key_padding_mask(const Tensor& pad);

// Hidden where either mask hides: 1 where a or b is nonzero, else 0, over
// their broadcast shape, in a's dtype (or b's when a is undefined). An
// undefined mask hides nothing, so the other is returned as it is. E.g. a
// decoder's causal mask with key padding:
//   combine_masks(causal_mask(T, S), key_padding_mask(pad))   // (B, 1, T, S)
Tensor combine_masks(const Tensor& a, const Tensor& b);

}  // namespace gradflow::nn
