#include "tensor/storage.h"

#include <cstdlib>
#include <new>

namespace gradflow {

namespace {
constexpr size_t kAlign = 64;  // a cache line, and a full AVX-512 register
}

Storage::Storage(size_t bytes) : data_(nullptr), bytes_(bytes) {
  // aligned_alloc needs a size that is a multiple of the alignment.
  size_t rounded = (bytes + kAlign - 1) / kAlign * kAlign;
  data_ = std::aligned_alloc(kAlign, rounded == 0 ? kAlign : rounded);
  if (!data_) throw std::bad_alloc();
}

Storage::~Storage() { std::free(data_); }

}  // namespace gradflow
