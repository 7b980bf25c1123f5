// Parameter initialisation, in place and seeded. Fans follow PyTorch: for a
// weight of shape (out, in), fan_in = in and fan_out = out.
//
// Defaults used by the layers (the same as PyTorch's, so a gradflow model and
// its PyTorch twin start from the same distributions):
//   Linear: weight and bias ~ U(-1/sqrt(in), 1/sqrt(in))
//   Embedding: ~ N(0, 1); LayerNorm / RMSNorm: weight 1, bias 0.
#pragma once

#include "autograd/variable.h"
#include "tensor/random.h"

namespace gradflow::nn::init {

// Glorot: U(-a, a) with a = gain sqrt(6 / (fan_in + fan_out)); normal std gain sqrt(2 / (fan_in +
// fan_out)).
void xavier_uniform_(const Variable& w, Generator& gen, double gain = 1.0);
void xavier_normal_(const Variable& w, Generator& gen, double gain = 1.0);
// He: std = gain / sqrt(fan_in), gain sqrt(2) for ReLU; uniform bound sqrt(3) std.
void kaiming_uniform_(const Variable& w, Generator& gen, double gain = 1.4142135623730951);
void kaiming_normal_(const Variable& w, Generator& gen, double gain = 1.4142135623730951);
void normal_(const Variable& w, Generator& gen, double mean = 0, double std = 1);
void uniform_(const Variable& w, Generator& gen, double low, double high);
void constant_(const Variable& w, double value);

}  // namespace gradflow::nn::init
