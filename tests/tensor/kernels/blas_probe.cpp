// A test fixture for blas_info_test.cpp: one matrix product large enough to
// reach the choice between OpenBLAS and gradflow's own GEMM, then what ran
// on stdout. Run with OPENBLAS_CORETYPE and GRADFLOW_GEMM set by the test.
#include <cstdio>

#include "tensor/creation.h"
#include "tensor/error.h"
#include "tensor/kernels/blas_info.h"
#include "tensor/matmul.h"
#include "tensor/parallel.h"

int main() {
  try {
    using namespace gradflow;
    set_num_threads(2);        // as the programs do: the product is cut over the pool
    note_generic_blas_core();  // as the programs do, before their first product
    Generator gen(0);
    // 100 columns: no register tile of gemm.cpp takes it (not a multiple of 32).
    const Tensor product = matmul(randn({100, 100}, gen), randn({100, 100}, gen));
    std::printf("%s rows=%lld\n", blas_summary().c_str(),
                static_cast<long long>(product.shape()[0]));
    return 0;
  } catch (const gradflow::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
