#include "tensor/storage.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define GRADFLOW_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define GRADFLOW_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define GRADFLOW_POISON(p, n) ((void)(p), (void)(n))
#define GRADFLOW_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace gradflow {

namespace {

constexpr size_t kAlign = 64;  // a cache line, and a full AVX-512 register
// Free blocks beyond this many bytes go back to the system at once. A steady
// training loop never comes near it (its cache is bounded by its own peak);
// it only stops a run of ever-new sizes from hoarding memory.
constexpr size_t kMaxCachedBytes = size_t{1} << 30;

// The block size for a request: a multiple of 64 up to 512 bytes, then the
// next multiple of an eighth of the power of two below it.
size_t size_class(size_t bytes) {
  if (bytes > (SIZE_MAX >> 2)) throw std::bad_alloc();  // no size class this big
  if (bytes <= 512) return std::max<size_t>(kAlign, (bytes + kAlign - 1) / kAlign * kAlign);
  const size_t step = std::bit_floor(bytes) / 8;
  return (bytes + step - 1) / step * step;
}

class BlockCache {
 public:
  void* allocate(size_t size) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = free_.find(size);
      if (it != free_.end() && !it->second.empty()) {
        void* p = it->second.back();
        it->second.pop_back();
        stats_.cached_bytes -= size;
        note_live(size);
        GRADFLOW_UNPOISON(p, size);
        return p;
      }
    }
    void* p = std::aligned_alloc(kAlign, size);
    if (!p) {  // the cache may hold what the system lacks
      release_all();
      p = std::aligned_alloc(kAlign, size);
      if (!p) throw std::bad_alloc();
    }
    std::lock_guard<std::mutex> lock(mutex_);
    ++stats_.system_allocations;
    note_live(size);
    return p;
  }

  void free(void* p, size_t size) {
    std::lock_guard<std::mutex> lock(mutex_);
    stats_.live_bytes -= size;
    if (stats_.cached_bytes + size > kMaxCachedBytes) {
      std::free(p);
      return;
    }
    GRADFLOW_POISON(p, size);
    free_[size].push_back(p);
    stats_.cached_bytes += size;
  }

  void release_all() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [size, blocks] : free_)
      for (void* p : blocks) {
        GRADFLOW_UNPOISON(p, size);
        std::free(p);
      }
    free_.clear();
    stats_.cached_bytes = 0;
    stats_.peak_live_bytes = stats_.live_bytes;
  }

  MemoryStats stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

 private:
  void note_live(size_t size) {
    stats_.live_bytes += size;
    stats_.peak_live_bytes = std::max(stats_.peak_live_bytes, stats_.live_bytes);
  }

  std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> free_;  // by size class
  MemoryStats stats_;
};

// Never destroyed: a tensor in a static object may be freed after any static
// cache would have been.
BlockCache& cache() {
  static BlockCache* c = new BlockCache;
  return *c;
}

}  // namespace

Storage::Storage(size_t bytes) : data_(cache().allocate(size_class(bytes))), bytes_(bytes) {}

Storage::~Storage() { cache().free(data_, size_class(bytes_)); }

MemoryStats memory_stats() { return cache().stats(); }

void release_cached_memory() { cache().release_all(); }

}  // namespace gradflow
