// A reference-counted, 64-byte aligned block of bytes. Tensors share one
// Storage between views; the block goes back when the last view goes.
//
// "Back" means to a cache of free blocks, not to the system. A training step
// asks for the same sizes every step, and a block fresh from the system costs
// a page fault per 4 KiB on first touch (15% of a step, measured), so freed
// blocks are kept by size class and handed out again: after the first step a
// training step asks the system for no memory at all (tested). Size classes
// step by an eighth of a power of two, so a block is at most 12.5% larger
// than asked. Under AddressSanitizer a cached block is poisoned, so a use
// after free is still reported.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace gradflow {

class Storage {
 public:
  explicit Storage(size_t bytes);  // contents uninitialised
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }

  // How many times Tensor's in-place ops (fill_, copy_, set, add_, ...) have
  // written to this block: autograd compares it with the count it saw at the
  // forward, to refuse a backward through values edited since. Writes through
  // data<T>() (kernels filling a fresh output) are not counted: code that
  // writes an existing tensor that way calls bump_version() (an optimizer's step).
  uint64_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }

 private:
  void* data_;
  size_t bytes_;
  std::atomic<uint64_t> version_{0};
};

// Byte counts of all Storage blocks in the process, by their size class.
struct MemoryStats {
  size_t live_bytes = 0;            // held by tensors now
  size_t peak_live_bytes = 0;       // the most ever held at once
  size_t cached_bytes = 0;          // free, kept for reuse
  uint64_t system_allocations = 0;  // blocks that had to come from the system
};
MemoryStats memory_stats();

// Returns every cached block to the system (peak_live_bytes is reset to the
// live bytes of now).
void release_cached_memory();

}  // namespace gradflow
