// Tensor: an N-d array view onto shared Storage.
//
// A tensor is (storage, dtype, shape, strides, offset). Views (transpose,
// narrow, expand, ...) share the storage and change only the other four, so
// they copy nothing; `contiguous()` copies when a kernel needs row-major data.
// Copying a Tensor copies the handle, not the data (like a shared_ptr);
// `clone()` copies the data. This layer knows nothing of gradients.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tensor/dtype.h"
#include "tensor/shape.h"
#include "tensor/storage.h"

namespace gradflow {

class Tensor {
 public:
  Tensor() = default;  // undefined: defined() is false
  static Tensor empty(const Shape& shape, DType dtype = DType::Float32);

  bool defined() const { return storage_ != nullptr; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  const Strides& strides() const { return strides_; }
  int64_t offset() const { return offset_; }
  int64_t ndim() const { return static_cast<int64_t>(shape_.size()); }
  int64_t size(int64_t axis) const;  // negative axes count from the end
  int64_t numel() const { return numel_of(shape_); }
  bool is_contiguous() const;
  const std::shared_ptr<Storage>& storage() const { return storage_; }

  // Typed pointer to element 0 of this view. REQUIRES: T matches dtype().
  template <class T>
  T* data() const {
    if (!storage_) fail("data: undefined tensor");
    if (dtype_of<T>() != dtype_) fail("data: tensor is ", dtype_name(dtype_));
    return static_cast<T*>(storage_->data()) + offset_;
  }

  // Element access for tests and printing (slow: one element at a time).
  double item() const;  // REQUIRES: numel() == 1
  double at(std::initializer_list<int64_t> index) const;
  void set(std::initializer_list<int64_t> index, double value);
  std::vector<double> to_vector() const;  // row-major order
  // An Int64 tensor's values, row-major and exact (token ids for
  // CharDataset::decode, say); throws Error for any other dtype.
  std::vector<int64_t> to_int64_vector() const;

  // Views: share storage, copy nothing.
  Tensor view(const Shape& shape) const;     // REQUIRES: a view is possible
  Tensor reshape(const Shape& shape) const;  // a view when possible, else a copy
  Tensor transpose(int64_t a, int64_t b) const;
  Tensor permute(const std::vector<int64_t>& order) const;
  Tensor narrow(int64_t axis, int64_t start, int64_t length) const;
  Tensor slice(int64_t axis, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor select(int64_t axis, int64_t index) const;  // drops the axis
  Tensor squeeze(int64_t axis) const;
  Tensor unsqueeze(int64_t axis) const;
  Tensor expand(const Shape& shape) const;  // size-1 axes repeat with stride 0
  Tensor flatten() const { return reshape({numel()}); }

  // Copies.
  Tensor contiguous() const;  // *this when already contiguous
  Tensor clone() const;       // always a fresh contiguous copy
  Tensor to(DType dtype) const;

  // In place: fill, and copy from `src` broadcast to this view's shape.
  Tensor& fill_(double value);
  Tensor& copy_(const Tensor& src);

  std::string to_string() const;

 private:
  friend Tensor make_view(const Tensor&, Shape, Strides, int64_t);
  std::shared_ptr<Storage> storage_;
  DType dtype_ = DType::Float32;
  Shape shape_;
  Strides strides_;
  int64_t offset_ = 0;
};

// A tensor sharing `base`'s storage with the given layout (no checks).
Tensor make_view(const Tensor& base, Shape shape, Strides strides, int64_t offset);

std::ostream& operator<<(std::ostream& out, const Tensor& t);

// Tensors by name, in order: a module's state_dict, an optimizer's state,
// the contents of a safetensors file.
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

}  // namespace gradflow
