// Logit soft-capping, the scale mode softcap (Gemma 2, Gemma Team 2024):
// the logits s q.k, s = 1/sqrt(d_k) the mode's fixed factor, become
//   c tanh(s q.k / c)
// before the mask and softmax. Near 0 that is s q.k (tanh's slope is 1
// there), so a fresh layer starts as the standard scale; as |s q.k| grows
// towards and past c it saturates at +-c, so no logit leaves (-c, c) and
// the softmax cannot become one-hot by the logits' size alone, however
// large q and k grow in training. c is the mode's value: softcap:<c>; a
// bare `softcap` means c = 30. Gemma 2 itself capped its attention logits
// at 50 (softcap:50) and its final logits at 30; this mode caps attention
// only.
// It transforms the scores, so a layer with it leaves the fused kernel
// (attention_variant.h) and keeps the (B, H, T, S) weights.
// Shapes: logits (B, H, T, S) -> the same.
#pragma once

#include <memory>
#include <string>

#include "nn/attention_variant.h"
#include "nn/scale_modes.h"

namespace gradflow::nn {

class SoftCap : public AttentionVariant {
 public:
  // REQUIRES: cap positive and finite (else Error naming softcap).
  explicit SoftCap(double cap);
  bool transforms_scores() const override { return true; }
  Variable transform_scores(const Variable& logits, const AttentionPositions& at) const override;
  std::string describe() const override;
  double cap() const { return cap_; }

 private:
  double cap_;
};

// The scale-mode table's factory: a SoftCap of the mode's value.
std::shared_ptr<AttentionVariant> make_softcap(const ScaleContext& context);

}  // namespace gradflow::nn
