#include "nn/softcap.h"

#include <cmath>

#include "autograd/ops.h"

namespace gradflow::nn {

SoftCap::SoftCap(double cap) : cap_(cap) {
  if (!(cap > 0) || !std::isfinite(cap)) fail("softcap: the cap must be positive, got ", cap);
}

// (B, H, T, S) -> (B, H, T, S): c tanh(logits / c), elementwise. Divided by
// c inside and multiplied outside, so the slope at 0 is 1 and the bound c.
Variable SoftCap::transform_scores(const Variable& logits, const AttentionPositions&) const {
  return tanh(logits / cap_) * cap_;
}

std::string SoftCap::describe() const { return "SoftCap(" + std::to_string(cap_) + ")"; }

std::shared_ptr<AttentionVariant> make_softcap(const ScaleContext& context) {
  return std::make_shared<SoftCap>(context.value);
}

}  // namespace gradflow::nn
