// One small pool of threads that every kernel shares, GEMM included.
//
// parallel_for(n, grain, fn) splits [0, n) into contiguous chunks and runs
// fn(begin, end) on each, the calling thread taking a share, and returns when
// all are done. Every kernel cuts its work so that each item is an
// independent output (a row, a block of elements, a block of GEMM rows), so
// how [0, n) is cut changes no bit of the elementwise and row-wise results.
// A GEMM is cut into pieces by its size and the thread count (matmul.cpp), and OpenBLAS may
// round a piece's last bit differently from the whole product (its kernels
// depend on where a piece starts and how big it is). Hence: bitwise the same
// at a fixed thread count, and equal to float rounding across thread counts.
//
// Why our own pool and not OpenBLAS's: OpenBLAS parallelises one GEMM at a
// time and its idle threads spin in sched_yield while everything else (the
// elementwise ops, softmax, layernorm) runs on one core. Here OpenBLAS runs
// single-threaded (kernels/gemm.cpp stops its workers at program start) and
// matmul splits its GEMMs over this pool, so the same two threads do all the
// work and none of them spins while the other computes.
//
// Work below `grain` items per thread, a call from inside a parallel_for, and
// a call while another thread's parallel_for holds the pool (the scaling
// study trains several models at once) all simply run on the calling thread.
#pragma once

#include <algorithm>
#include <cstdint>

#include "tensor/kernels/cpu_dispatch.h"

namespace gradflow {

// Threads used by parallel_for, the caller included (default 1). Also tells
// OpenBLAS to use one thread, since matmul parallelises through this pool.
// REQUIRES: 1 <= threads <= 256; not called while a parallel_for runs.
void set_num_threads(int threads);
int num_threads();
// The threads a parallel_for called here would use: 1 inside a parallel_for's
// chunk (a data-parallel step's parts, autograd/data_parallel.h), else num_threads().
int threads_here();

// Denormal (subnormal) floats, below about 1.2e-38 in float32: Intel cores
// take a slow path, tens of times slower, for each operation that reads or
// makes one, and the gradients behind a saturated softmax are full of them
// (the scaling study's unscaled attention ran five times slower). With
// flushing on, the calling thread's float arithmetic reads them as 0 and
// writes 0 in their place (x86's DAZ and FTZ modes), and so does the work a
// parallel_for from that thread hands to the pool; threads it starts later
// inherit the mode on Linux. Off by default, as in IEEE 754; the programs
// turn it on. A no-op where the CPU has no such mode.
void set_flush_denormals(bool on);  // for the calling thread
bool flush_denormals();             // the calling thread's mode

namespace detail {
using ChunkFn = void (*)(const void* ctx, int64_t begin, int64_t end);
// Runs chunk c of `chunks` (covering [c*n/chunks, (c+1)*n/chunks)) for all c.
void run_chunks(int64_t n, int64_t chunks, ChunkFn fn, const void* ctx);
}  // namespace detail

namespace detail {
// Every parallel_for body runs through here, on the pool or on the calling
// thread alike, compiled for each CPU with fn's loops inlined
// (cpu_dispatch.h): every kernel written as a parallel_for vectorises for the
// CPU it runs on without a -march of its own.
template <class F>
void run_chunk(const void* ctx, int64_t begin, int64_t end) {
  run_for_this_cpu([&] { (*static_cast<const F*>(ctx))(begin, end); });
}
}  // namespace detail

// How many chunks parallel_for cuts n items into.
inline int64_t parallel_chunks(int64_t n, int64_t grain) {
  return std::clamp<int64_t>(n / std::max<int64_t>(grain, 1), 1, num_threads());
}

template <class F>
void parallel_for(int64_t n, int64_t grain, const F& fn) {
  if (n <= 0) return;
  const int64_t chunks = parallel_chunks(n, grain);
  if (chunks == 1) {
    detail::run_chunk<F>(&fn, int64_t{0}, n);
    return;
  }
  detail::run_chunks(n, chunks, &detail::run_chunk<F>, &fn);
}

// Like parallel_for, but each of the n items is a chunk of its own, claimed
// by whichever thread is free: for a few large independent pieces (matmul's
// cuts of one large product), so a thread the machine slows down takes fewer.
template <class F>
void parallel_pieces(int64_t n, const F& fn) {
  if (n <= 0) return;
  if (n == 1 || num_threads() == 1) {
    detail::run_chunk<F>(&fn, int64_t{0}, n);
    return;
  }
  detail::run_chunks(n, n, &detail::run_chunk<F>, &fn);
}

}  // namespace gradflow
