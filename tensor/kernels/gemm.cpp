#include "tensor/kernels/gemm.h"

#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "tensor/kernels/blas_info.h"
#include "tensor/kernels/cpu_dispatch.h"
#include "tensor/kernels/dot_gemm.h"
#include "tensor/kernels/lanes.h"
#include "tensor/kernels/packed_gemm.h"

namespace gradflow {

GemmLayout gemm_layout(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride) {
  if ((col_stride == 1 || cols == 1) && (rows == 1 || row_stride >= std::max<int64_t>(1, cols)))
    return {true, {false, rows == 1 ? std::max<int64_t>(1, cols) : row_stride}};
  if ((row_stride == 1 || rows == 1) && (cols == 1 || col_stride >= std::max<int64_t>(1, rows)))
    return {true, {true, cols == 1 ? std::max<int64_t>(1, rows) : col_stride}};
  return {};
}

namespace {

// C (M, N) = A (M, K) B (K, N) (+ bias on every row) in tiles of R rows by V vectors of C
// held in registers: for each k, every row of the tile gains A(i, k) times
// the V vectors of row k of B, multiply-adds g++ vectorises. A is read in
// place whatever its layout (R scalars per k); B is read as rows of ldb, a
// tile's width at a time, so its width must be a whole number of tiles (see
// pack_b). The tiles go column panel by column panel, so a panel of B (K by
// a tile's width) stays in cache while every row of A passes it. Rows past M
// repeat the last row and are not stored. Every element sums over k in
// order, whatever the tiling.
template <class T, int R, int V>
void gemm_tiles(const T* a, int64_t a_row, int64_t a_col, const T* b, int64_t ldb, T* c,
                int64_t ldc, int64_t m, int64_t n, int64_t k, const T* bias) {
  constexpr int64_t kWidth = V * kVecLanes<T>;
  for (int64_t j0 = 0; j0 < n; j0 += kWidth) {
    const int64_t cols = std::min(kWidth, n - j0);
    for (int64_t i0 = 0; i0 < m; i0 += R) {
      const T* x[R];
      for (int r = 0; r < R; ++r) x[r] = a + std::min<int64_t>(i0 + r, m - 1) * a_row;
      Vec<T> acc[R][V] = {};
      const T* in = b + j0;
      for (int64_t p = 0; p < k; ++p, in += ldb) {
        Vec<T> row[V];
        for (int v = 0; v < V; ++v) std::memcpy(&row[v], in + v * kVecLanes<T>, sizeof(Vec<T>));
        for (int r = 0; r < R; ++r) {
          const T xr = x[r][p * a_col];
          for (int v = 0; v < V; ++v) acc[r][v] += xr * row[v];
        }
      }
      const int64_t rows = std::min<int64_t>(R, m - i0);
      if (cols == kWidth) {
        // A whole-width tile goes straight from the registers to C. The
        // loops have constant bounds, so every accumulator keeps a register.
        Vec<T> add[V] = {};
        if (bias)
          for (int v = 0; v < V; ++v)
            std::memcpy(&add[v], bias + j0 + v * kVecLanes<T>, sizeof(Vec<T>));
        for (int r = 0; r < R; ++r) {
          if (r >= rows) break;
          T* dst = c + (i0 + r) * ldc + j0;
          for (int v = 0; v < V; ++v) {
            const Vec<T> value = acc[r][v] + add[v];
            std::memcpy(dst + v * kVecLanes<T>, &value, sizeof value);
          }
        }
        continue;
      }
      // A ragged tile at the right edge: out of the registers through a
      // buffer, at constant indices (an accumulator indexed by a runtime row
      // would have to live in memory through the loop above).
      T out[R][kWidth];
      for (int r = 0; r < R; ++r)
        for (int v = 0; v < V; ++v)
          std::memcpy(&out[r][v * kVecLanes<T>], &acc[r][v], sizeof(Vec<T>));
      for (int64_t r = 0; r < rows; ++r) {
        T* dst = c + (i0 + r) * ldc + j0;
        if (bias) {
          for (int64_t j = 0; j < cols; ++j) dst[j] = out[r][j] + bias[j0 + j];
        } else {
          for (int64_t j = 0; j < cols; ++j) dst[j] = out[r][j];
        }
      }
    }
  }
}

// op(B) as gemm_tiles reads it: in place when its rows are stored rows of a
// whole number of W-wide tiles, else copied into a per-thread buffer of rows
// padded with zeros to whole tiles (which also undoes a transpose). Returns
// the rows and their stride.
template <class T, int W>
std::pair<const T*, int64_t> pack_b(const T* b, GemmOperand lb, int64_t n, int64_t k) {
  if (!lb.transposed && n % W == 0) return {b, lb.ld};
  const int64_t np = (n + W - 1) / W * W;
  thread_local std::vector<T> packed;  // per thread: callers run GEMMs in parallel
  if (packed.size() < static_cast<size_t>(k * np)) packed.resize(static_cast<size_t>(k * np));
  T* out = packed.data();
  if (lb.transposed) {
    // B^T's stored rows are B's columns: read each along its row, in blocks
    // of 16 that stay in cache while their values go out 16 at a time.
    for (int64_t j0 = 0; j0 < n; j0 += 16)
      for (int64_t p = 0; p < k; ++p)
        for (int64_t j = j0; j < std::min<int64_t>(j0 + 16, n); ++j)
          out[p * np + j] = b[j * lb.ld + p];
  } else {
    for (int64_t p = 0; p < k; ++p) std::copy(b + p * lb.ld, b + p * lb.ld + n, out + p * np);
  }
  for (int64_t p = 0; p < k && n < np; ++p) std::fill(out + p * np + n, out + (p + 1) * np, T{0});
  return {out, np};
}

template <class T, int R, int V>
void tiled_gemm(const T* a, GemmOperand la, const T* b, GemmOperand lb, T* c, int64_t ldc,
                int64_t m, int64_t n, int64_t k, const T* bias) {
  const auto [rows_of_b, ldb] = pack_b<T, V * kVecLanes<T>>(b, lb, n, k);
  gemm_tiles<T, R, V>(a, la.transposed ? 1 : la.ld, la.transposed ? la.ld : 1, rows_of_b, ldb, c,
                      ldc, m, n, k, bias);
}

// Which products our tiles beat OpenBLAS on, measured on this project's
// machines (one thread, A 512 x 64 to 1024 x 256, whole training steps
// deciding the edges): narrow ones, N up to 128, with K up to 1024 and A
// (M x K) small enough to stay in L2 while the panels of B pass it, where
// OpenBLAS's packing costs more than it saves. seq2seq-tiny's (512 x 64) by
// (64 x 64): 160 GFLOP/s against OpenBLAS's 125. With A of 1 MB and N = 256
// (gpt-small's (1024 x 256) by (256 x 256)) OpenBLAS is 10% faster, since A
// passes once per 32 columns of B. The 12 x 2 tile needs AVX-512's 32
// vector registers; with 16 (AVX2) it would spill, so there OpenBLAS takes
// these too. On an AMD EPYC (Zen 4) with OpenBLAS 0.3.21, whose small-matrix
// kernels take products like these without packing, a ragged tile (N not a
// multiple of the 32-wide tile: the study's d_k 16, its vocabulary of 11,
// attention's 20 x 20 scores) or a short A (M = 16, which fills 16 of a
// tile's 24 rows) lost up to 2.5x: (576 x 32) by (32 x 16) 13.0 us against
// 5.2, (16 x 576) by (576 x 32) 8.2 against 5.0, (20 x 256) by (256 x 20)
// 6.4 against 1.9. Those go to OpenBLAS: study-reverse 0.93x the CPU time,
// study-recall 0.88x. Thin products, one of M, N, K at most 32, also go to
// the tiles up to N = 256 and K = 2048, A of any size: study-recall's
// feed-forward (1280 rows, d_model 32, d_ff 256) ran 1.1 to 1.4x faster on
// the tiles on that machine, each product and its two gradients ((1280 x
// 32) by (32 x 256) 96 us against 88, (1280 x 256) by (256 x 32) 102 against
// 81, (32 x 1280) by (1280 x 256) 135 against 97), while gpt-small's wide
// ones (K = N = 256 and more) stay with OpenBLAS, up to 1.4x faster there.
bool tiles_beat_blas(int64_t m, int64_t n, int64_t k) {
  return cpu_has_avx512() && n % 32 == 0 && m >= 32 &&
         ((n <= 128 && k <= 1024 && m * k <= (int64_t{1} << 18)) ||
          (n <= 256 && k <= 2048 && std::min({m, n, k}) <= 32));
}

// GRADFLOW_GEMM or the OpenBLAS core (blas_info.h), read at the first product.
bool own_path() {
  static const bool own = blas_info().gemm == GemmPath::kOwn;
  return own;
}

// The products past the tiles above when our own GEMM takes them
// (blas_info.h). packed_gemm packs both operands into whole 12 x 32 tiles
// and k blocks of 192 first, which a small product does not repay: the
// study's attention, per sequence and head, (20 x 256) by (256 x 20) ran 2
// to 4x slower than OpenBLAS's small-matrix kernel that way, study-reverse's
// 16-wide projections ((576 x 32) by (32 x 16), (16 x 576) by (576 x 32))
// 2x (bench/README.md, issue #34). Up to 2^20 multiply-adds, under AVX-512
// (the tiles need its 32 registers), A B^T with both operands along k, k of
// 4 vectors or more (the lanes' sums cost as much as a shorter k's
// products), goes to dot_gemm.h, the rest to the tiles, which read A in
// place and B too when its rows are whole tiles wide.
bool own_small(int64_t m, int64_t n, int64_t k) {
  return cpu_has_avx512() && m * n * k < (int64_t{1} << 20);
}

// The register tiles, their shape picked by this product's (or piece's) own
// (every shape gives the same bits): 4 x 16 lanes for a small one
// (attention's 16-wide heads fill them), 12 x 2 vectors where they beat
// OpenBLAS (24 accumulators of AVX-512's 32 registers), else one vector wide
// for N up to 16, else two, and 12, 10 or 8 rows high, whichever leaves the
// fewest rows idle. Compiled for each CPU (cpu_dispatch.h): zmm registers
// under AVX-512, ymm under AVX2.
template <class T>
void tiles(const T* a, GemmOperand la, const T* b, GemmOperand lb, T* c, int64_t ldc, int64_t m,
           int64_t n, int64_t k, const T* bias) {
  auto idle = [m](int64_t rows) { return (rows - m % rows) % rows; };  // in the last tile
  if (is_small_gemm(m, n, k)) {
    run_for_this_cpu(
        [&] { tiled_gemm<T, 4, 16 / kVecLanes<T>>(a, la, b, lb, c, ldc, m, n, k, bias); });
  } else if (n <= 16) {  // one vector wide
    run_for_this_cpu([&] { tiled_gemm<T, 12, 1>(a, la, b, lb, c, ldc, m, n, k, bias); });
  } else if (tiles_beat_blas(m, n, k) || idle(12) <= std::min(idle(10), idle(8))) {
    run_for_this_cpu([&] { tiled_gemm<T, 12, 2>(a, la, b, lb, c, ldc, m, n, k, bias); });
  } else if (idle(10) <= idle(8)) {
    run_for_this_cpu([&] { tiled_gemm<T, 10, 2>(a, la, b, lb, c, ldc, m, n, k, bias); });
  } else {
    run_for_this_cpu([&] { tiled_gemm<T, 8, 2>(a, la, b, lb, c, ldc, m, n, k, bias); });
  }
}

CBLAS_TRANSPOSE blas_flag(GemmOperand o) { return o.transposed ? CblasTrans : CblasNoTrans; }

// OpenBLAS runs on the calling thread: callers split work over gradflow's
// pool instead (see parallel.h). A pthreads OpenBLAS starts a worker per core
// when it loads, and an idle worker spins in sched_yield for 2^28 cycles
// (about 70 ms) before it sleeps: on 2 cores that took a core from the first
// steps of every program (train_bench's 20 steps of seq2seq-tiny ran 1.28x
// faster without it, bench/README.md). So OpenBLAS is set to one thread and,
// where the library has it (the pthreads build; a weak symbol, so a serial or
// OpenMP OpenBLAS links too), its workers are stopped: at program start, and
// again before the first GEMM that reaches OpenBLAS, in case the program set
// OpenBLAS's threads itself in between.
extern "C" int blas_thread_shutdown_(void) __attribute__((weak));
bool make_openblas_single_threaded() {
  openblas_set_num_threads(1);
  if (blas_thread_shutdown_) blas_thread_shutdown_();
  return true;
}
[[maybe_unused]] const bool openblas_single_threaded_at_start = make_openblas_single_threaded();

}  // namespace

template <class T>
GemmKernel gemm_kernel(int64_t m, int64_t n, int64_t k, GemmOperand la, GemmOperand lb) {
  if (is_small_gemm(m, n, k) || tiles_beat_blas(m, n, k)) return GemmKernel::kTiles;
  // OpenBLAS on a generic core (or GRADFLOW_GEMM=own): our own GEMM takes
  // the rest (blas_info.h). The library prints nothing; the programs say so
  // on stderr (note_generic_blas_core).
  if (!own_path()) return GemmKernel::kBlas;
  if (!own_small(m, n, k)) return GemmKernel::kPacked;
  if (!la.transposed && lb.transposed && k >= 4 * kVecLanes<T>) return GemmKernel::kDot;
  return GemmKernel::kTiles;
}

template <class T>
void gemm(const T* a, GemmOperand la, const T* b, GemmOperand lb, T* c, int64_t ldc, int64_t m,
          int64_t n, int64_t k, GemmKernel kernel, const T* bias) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {  // an empty sum: C is the bias, or 0
    for (int64_t i = 0; i < m; ++i) {
      T* row = c + i * ldc;
      if (bias) {
        std::copy(bias, bias + n, row);
      } else {
        std::fill(row, row + n, T{0});
      }
    }
    return;
  }
  switch (kernel) {
    case GemmKernel::kTiles:
      return tiles(a, la, b, lb, c, ldc, m, n, k, bias);
    case GemmKernel::kDot:
      return dot_gemm(a, la.ld, b, lb.ld, c, ldc, m, n, k, bias);
    case GemmKernel::kPacked:
      return packed_gemm(a, la, b, lb, c, ldc, m, n, k, bias);
    case GemmKernel::kBlas:
      break;
  }
  static const bool single_threaded = make_openblas_single_threaded();  // see above
  (void)single_threaded;
  // With a bias, C starts as the bias rows and GEMM adds to them (beta = 1),
  // which costs less than GEMM's own zeroing of C (beta = 0) and a pass after.
  if (bias)
    for (int64_t i = 0; i < m; ++i) std::copy(bias, bias + n, c + i * ldc);
  const T beta = bias ? T{1} : T{0};
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, blas_flag(la), blas_flag(lb), m, n, k, 1.0f, a, la.ld, b, lb.ld,
                beta, c, ldc);
  } else {
    cblas_dgemm(CblasRowMajor, blas_flag(la), blas_flag(lb), m, n, k, 1.0, a, la.ld, b, lb.ld, beta,
                c, ldc);
  }
}

template GemmKernel gemm_kernel<float>(int64_t, int64_t, int64_t, GemmOperand, GemmOperand);
template GemmKernel gemm_kernel<double>(int64_t, int64_t, int64_t, GemmOperand, GemmOperand);
template void gemm<float>(const float*, GemmOperand, const float*, GemmOperand, float*, int64_t,
                          int64_t, int64_t, int64_t, GemmKernel, const float*);
template void gemm<double>(const double*, GemmOperand, const double*, GemmOperand, double*, int64_t,
                           int64_t, int64_t, int64_t, GemmKernel, const double*);

}  // namespace gradflow
