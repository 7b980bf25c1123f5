// Sets the pool's size for one scope and puts it back to 1, pass or fail:
// for the tests that compare results across thread counts.
#pragma once

#include "tensor/parallel.h"

namespace gradflow::testing {

struct ThreadsFor {
  explicit ThreadsFor(int n) { set_num_threads(n); }
  ~ThreadsFor() { set_num_threads(1); }
  ThreadsFor(const ThreadsFor&) = delete;
  ThreadsFor& operator=(const ThreadsFor&) = delete;
};

}  // namespace gradflow::testing
