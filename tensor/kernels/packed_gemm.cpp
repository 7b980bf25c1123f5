#include "tensor/kernels/packed_gemm.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "tensor/kernels/cpu_dispatch.h"
#include "tensor/kernels/lanes.h"
#include "tensor/parallel.h"

// This file is compiled with -ffp-contract=fast (tensor/CMakeLists.txt): the
// micro-kernel's `acc += a * b` must be one fused multiply-add, twice the
// throughput of a multiply and an add, and what OpenBLAS's kernels do too.

namespace gradflow {

namespace {

// The blocking, GotoBLAS's loops: C is computed MR x NR tiles at a time from
// packed panels. A tile's accumulators stay in registers (MR x V vectors:
// 24 of AVX-512's 32 registers at 12 x 2, 12 of AVX2's 16 at 6 x 1); its B
// micro-panel (kc x NR) stays in L1 (24 KB) while every micro-panel of the
// packed A block (MC x kc, 384 KB) passes it from L2; the packed B panel
// (kc x NC) waits in L3 for the next A block.
template <class T, int MR, int V>
struct Blocking {
  static constexpr int64_t kNR = V * kVecLanes<T>;
  static constexpr int64_t kKC = 24 * 1024 / (kNR * static_cast<int64_t>(sizeof(T)));
  static constexpr int64_t kMC = 384 * 1024 / (kKC * static_cast<int64_t>(sizeof(T))) / MR * MR;
  static constexpr int64_t kNC = 4096 / kNR * kNR;
};

// op(X)(i, j) for a row-major or transposed operand.
template <class T>
T at(const T* x, GemmOperand l, int64_t i, int64_t j) {
  return l.transposed ? x[j * l.ld + i] : x[i * l.ld + j];
}

// Rows [i0, i0 + mc) and columns [p0, p0 + kc) of op(A) as micro-panels of
// MR rows, each stored column by column (the MR values of one k together),
// rows past M as zeros.
template <class T, int MR>
void pack_a(const T* a, GemmOperand la, int64_t m, int64_t i0, int64_t mc, int64_t p0, int64_t kc,
            T* out) {
  for (int64_t ir = 0; ir < mc; ir += MR, out += MR * kc) {
    const int64_t rows = std::min<int64_t>(MR, m - i0 - ir);
    if (la.transposed) {  // the MR values of one k are contiguous in A^T's rows
      for (int64_t p = 0; p < kc; ++p) {
        const T* src = a + (p0 + p) * la.ld + i0 + ir;
        for (int64_t r = 0; r < MR; ++r) out[p * MR + r] = r < rows ? src[r] : T{0};
      }
    } else {
      for (int64_t r = 0; r < MR; ++r) {
        if (r >= rows) {
          for (int64_t p = 0; p < kc; ++p) out[p * MR + r] = T{0};
          continue;
        }
        const T* src = a + (i0 + ir + r) * la.ld + p0;
        for (int64_t p = 0; p < kc; ++p) out[p * MR + r] = src[p];
      }
    }
  }
}

// Rows [p0, p0 + kc) and columns [j0, j0 + nc) of op(B) as micro-panels of
// NR columns, each stored row by row, columns past N as zeros.
template <class T, int64_t NR>
void pack_b(const T* b, GemmOperand lb, int64_t n, int64_t j0, int64_t nc, int64_t p0, int64_t kc,
            T* out) {
  for (int64_t jr = 0; jr < nc; jr += NR, out += NR * kc) {
    const int64_t cols = std::min<int64_t>(NR, n - j0 - jr);
    if (!lb.transposed && cols == NR) {
      for (int64_t p = 0; p < kc; ++p)
        std::memcpy(out + p * NR, b + (p0 + p) * lb.ld + j0 + jr, sizeof(T) * NR);
      continue;
    }
    for (int64_t j = 0; j < NR; ++j)
      for (int64_t p = 0; p < kc; ++p)
        out[p * NR + j] = j < cols ? at(b, lb, p0 + p, j0 + jr + j) : T{0};
  }
}

// One MR x NR tile of C from a packed A micro-panel and a packed B
// micro-panel over kc values of k. The first block of k writes the tile
// (plus the bias), the later ones add to it. A tile at the bottom or right
// edge (rows x cols) goes out through a buffer, at constant indices: an
// accumulator indexed by a runtime row would leave the registers.
template <class T, int MR, int V>
void micro_kernel(const T* ap, const T* bp, int64_t kc, T* c, int64_t ldc, int64_t rows,
                  int64_t cols, bool first, const T* bias) {
  constexpr int64_t kNR = V * kVecLanes<T>;
  for (int r = 0; r < MR; ++r) __builtin_prefetch(c + r * ldc);  // read or written at the end
  Vec<T> acc[MR][V] = {};
  for (int64_t p = 0; p < kc; ++p, ap += MR, bp += kNR) {
    Vec<T> row[V];
    for (int v = 0; v < V; ++v) std::memcpy(&row[v], bp + v * kVecLanes<T>, sizeof(Vec<T>));
    for (int r = 0; r < MR; ++r)
      for (int v = 0; v < V; ++v) acc[r][v] += ap[r] * row[v];
  }
  if (rows == MR && cols == kNR) {
    Vec<T> add[V] = {};
    if (first && bias)
      for (int v = 0; v < V; ++v) std::memcpy(&add[v], bias + v * kVecLanes<T>, sizeof(Vec<T>));
    for (int r = 0; r < MR; ++r) {
      T* dst = c + r * ldc;
      for (int v = 0; v < V; ++v) {
        if (!first) std::memcpy(&add[v], dst + v * kVecLanes<T>, sizeof(Vec<T>));
        const Vec<T> value = acc[r][v] + add[v];
        std::memcpy(dst + v * kVecLanes<T>, &value, sizeof value);
      }
    }
    return;
  }
  T out[MR][kNR];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < V; ++v) std::memcpy(&out[r][v * kVecLanes<T>], &acc[r][v], sizeof(Vec<T>));
  for (int64_t r = 0; r < rows; ++r) {
    T* dst = c + r * ldc;
    for (int64_t j = 0; j < cols; ++j)
      dst[j] = out[r][j] + (first ? (bias ? bias[j] : T{0}) : dst[j]);
  }
}

// Per-thread packing buffers (callers run GEMMs on several threads at once),
// starting on a cache line: a vector load across two lines costs two.
template <class T>
T* buffer(std::vector<T>& v, int64_t size) {
  const size_t padded = static_cast<size_t>(size + kVecLanes<T>);
  if (v.size() < padded) v.resize(padded);
  void* start = v.data();
  size_t space = v.size() * sizeof(T);
  return static_cast<T*>(std::align(64, sizeof(T) * static_cast<size_t>(size), start, space));
}

int64_t round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

// A block of rows of C per piece of work: L2's kMC on one thread; on more,
// kBlocksPerThread blocks per thread (down to one tile), claimed as the
// threads finish, so a thread the shared machine slows takes fewer.
constexpr int64_t kBlocksPerThread = 4;

template <class T, int MR, int V>
void blocked_gemm(const T* a, GemmOperand la, const T* b, GemmOperand lb, T* c, int64_t ldc,
                  int64_t m, int64_t n, int64_t k, const T* bias) {
  using B = Blocking<T, MR, V>;
  const int64_t threads = threads_here();
  const int64_t blocks = threads == 1 ? 1 : threads * kBlocksPerThread;  // wanted, at least
  const int64_t mc_step = std::clamp(round_up((m + blocks - 1) / blocks, MR), int64_t{MR}, B::kMC);
  const int64_t row_blocks = (m + mc_step - 1) / mc_step;
  // The caller's buffer for each panel of B, which every thread reads: packed
  // once for all of them, not once per thread (or per piece of C).
  thread_local std::vector<T> b_buffer;
  for (int64_t jc = 0; jc < n; jc += B::kNC) {
    const int64_t nc = std::min(B::kNC, n - jc);
    const int64_t panels = (nc + B::kNR - 1) / B::kNR;
    const int64_t pack_pieces = std::min(panels, blocks);
    for (int64_t pc = 0; pc < k; pc += B::kKC) {
      const int64_t kc = std::min(B::kKC, k - pc);
      T* bp = buffer(b_buffer, panels * B::kNR * kc);
      parallel_pieces(pack_pieces, [&](int64_t first, int64_t last) {
        const int64_t from = first * panels / pack_pieces, to = last * panels / pack_pieces;
        pack_b<T, B::kNR>(b, lb, n, jc + from * B::kNR, std::min(nc, to * B::kNR) - from * B::kNR,
                          pc, kc, bp + from * B::kNR * kc);
      });
      parallel_pieces(row_blocks, [&](int64_t first, int64_t last) {
        thread_local std::vector<T> a_buffer;  // each thread packs its own rows of A
        for (int64_t ic = first * mc_step; ic < std::min(m, last * mc_step); ic += mc_step) {
          const int64_t mc = std::min(mc_step, m - ic);
          T* ap = buffer(a_buffer, round_up(mc, MR) * kc);
          pack_a<T, MR>(a, la, m, ic, mc, pc, kc, ap);
          for (int64_t jr = 0; jr < nc; jr += B::kNR)
            for (int64_t ir = 0; ir < mc; ir += MR)
              micro_kernel<T, MR, V>(ap + ir * kc, bp + jr * kc, kc, c + (ic + ir) * ldc + jc + jr,
                                     ldc, std::min<int64_t>(MR, mc - ir), std::min(B::kNR, nc - jr),
                                     pc == 0, bias ? bias + jc + jr : nullptr);
        }
      });
    }
  }
}

}  // namespace

template <class T>
void packed_gemm(const T* a, GemmOperand la, const T* b, GemmOperand lb, T* c, int64_t ldc,
                 int64_t m, int64_t n, int64_t k, const T* bias) {
  // The tile fits the CPU's registers; each piece of work is compiled for
  // each CPU level (parallel.h's run_chunk, cpu_dispatch.h).
  if (cpu_has_avx512()) {
    blocked_gemm<T, 12, 2>(a, la, b, lb, c, ldc, m, n, k, bias);
  } else {
    blocked_gemm<T, 6, 1>(a, la, b, lb, c, ldc, m, n, k, bias);
  }
}

template void packed_gemm<float>(const float*, GemmOperand, const float*, GemmOperand, float*,
                                 int64_t, int64_t, int64_t, int64_t, const float*);
template void packed_gemm<double>(const double*, GemmOperand, const double*, GemmOperand, double*,
                                  int64_t, int64_t, int64_t, int64_t, const double*);

}  // namespace gradflow
