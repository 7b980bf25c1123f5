// A naive attention in double, the reference for scaled_dot_product_attention
// and MultiHeadAttention: plain loops over B, H, T, S and D.
#pragma once

#include <cmath>
#include <limits>
#include <vector>

#include "tensor/tensor.h"

namespace gradflow::testing {

struct Naive {
  std::vector<double> out;      // (B, H, T, Dv)
  std::vector<double> logits;   // (B, H, T, S), scale * q k^T
  std::vector<double> weights;  // (B, H, T, S), 0 where masked
};

// Loops over B, H, T, S, D in double. `mask` is undefined or broadcasts to
// (B, H, T, S); a query with every key masked gets zero weights and output.
inline Naive naive_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                             double scale) {
  const int64_t b_ = q.shape()[0], h_ = q.shape()[1], t_ = q.shape()[2], d_ = q.shape()[3];
  const int64_t s_ = k.shape()[2], dv = v.shape()[3];
  std::vector<double> qv = q.to_vector(), kv = k.to_vector(), vv = v.to_vector();
  std::vector<double> mv = mask.defined() ? mask.expand({b_, h_, t_, s_}).to_vector()
                                          : std::vector<double>(b_ * h_ * t_ * s_, 0);
  Naive r{std::vector<double>(b_ * h_ * t_ * dv, 0), std::vector<double>(b_ * h_ * t_ * s_),
          std::vector<double>(b_ * h_ * t_ * s_, 0)};
  for (int64_t b = 0; b < b_; ++b)
    for (int64_t h = 0; h < h_; ++h)
      for (int64_t t = 0; t < t_; ++t) {
        const int64_t row = ((b * h_ + h) * t_ + t) * s_;
        double m = -std::numeric_limits<double>::infinity();
        for (int64_t s = 0; s < s_; ++s) {
          double dot = 0;
          for (int64_t d = 0; d < d_; ++d)
            dot += qv[((b * h_ + h) * t_ + t) * d_ + d] * kv[((b * h_ + h) * s_ + s) * d_ + d];
          r.logits[row + s] = scale * dot;
          if (mv[row + s] == 0) m = std::max(m, scale * dot);
        }
        if (m == -std::numeric_limits<double>::infinity()) continue;  // all masked
        double total = 0;
        for (int64_t s = 0; s < s_; ++s)
          if (mv[row + s] == 0) total += r.weights[row + s] = std::exp(r.logits[row + s] - m);
        for (int64_t s = 0; s < s_; ++s) {
          r.weights[row + s] /= total;
          for (int64_t e = 0; e < dv; ++e)
            r.out[((b * h_ + h) * t_ + t) * dv + e] +=
                r.weights[row + s] * vv[((b * h_ + h) * s_ + s) * dv + e];
        }
      }
  return r;
}

}  // namespace gradflow::testing
