// A run under an address-space limit (`ulimit -v`, RLIMIT_AS) that OpenBLAS
// cannot work in is refused in one line instead of hanging forever.
//
// What happens without this (OpenBLAS 0.3.21, found with strace and gdb on
// `ulimit -v 100000; seq2seq --steps 2`): OpenBLAS maps a 128 MiB buffer for
// each thread that runs a product (blas_memory_alloc, first by mmap, then by
// malloc), and when neither succeeds it tries again, forever, without
// returning an error. Two places hit it:
//   - at load, a pthreads OpenBLAS starts a worker per core, which maps its
//     buffer first thing, while kernels/gemm.cpp's start-up code waits for
//     that worker to stop (blas_thread_shutdown_): every program hung before
//     main;
//   - at the first product of each thread that reaches OpenBLAS: a program
//     hung at step 1 (or, with several models in one process, at whichever
//     run first needed one more buffer), ignoring SIGTERM, whose handler only
//     sets a flag the loop never reaches.
//
// So, under a finite limit, every program of the toolkit (and minimal_train:
// examples/start/openblas_one_thread.cpp) sets OPENBLAS_NUM_THREADS to 1 before any library
// starts: OpenBLAS then starts no worker, which gradflow would stop anyway
// (it runs OpenBLAS on one thread, tensor/parallel.h). And before a run builds its model,
// check_address_space refuses it when the limit leaves less room than the
// model (memory_estimate.h) plus what the threads and OpenBLAS's buffers
// take. OpenBLAS keeps a buffer once mapped (until the process ends), so a
// run that passes the check and has made its first products never asks
// OpenBLAS for address space again.
#pragma once

#include <cstdint>
#include <optional>

namespace gradflow::training {

// What OpenBLAS maps per thread that runs a product (BUFFER_SIZE of its
// Cooperlake/SkylakeX builds, 0.3.21), and what each thread beyond the first
// adds: its stack and the C library's arena for its allocations.
inline constexpr uint64_t kOpenBlasBufferBytes = uint64_t{128} << 20;
inline constexpr uint64_t kThreadBytes = uint64_t{72} << 20;  // 8 MiB stack + 64 MiB arena

// The process's address-space limit (RLIMIT_AS) in bytes, or none.
std::optional<uint64_t> address_space_limit();

// The address space the process maps now (/proc/self/statm's size).
uint64_t address_space_in_use();

// What a run of `threads` threads whose model and batch take `model_bytes`
// needs beyond what is mapped now; `main_too`: the calling thread runs
// products of its own besides (the study's calibration), one buffer more.
uint64_t address_space_needed(int threads, double model_bytes, bool main_too = false);

// Throws cli::UsageError naming the limit, what is in use, what the run
// needs and the `ulimit -v` that would do, when `limit` (none: no limit)
// leaves less than address_space_needed above `in_use`.
void check_address_space(int threads, double model_bytes, std::optional<uint64_t> limit,
                         uint64_t in_use, bool main_too = false);

}  // namespace gradflow::training
