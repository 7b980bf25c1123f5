#include "nn/scale_variants.h"

#include <cmath>

#include "autograd/ops.h"
#include "tensor/creation.h"

namespace gradflow::nn {

double qk_l2norm_start(int64_t max_len) {
  if (max_len < 2)
    fail("qk_l2norm: the sequence length must be at least 2 (g starts at log2(L^2 - L)), got ",
         max_len);
  const double l = static_cast<double>(max_len);
  return std::log2(l * l - l);
}

Variable l2_normalize(const Variable& x) { return x / sqrt(sum(x * x, {-1}, true) + 1e-12); }

QkL2Norm::QkL2Norm(int64_t max_len, Init init) {
  g = register_parameter("g", full({1}, qk_l2norm_start(max_len), init.dtype));
}

Variable QkL2Norm::transform_query(const Variable& q, const AttentionPositions&) const {
  return l2_normalize(q) * g;
}

Variable QkL2Norm::transform_key(const Variable& k, const AttentionPositions&) const {
  return l2_normalize(k);
}

double QkL2Norm::logit_factor() const { return g.data().item(); }

LearnedScale::LearnedScale(int64_t head_dim, Init init) {
  if (head_dim <= 0) fail("learned: head_dim must be positive, got ", head_dim);
  scale = register_parameter("scale",
                             full({1}, 1 / std::sqrt(static_cast<double>(head_dim)), init.dtype));
}

Variable LearnedScale::transform_query(const Variable& q, const AttentionPositions&) const {
  return q * scale;
}

double LearnedScale::logit_factor() const { return scale.data().item(); }

LearnedLogScale::LearnedLogScale(int64_t head_dim, Init init) {
  if (head_dim <= 0) fail("learned_log: head_dim must be positive, got ", head_dim);
  log_scale = register_parameter(
      "log_scale", full({1}, -0.5 * std::log(static_cast<double>(head_dim)), init.dtype));
}

Variable LearnedLogScale::transform_query(const Variable& q, const AttentionPositions&) const {
  return q * exp(log_scale);
}

double LearnedLogScale::logit_factor() const { return std::exp(log_scale.data().item()); }

}  // namespace gradflow::nn
