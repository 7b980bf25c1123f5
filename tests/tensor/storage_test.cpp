// The block cache behind Storage: alignment, size classes, reuse, release.
#include "tensor/storage.h"
#include "tensor/tensor.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

namespace gradflow {
namespace {

TEST(Storage, BlocksAre64ByteAlignedAndWritable) {
  for (size_t bytes :
       {size_t{0}, size_t{1}, size_t{63}, size_t{64}, size_t{1000}, size_t{1} << 20}) {
    Storage s(bytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(s.data()) % 64, 0u) << bytes;
    EXPECT_EQ(s.bytes(), bytes);
    std::memset(s.data(), 0xab, bytes);
  }
}

TEST(Storage, AFreedBlockIsReusedWithoutAskingTheSystem) {
  void* first = nullptr;
  {
    Storage a(100000);
    first = a.data();
  }
  const MemoryStats before = memory_stats();
  EXPECT_GE(before.cached_bytes, 100000u);
  // Any size of the same class (100000 and 99000 round up to 13 * 8192) gets the block.
  Storage b(99000);
  EXPECT_EQ(b.data(), first);
  const MemoryStats after = memory_stats();
  EXPECT_EQ(after.system_allocations, before.system_allocations);
  EXPECT_EQ(after.cached_bytes, before.cached_bytes - 13 * 8192);
  EXPECT_EQ(after.live_bytes, before.live_bytes + 13 * 8192);
}

TEST(Storage, SizeClassesWasteAtMostAnEighth) {
  for (size_t bytes = 513; bytes < (size_t{1} << 24); bytes = bytes * 5 / 3) {
    const size_t live = memory_stats().live_bytes;
    Storage s(bytes);
    const size_t block = memory_stats().live_bytes - live;
    EXPECT_GE(block, bytes);
    EXPECT_LE(block, bytes + bytes / 8) << bytes;
  }
}

TEST(Storage, PeakCountsTheMostHeldAtOnce) {
  release_cached_memory();
  const MemoryStats start = memory_stats();
  EXPECT_EQ(start.cached_bytes, 0u);
  EXPECT_EQ(start.peak_live_bytes, start.live_bytes);
  {
    std::vector<std::unique_ptr<Storage>> held;
    for (int i = 0; i < 4; ++i) held.push_back(std::make_unique<Storage>(1 << 20));
  }
  Storage one(1 << 20);
  const MemoryStats end = memory_stats();
  EXPECT_EQ(end.peak_live_bytes, start.live_bytes + (4u << 20));
  EXPECT_EQ(end.live_bytes, start.live_bytes + (1u << 20));
  EXPECT_EQ(end.cached_bytes, 3u << 20);
}

TEST(Storage, AnImpossibleSizeThrowsBadAlloc) {
  EXPECT_THROW(Storage(SIZE_MAX), std::bad_alloc);
  EXPECT_THROW(Storage(SIZE_MAX / 2), std::bad_alloc);
}

// Tensors take their memory through Tensor::empty, which says what was asked.
TEST(Storage, ATensorBeyondMemoryNamesItsBytesAndShape) {
  try {
    Tensor::empty({int64_t{1} << 40, int64_t{1} << 20}, DType::Float32);
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "out of memory: a float32 tensor of shape (1099511627776, 1048576) needs "
                 "4611686018427387904 bytes (4.0 EiB), more than the system would give");
  }
}

}  // namespace
}  // namespace gradflow
