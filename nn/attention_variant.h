// AttentionVariant: the extension point of MultiHeadAttention. A variant
// changes attention without editing it: it may transform q and k before the
// scores (a positional scheme such as RoPE, a normalisation such as qk_norm)
// and the scores before the mask and softmax (a bias such as ALiBi).
//
// Shapes: q (B, H, T, D), k (B, H, S, D), logits (B, H, T, S), as in
// attention.h. Row r of q is the query at position query_start + r of its
// sequence; row r of k the key at key_start + r. With a KV cache the new
// rows start where the cache ends, so a variant sees true positions in
// generation as in a full forward.
//
// How MultiHeadAttention calls the hooks, in the order the variants were
// added:
//   q = transform_query(q, at)      every forward, on the new queries
//   k = transform_key(k, at)        once per key: a cached key is not
//                                   transformed again (the cache holds the
//                                   transformed keys)
//   logits = transform_scores(logits, at)   logits = scale * q k^T, before
//                                   the mask; `at.key_start` is 0 here
//                                   (the logits cover every key, cached ones
//                                   included)
// A variant that only transforms q and k keeps the fused attention kernel;
// one whose transforms_scores() is true makes the layer take the composed
// path (matmul, the transforms, masked_fill, softmax, matmul), which keeps
// the (B, H, T, S) weights for the backward.
//
// A variant is a Module: MultiHeadAttention::add_variant registers it as a
// child, so its parameters get dotted names ("self_attn.alibi.slope") and
// reach state_dict(), checkpoints and the optimizer (add variants before
// building the optimizer). Hooks are const and may run on several threads at
// once (autograd/data_parallel.h): keep no state that a forward writes.
//
// Example, a fixed bias of -0.5 per position of distance (in a test or a
// program, no library file touched):
//   struct DistanceBias : nn::AttentionVariant {
//     bool transforms_scores() const override { return true; }
//     Variable transform_scores(const Variable& logits,
//                               const nn::AttentionPositions& at) const override {
//       const int64_t t = logits.shape()[2], s = logits.shape()[3];
//       Tensor bias = zeros({t, s}, logits.dtype());
//       for (int64_t i = 0; i < t; ++i)
//         for (int64_t j = 0; j < s; ++j)
//           bias.set({i, j}, -0.5 * std::abs(double(at.query_start + i - at.key_start - j)));
//       return logits + Variable(bias);
//     }
//     std::string describe() const override { return "DistanceBias"; }
//   };
//   attention.add_variant("distance", std::make_shared<DistanceBias>());
#pragma once

#include <cstdint>
#include <string>

#include "autograd/variable.h"
#include "nn/module.h"

namespace gradflow::nn {

// Where the rows are: the positions of the first query row and the first
// key row in their sequences, and what the queries can see: all keys of the
// layer's call (the cached ones included) and the mask as it will be
// applied (masks.h: nonzero = hidden; undefined = none), so a variant can
// count the keys each query sees (length_scale.h).
struct AttentionPositions {
  int64_t query_start = 0;
  int64_t key_start = 0;
  int64_t key_length = 0;  // S
  Tensor mask = {};        // broadcasts to (B, H, T, S)
};

class AttentionVariant : public Module {
 public:
  // q (B, H, T, D) -> the same shape.
  virtual Variable transform_query(const Variable& q, const AttentionPositions& /*at*/) const {
    return q;
  }
  // k (B, H, S, D) -> the same shape.
  virtual Variable transform_key(const Variable& k, const AttentionPositions& /*at*/) const {
    return k;
  }
  // True if transform_scores changes anything: the layer then leaves the
  // fused kernel for the composed path.
  virtual bool transforms_scores() const { return false; }
  // logits (B, H, T, S) = scale * q k^T -> the same shape, before the mask.
  virtual Variable transform_scores(const Variable& logits,
                                    const AttentionPositions& /*at*/) const {
    return logits;
  }
  // The factor this variant multiplies q.k by now, read from its parameters
  // (a learned temperature, qk_l2norm's g on unit q and k), so code above nn
  // (the study's probes) need not know the variant's type: a new variant
  // that scales q overrides this and is measured at once. One that depends on
  // the keys a query sees reports it at the length L its layer is built for.
  // Variants that do not scale (qk_norm, RoPE, ALiBi) keep 1.
  virtual double logit_factor() const { return 1; }
};

}  // namespace gradflow::nn
