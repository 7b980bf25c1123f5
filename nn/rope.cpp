#include "nn/rope.h"

#include "nn/positional_schemes.h"

#include <cmath>
#include <cstdio>

#include "autograd/ops.h"
#include "tensor/tensor.h"

namespace gradflow::nn {

Variable rope(const Variable& x, int64_t start, double base) {
  if (x.ndim() < 2 || x.shape().back() % 2 != 0 || x.shape().back() == 0)
    fail("rope: expected x (..., T, D) with D even, got ", shape_str(x.shape()));
  if (start < 0) fail("rope: start must be >= 0, got ", start);
  if (!(base > 1) || !std::isfinite(base)) fail("rope: base must be > 1, got ", base);
  const int64_t t = x.shape()[x.ndim() - 2], d = x.shape().back(), half = d / 2;
  // Shape: cos and sin (T, D/2), broadcast over the leading axes.
  Tensor cos_table = Tensor::empty({t, half}, DType::Float64);
  Tensor sin_table = Tensor::empty({t, half}, DType::Float64);
  double* c = cos_table.data<double>();
  double* s = sin_table.data<double>();
  for (int64_t i = 0; i < half; ++i) {
    const double theta = std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(d));
    for (int64_t p = 0; p < t; ++p) {
      const double angle = static_cast<double>(start + p) * theta;
      c[p * half + i] = std::cos(angle);
      s[p * half + i] = std::sin(angle);
    }
  }
  const Variable cos_p(cos_table.to(x.dtype())), sin_p(sin_table.to(x.dtype()));
  // (..., T, D) -> (..., T, D/2, 2): a view when D is contiguous; its two
  // columns are the pairs' first and second members.
  Shape pairs = x.shape();
  pairs.back() = half;
  pairs.push_back(2);
  const Variable xr = reshape(x, pairs);
  const Variable x0 = select(xr, -1, 0), x1 = select(xr, -1, 1);
  const Variable y0 = x0 * cos_p - x1 * sin_p;
  const Variable y1 = x0 * sin_p + x1 * cos_p;
  return reshape(cat({unsqueeze(y0, -1), unsqueeze(y1, -1)}, -1), x.shape());
}

Rope::Rope(int64_t head_dim, RopeOptions options) : head_dim_(head_dim), base_(options.base) {
  if (head_dim <= 0 || head_dim % 2 != 0)
    fail("Rope: head_dim must be positive and even (pairs of dimensions turn), got ", head_dim);
  if (!(base_ > 1) || !std::isfinite(base_)) fail("Rope: base must be > 1, got ", base_);
}

std::shared_ptr<AttentionVariant> make_rope(const PositionalContext& context) {
  return std::make_shared<Rope>(context.d_k);
}

std::string Rope::describe() const {
  char buf[64];
  std::snprintf(buf, sizeof buf, "Rope(head_dim=%lld, base=%g)", static_cast<long long>(head_dim_),
                base_);
  return buf;
}

}  // namespace gradflow::nn
