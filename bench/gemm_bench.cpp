// gemm_bench: the machine's single-precision GEMM ceiling, which train_bench's
// GFLOP/s are compared against.
//
//   gemm_bench --threads 2
//   gemm n=2048 threads=2 gflops=F openblas=0.3.21 blas_core=Cooperlake cpu=avx512 kernels=4
//   gemm=blas
//
// Times C = A B for n x n float32 matrices (2 n^3 FLOPs) either straight
// through cblas_sgemm into a preallocated C (--via cblas, the default: the
// BLAS alone, on --threads OpenBLAS threads) or through gradflow's matmul
// (--via matmul: on --threads threads of gradflow's pool, through whichever
// GEMM blas_info.h chose, and adds the output's allocation), and prints the
// median of --reps timed runs after one warm-up. The rest of the line says
// what ran (tensor/kernels/blas_info.h).
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "examples/toolkit/cli/args.h"
#include "tensor/creation.h"
#include "tensor/kernels/blas_info.h"
#include "tensor/matmul.h"
#include "tensor/parallel.h"

namespace {

using namespace gradflow;

int run(int argc, char** argv) {
  cli::ArgParser args("gemm_bench",
                      "Time an n x n x n float32 matrix product and print the median GFLOP/s.");
  int64_t n = 2048, reps = 7;
  args.add("--n", &n, "matrix size").min(1).max(16384);
  args.add("--reps", &reps, "timed repetitions (the median is printed)").min(1);
  int threads = 2;
  args.add("--threads", &threads, "OpenBLAS threads (cblas) or gradflow's pool (matmul)")
      .min(1)
      .max(256);
  std::string via = "cblas";
  args.add_choice("--via", &via, {"cblas", "matmul"}, "call cblas_sgemm or gradflow's matmul");
  args.parse(argc, argv);
  note_generic_blas_core();  // one line on stderr when OpenBLAS runs a generic core

  // matmul runs OpenBLAS single-threaded inside gradflow's pool (parallel.h).
  if (via == "matmul") {
    set_num_threads(threads);
  } else {
    openblas_set_num_threads(threads);
  }
  Generator gen(0);
  // Shapes: a, b and c are (n, n), row-major.
  const Tensor a = randn({n, n}, gen), b = randn({n, n}, gen);
  Tensor c = zeros({n, n});
  const int dim = static_cast<int>(n);
  auto product = [&] {
    if (via == "matmul") {
      c = matmul(a, b);
    } else {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, dim, dim, dim, 1.0f, a.data<float>(),
                  dim, b.data<float>(), dim, 0.0f, c.data<float>(), dim);
    }
  };

  product();  // warm-up: OpenBLAS starts its threads and buffers
  std::vector<double> seconds;
  for (int64_t i = 0; i < reps; ++i) {
    const auto start = std::chrono::steady_clock::now();
    product();
    seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(seconds.begin(), seconds.end());
  const double median =
      reps % 2 ? seconds[reps / 2] : (seconds[reps / 2 - 1] + seconds[reps / 2]) / 2;
  const double flops =
      2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
  std::printf("gemm n=%lld threads=%d gflops=%.1f %s\n", static_cast<long long>(n), threads,
              flops / median / 1e9, blas_summary().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return gradflow::cli::run_cli(argc, argv, run); }
