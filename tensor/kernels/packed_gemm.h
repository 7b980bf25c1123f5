// gradflow's own large GEMM, for when OpenBLAS would run slow code: packed
// and cache-blocked as BLIS and GotoBLAS do it, so it keeps AVX-512 or AVX2
// busy on the products the register tiles of gemm.cpp leave to OpenBLAS.
//
// Why: OpenBLAS picks its kernels from the processor it recognises. On one
// it does not know (a new Xeon under a hypervisor, issue #34) the
// distribution's OpenBLAS falls back to its SSE3 "Prescott" kernels, three
// to four times slower than the AVX-512 ones the same CPU could run, while
// gradflow's own kernels (cpu_dispatch.h) already run AVX-512 there.
// blas_info.h decides when this path takes every product; GRADFLOW_GEMM=own
// forces it anywhere (the tests run every GEMM test both ways).
//
// Every element of C sums over k in blocks of a fixed length, in order,
// whatever M and N are and wherever a caller cuts C: the bits depend on the
// CPU's level (the tile and block sizes) only, never on the thread count.
//
// Internal to tensor/: gemm.cpp calls it.
#pragma once

#include <cstdint>

#include "tensor/kernels/gemm.h"

namespace gradflow {

// C (M, N, row stride ldc) = op(A) (M, K) op(B) (K, N), plus `bias` (N
// values, or null) on every row, on the pool's threads (parallel.h): they
// share each packed panel of B and claim blocks of rows of C, and a call
// from inside a parallel_for runs on its thread alone. REQUIRES: M, N, K > 0.
template <class T>
void packed_gemm(const T* a, GemmOperand la, const T* b, GemmOperand lb, T* c, int64_t ldc,
                 int64_t m, int64_t n, int64_t k, const T* bias);

}  // namespace gradflow
