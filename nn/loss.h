// Losses. Shapes: logits (..., V) with V classes, targets (...) int64.
#pragma once

#include "autograd/variable.h"

namespace gradflow::nn {

// Mean over the counted positions of
//   (1 - eps) * -log p[target] + eps * mean_j(-log p[j]),  p = softmax(logits)
// with eps the label smoothing. Positions whose target equals ignore_index
// (padding) count for nothing; if every position is ignored (and divide_by is
// 0) the loss is NaN and the gradient 0, as PyTorch's mean of no terms.
// One pass computes log-sum-exp per row and the loss, and the backward is
// (softmax - smoothed one-hot) / count, so huge logits (+-1e8) stay exact.
// With divide_by > 0 the summed loss is divided by it instead of by the
// number of counted positions: given the whole batch's counted_targets, a
// part of the batch gets its share of the batch's mean, and the parts' losses
// (and gradients) add up to the batch's (autograd/data_parallel.h).
Variable cross_entropy(const Variable& logits, const Tensor& targets, int64_t ignore_index = -100,
                       double label_smoothing = 0.0, int64_t divide_by = 0);

// The number of positions cross_entropy averages over: targets that are not
// ignore_index.
int64_t counted_targets(const Tensor& targets, int64_t ignore_index = -100);

// The same loss composed: with logp = log_softmax(logits),
//   sum over counted positions of (1 - eps) * -gather(logp, target) + eps * -mean(logp),
// divided as above. What cross_entropy runs with reference_ops() on
// (autograd/reference.h), and what it is tested against.
Variable cross_entropy_reference(const Variable& logits, const Tensor& targets,
                                 int64_t ignore_index = -100, double label_smoothing = 0.0,
                                 int64_t divide_by = 0);

// mean((prediction - target)^2).
Variable mse_loss(const Variable& prediction, const Variable& target);

}  // namespace gradflow::nn
