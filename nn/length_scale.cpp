#include "nn/length_scale.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "autograd/ops.h"
#include "tensor/creation.h"

namespace gradflow::nn {

Tensor visible_keys(const AttentionPositions& at, DType dtype) {
  const double all = static_cast<double>(at.key_length);
  if (!at.mask.defined()) return full({1}, std::max(1.0, all), dtype);
  // mask (..., T or 1, S or 1) -> counts (..., T or 1, 1).
  const Tensor& mask = at.mask;
  Shape shape = mask.shape();
  if (shape.empty()) shape = {1};
  const int64_t width = shape.back();
  const std::vector<double> hidden = mask.to_vector();
  shape.back() = 1;
  Tensor counts = Tensor::empty(shape, DType::Float64);
  double* out = counts.data<double>();
  for (int64_t row = 0; row < counts.numel(); ++row) {
    double seen = 0;
    for (int64_t j = 0; j < width; ++j) seen += hidden[row * width + j] == 0 ? 1 : 0;
    // A mask of width 1 hides or shows every key at once.
    if (width == 1) seen *= all;
    out[row] = std::max(1.0, seen);
  }
  return counts.to(dtype);
}

namespace {
// log(n) for each query row, as a constant of q's dtype.
Variable log_keys(const AttentionPositions& at, DType dtype) {
  Tensor n = visible_keys(at, DType::Float64);
  double* p = n.data<double>();
  for (int64_t i = 0; i < n.numel(); ++i) p[i] = std::log(p[i]);
  return Variable(n.to(dtype));
}
}  // namespace

double log_length(int64_t max_len) {
  return std::log(static_cast<double>(std::max<int64_t>(2, max_len)));
}

LogNScale::LogNScale(int64_t head_dim, int64_t max_len) : head_dim_(head_dim), max_len_(max_len) {
  if (head_dim <= 0) fail("log_n: head_dim must be positive, got ", head_dim);
  inv_sqrt_dk_ = 1 / std::sqrt(static_cast<double>(head_dim));
}

Variable LogNScale::transform_query(const Variable& q, const AttentionPositions& at) const {
  return q * (log_keys(at, q.dtype()) * inv_sqrt_dk_);
}

// Divided by sqrt(d_k) rather than times inv_sqrt_dk_: the study's figures
// were computed so, and the two differ in the last bit.
double LogNScale::logit_factor() const {
  return log_length(max_len_) / std::sqrt(static_cast<double>(head_dim_));
}

double ssmax_start(int64_t head_dim, int64_t max_len) {
  if (head_dim <= 0) fail("ssmax: head_dim must be positive, got ", head_dim);
  if (max_len < 2)
    fail("ssmax: the sequence length must be at least 2 (s starts at 1/(sqrt(d_k) log L)), got ",
         max_len);
  return 1 / (std::sqrt(static_cast<double>(head_dim)) * std::log(static_cast<double>(max_len)));
}

ScalableSoftmax::ScalableSoftmax(int64_t heads, int64_t head_dim, int64_t max_len, Init init)
    : max_len_(max_len) {
  if (heads <= 0) fail("ssmax: heads must be positive, got ", heads);
  s = register_parameter("s", full({heads}, ssmax_start(head_dim, max_len), init.dtype));
}

Variable ScalableSoftmax::transform_query(const Variable& q, const AttentionPositions& at) const {
  if (q.ndim() != 4 || q.shape()[1] != s.shape()[0])
    fail("ssmax: expected q (B, ", s.shape()[0], ", T, D), got ", shape_str(q.shape()));
  // (H) -> (1, H, 1, 1) times log n (..., T, 1): each head's factor per row.
  return q * (reshape(s, {1, s.shape()[0], 1, 1}) * log_keys(at, q.dtype()));
}

double ScalableSoftmax::logit_factor() const {
  const std::vector<double> heads = s.data().to_vector();
  double mean = 0;
  for (double v : heads) mean += v / static_cast<double>(heads.size());
  return mean * log_length(max_len_);
}

}  // namespace gradflow::nn
