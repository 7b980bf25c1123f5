// What runs the matrix products: which OpenBLAS, which of its kernels, which
// level gradflow's own kernels run at, and which of the two takes the large
// products. The programs print it (blas_summary) so a figure says what
// produced it.
//
// Why it matters: OpenBLAS picks its kernels from the processor it
// recognises, and on one it does not know it silently runs its generic SSE3
// kernels ("Prescott"), three to four times slower on a CPU with AVX-512
// (issue #34). Setting OPENBLAS_CORETYPE from here is no answer: kernels made
// for another processor can compute wrong results on this one. Instead, when
// OpenBLAS runs a core older than Haswell on a CPU with AVX2 or AVX-512,
// gradflow's own packed GEMM (packed_gemm.h) takes every product, and the
// programs say so in one line on stderr. The choice follows the detected core, never a
// timing, so a run is bitwise reproducible on one machine.
//
// GRADFLOW_GEMM=own or GRADFLOW_GEMM=blas forces either path (read once, at
// the first product); any other value is an error.
#pragma once

#include <string>

namespace gradflow {

enum class GemmPath { kBlas, kOwn };

struct BlasInfo {
  std::string openblas_version;  // "0.3.21"
  std::string openblas_core;     // the kernels OpenBLAS runs: "Cooperlake", "Prescott", ...
  std::string cpu_vectors;       // what this CPU has: "avx512", "avx2" or "sse"
  int kernel_level = 0;  // gradflow's own kernels (cpu_dispatch.h): 4, 3, 1; 0 = compiler's flags
  bool generic_core = false;        // OpenBLAS runs a core below Haswell on an AVX2 / AVX-512 CPU
  GemmPath gemm = GemmPath::kBlas;  // who takes the products gemm.h sends past its tiles
  bool gemm_forced = false;         // by GRADFLOW_GEMM
};

// Read once per process. Throws gradflow::Error for a bad GRADFLOW_GEMM.
const BlasInfo& blas_info();

// One line of key=value fields for a program's output, e.g.
// "openblas=0.3.21 blas_core=Cooperlake cpu=avx512 kernels=4 gemm=blas".
std::string blas_summary();

// The one line the programs print on stderr when OpenBLAS runs a generic
// core on this CPU (empty when it does not): what runs, what it costs, what
// to do.
std::string generic_core_note();

// Prints generic_core_note() on stderr once per process, if there is one.
// The library never calls it (a library should not write to a program's
// stderr); every program does, beside its plan line, and a program of your
// own may.
void note_generic_blas_core();

}  // namespace gradflow
