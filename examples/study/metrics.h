// The study's attention metrics (names as in docs/study.md), computed
// from the softmax weights and scaled logits of attention layers.
//
// Shapes: weights and logits (..., T, S): one row of S key weights per query.
// mask, if defined, broadcasts to that shape and is 1 where a key is hidden;
// hidden keys are left out of every statistic, and a row's entropy is
// normalised by the log of its own number of visible keys.
#pragma once

#include "tensor/tensor.h"

namespace gradflow::study {

struct AttentionStats {
  double entropy_norm = 0;   // mean over rows of H(p) / log(n), 1 = uniform, 0 = one-hot
  double max_weight = 0;     // mean over rows of max_j p_j
  double jacobian_norm = 0;  // mean over rows of ||diag(p) - p p^T||_F
  double max_logit = 0;      // largest |logit| over visible entries
  int64_t rows = 0;          // rows with at least two visible keys
};

AttentionStats attention_stats(const Tensor& weights, const Tensor& logits, const Tensor& mask);

// ||diag(p) - p p^T||_F for one distribution p, in closed form:
// sum p^2 - 2 sum p^3 + (sum p^2)^2 under the square root.
double softmax_jacobian_norm(const double* p, int64_t n);

// Sample variance (divide by n - 1) of every element.
double sample_variance(const Tensor& t);

// Standard deviation (divide by n - 1) of the entries of `values` where
// `mask` (broadcast to its shape; may be undefined) is 0.
double visible_std(const Tensor& values, const Tensor& mask);

}  // namespace gradflow::study
