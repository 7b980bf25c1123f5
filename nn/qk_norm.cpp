#include "nn/qk_norm.h"

#include "autograd/ops.h"

namespace gradflow::nn {

QkNorm::QkNorm(int64_t head_dim, LayerNormOptions options, Init init) {
  q_norm = register_module("q_norm", std::make_shared<LayerNorm>(head_dim, options, init));
  k_norm = register_module("k_norm", std::make_shared<LayerNorm>(head_dim, options, init));
}

Variable QkNorm::transform_query(const Variable& q, const AttentionPositions&) const {
  return q_norm->forward(q);
}

Variable QkNorm::transform_key(const Variable& k, const AttentionPositions&) const {
  return k_norm->forward(k);
}

}  // namespace gradflow::nn
