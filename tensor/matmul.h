// Matrix products through OpenBLAS.
//
// Shapes: a is (..., M, K), b is (..., K, N), the result (..., M, N); the
// batch dimensions (...) broadcast. A transposed view is handed to GEMM as a
// transpose flag with its leading dimension, never copied; only an operand
// whose last two strides fit neither layout is made contiguous first.
#pragma once

#include "tensor/tensor.h"

namespace gradflow {

Tensor matmul(const Tensor& a, const Tensor& b);

// The plain triple loop, kept beside the fast path as its reference in tests.
Tensor matmul_reference(const Tensor& a, const Tensor& b);

// Threads OpenBLAS may use for one GEMM (it keeps its own pool).
void set_blas_threads(int threads);

}  // namespace gradflow
