// Kernels that run at the speed of the CPU they find, from one portable build.
//
// Why: a library built with -march=native dies with SIGILL on an older CPU,
// and one built for baseline x86-64 leaves AVX-512 and AVX2 unused, which
// the vectorised loops (elementwise ops, softmax, layer norm, GELU, Adam) and
// the GEMM tiles need for their speed. run_for_this_cpu(body) compiles `body`
// three times, for x86-64-v4 (AVX-512), x86-64-v3 (AVX2 and FMA) and
// baseline x86-64, and runs the one this CPU supports. `flatten` inlines
// everything the body calls into each copy, so the loops inside it (in
// lambdas, templates, map_unary's and parallel_for's helpers) are compiled
// for that copy's CPU. parallel_for runs every chunk through it, so every
// kernel written as a parallel_for is dispatched without a word of its own.
//
// Why not GCC's target_clones, which does the same with an ifunc: g++ 12
// takes a cloned function called from its own file for one that cannot
// throw, so a gradflow::Error thrown inside ends the program.
//
// The build defines GRADFLOW_CPU_DISPATCH (CMakeLists.txt) for a portable
// x86-64 build with g++ 12 or later (the first to know these levels); under
// -DGRADFLOW_NATIVE=ON, on other CPUs and under the sanitizers the body is
// simply called, compiled for the compiler's flags.
#pragma once

#include <algorithm>
#include <atomic>

namespace gradflow {

#if defined(GRADFLOW_CPU_DISPATCH) && GRADFLOW_CPU_DISPATCH

inline constexpr bool kCpuDispatch = true;

namespace detail {
// 4: x86-64-v4 (AVX-512), 3: x86-64-v3 (AVX2, FMA), 1: baseline. Read once.
inline int detected_cpu_level() {
  static const int level = __builtin_cpu_supports("x86-64-v4")   ? 4
                           : __builtin_cpu_supports("x86-64-v3") ? 3
                                                                 : 1;
  return level;
}
inline std::atomic<int> cpu_level_cap{4};
}  // namespace detail

// The level the kernels run at: the CPU's, or lower under set_cpu_level_cap.
inline int cpu_level() {
  return std::min(detail::detected_cpu_level(),
                  detail::cpu_level_cap.load(std::memory_order_relaxed));
}

// Runs every kernel as a CPU of at most `level` (4, 3 or 1) would, so one
// machine can test (tests/tensor/kernels/cpu_dispatch_test.cpp) and time the
// code an older CPU runs. Returns the previous cap. Set it between kernels,
// not while one runs.
inline int set_cpu_level_cap(int level) {
  return detail::cpu_level_cap.exchange(level, std::memory_order_relaxed);
}

namespace detail {
template <class F>
[[gnu::target("arch=x86-64-v4"), gnu::flatten]] void run_v4(const F& body) {
  body();
}
template <class F>
[[gnu::target("arch=x86-64-v3"), gnu::flatten]] void run_v3(const F& body) {
  body();
}
template <class F>
[[gnu::flatten]] void run_baseline(const F& body) {
  body();
}
}  // namespace detail

template <class F>
void run_for_this_cpu(const F& body) {
  switch (cpu_level()) {
    case 4:
      return detail::run_v4(body);
    case 3:
      return detail::run_v3(body);
    default:
      return detail::run_baseline(body);
  }
}

// True when this CPU runs AVX-512: the 12 x 2 GEMM tile needs its 32 vector
// registers.
inline bool cpu_has_avx512() { return cpu_level() == 4; }

#else

inline constexpr bool kCpuDispatch = false;  // the compiler's flags decide, as they say
inline int cpu_level() { return 0; }
inline int set_cpu_level_cap(int) { return 0; }

template <class F>
void run_for_this_cpu(const F& body) {
  body();
}

inline bool cpu_has_avx512() {
#if defined(__AVX512F__)
  return true;
#else
  return false;
#endif
}

#endif

}  // namespace gradflow
