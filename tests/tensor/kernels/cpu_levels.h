// Runs a test body at each CPU level this machine can run: the AVX-512
// tile, the AVX2 tile, and baseline x86-64 (the AVX2 tile's shape, compiled
// for SSE2), so every kernel path is tested on one machine. With dispatch
// off the compiler's flags decide: one level.
#pragma once

#include "tensor/kernels/cpu_dispatch.h"

namespace gradflow {

template <class F>
void at_every_level(const F& body) {
  for (int level : {4, 3, 1}) {
    const int previous = set_cpu_level_cap(level);
    if (!kCpuDispatch || cpu_level() == level) body();  // else this CPU cannot run it
    set_cpu_level_cap(previous);
    if (!kCpuDispatch) return;
  }
}

}  // namespace gradflow
