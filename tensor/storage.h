// A reference-counted, 64-byte aligned block of bytes. Tensors share one
// Storage between views; the block is freed when the last view goes.
#pragma once

#include <cstddef>
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

 private:
  void* data_;
  size_t bytes_;
};

}  // namespace gradflow
