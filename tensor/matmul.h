// Matrix products through OpenBLAS.
//
// Shapes: a is (..., M, K), b is (..., K, N), the result (..., M, N); the
// batch dimensions (...) broadcast. A transposed view is handed to GEMM as a
// transpose flag with its leading dimension, never copied; only an operand
// whose last two strides fit neither layout is made contiguous first.
//
// OpenBLAS runs single-threaded; the work is split over gradflow's threads
// (parallel.h): a batch of matrices by whole matrices, one big product by
// blocks of rows. Either way the result does not depend on the
// number of threads.
#pragma once

#include "tensor/tensor.h"

namespace gradflow {

Tensor matmul(const Tensor& a, const Tensor& b);

// x (..., K) @ weight^T + bias, with weight (N, K) as a Linear layer stores
// it and bias (N) or undefined: (..., N). The bias is added by the GEMM
// itself (C starts as the bias rows), not by a pass of its own.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias);

// The plain triple loop, kept beside the fast path as its reference in tests.
Tensor matmul_reference(const Tensor& a, const Tensor& b);

}  // namespace gradflow
