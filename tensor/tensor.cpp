// The Tensor handle: construction, element access, copies and printing.
// View operations are in views.cpp.
#include "tensor/tensor.h"

#include <cstdio>
#include <cstring>
#include <iomanip>
#include <new>
#include <ostream>
#include <sstream>

#include "tensor/strided_loop.h"

namespace gradflow {

Tensor Tensor::empty(const Shape& shape, DType dtype) {
  for (int64_t s : shape)
    if (s < 0) fail("empty: negative size in shape ", shape_str(shape));
  Tensor t;
  size_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<size_t>(numel_of(shape)), dtype_size(dtype), &bytes))
    fail("empty: shape ", shape_str(shape), " needs more bytes than a size_t can count");
  try {
    t.storage_ = std::make_shared<Storage>(bytes);
  } catch (const std::bad_alloc&) {
    // The one place tensors get memory: say how much, and for what, in the
    // unit that shows it (1 MiB was "0.00 GiB").
    const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double size = static_cast<double>(bytes) / 1024;
    int unit = 0;
    while (size >= 1024 && unit < 5) size /= 1024, ++unit;
    char human[48];
    std::snprintf(human, sizeof human, size < 10 ? "%.1f %s" : "%.0f %s", size, units[unit]);
    fail("out of memory: a ", dtype_name(dtype), " tensor of shape ", shape_str(shape), " needs ",
         bytes, " bytes (", human, "), more than the system would give");
  }
  t.dtype_ = dtype;
  t.shape_ = shape;
  t.strides_ = contiguous_strides(shape);
  return t;
}

Tensor make_view(const Tensor& base, Shape shape, Strides strides, int64_t offset) {
  Tensor t = base;
  t.shape_ = std::move(shape);
  t.strides_ = std::move(strides);
  t.offset_ = offset;
  return t;
}

int64_t Tensor::size(int64_t axis) const { return shape_[normalize_axis(axis, ndim(), "size")]; }

bool Tensor::is_contiguous() const {
  int64_t expected = 1;
  for (size_t i = shape_.size(); i-- > 0;) {
    if (shape_[i] == 1) continue;  // the stride of a size-1 axis never matters
    if (strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

namespace {

int64_t element_offset(const Tensor& t, std::initializer_list<int64_t> index, const char* op) {
  if (static_cast<int64_t>(index.size()) != t.ndim())
    fail(op, ": got ", index.size(), " indices for a tensor of shape ", shape_str(t.shape()));
  int64_t offset = t.offset(), axis = 0;
  for (int64_t i : index) {
    int64_t n = t.shape()[axis];
    if (i < -n || i >= n)
      fail(op, ": index ", i, " is out of range for axis ", axis, " of size ", n);
    offset += (i < 0 ? i + n : i) * t.strides()[axis];
    ++axis;
  }
  return offset;
}

}  // namespace

double Tensor::at(std::initializer_list<int64_t> index) const {
  int64_t offset = element_offset(*this, index, "at");
  return visit_any(dtype_, [&](auto zero) {
    using T = decltype(zero);
    return static_cast<double>(static_cast<const T*>(storage_->data())[offset]);
  });
}

void Tensor::set(std::initializer_list<int64_t> index, double value) {
  int64_t offset = element_offset(*this, index, "set");
  storage_->bump_version();
  visit_any(dtype_, [&](auto zero) {
    using T = decltype(zero);
    static_cast<T*>(storage_->data())[offset] = static_cast<T>(value);
  });
}

double Tensor::item() const {
  if (numel() != 1) fail("item: expected a single element, got shape ", shape_str(shape_));
  return contiguous().to_vector()[0];
}

std::vector<double> Tensor::to_vector() const {
  std::vector<double> out(numel());
  Tensor c = contiguous();
  visit_any(dtype_, [&](auto zero) {
    using T = decltype(zero);
    const T* p = c.data<T>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<double>(p[i]);
  });
  return out;
}

std::vector<int64_t> Tensor::to_int64_vector() const {
  if (!defined()) fail("to_int64_vector: undefined tensor");
  if (dtype_ != DType::Int64)
    fail("to_int64_vector: expected an Int64 tensor, got ", dtype_name(dtype_),
         " (to_vector() gives any dtype's values as doubles)");
  Tensor c = contiguous();
  const int64_t* p = c.data<int64_t>();
  return std::vector<int64_t>(p, p + numel());
}

// ---- copies ----------------------------------------------------------------

Tensor& Tensor::copy_(const Tensor& src) {
  if (!defined() || !src.defined()) fail("copy_: undefined tensor");
  if (broadcast_shapes(src.shape(), shape_, "copy_") != shape_)
    fail("copy_: source of shape ", shape_str(src.shape()), " does not broadcast to ",
         shape_str(shape_));
  Strides src_strides = broadcast_strides(src.shape(), src.strides(), shape_);
  storage_->bump_version();
  visit_any(dtype_, [&](auto dst_zero) {
    using D = decltype(dst_zero);
    visit_any(src.dtype(), [&](auto src_zero) {
      using S = decltype(src_zero);
      D* dst = data<D>();
      const S* s = src.data<S>();
      parallel_for_each_run<2>(shape_, {strides_, src_strides},
                               [&](int64_t n, Offsets<2> o, Offsets<2> st) {
                                 D* d = dst + o[0];
                                 const S* p = s + o[1];
                                 if (st[0] == 1 && st[1] == 1) {
                                   for (int64_t i = 0; i < n; ++i) d[i] = static_cast<D>(p[i]);
                                 } else {
                                   for (int64_t i = 0; i < n; ++i)
                                     d[i * st[0]] = static_cast<D>(p[i * st[1]]);
                                 }
                               });
    });
  });
  return *this;
}

Tensor& Tensor::fill_(double value) {
  if (!defined()) fail("fill_: undefined tensor");
  storage_->bump_version();
  visit_any(dtype_, [&](auto zero) {
    using T = decltype(zero);
    T v = static_cast<T>(value);
    T* base = data<T>();
    parallel_for_each_run<1>(shape_, {strides_}, [&](int64_t n, Offsets<1> o, Offsets<1> st) {
      T* d = base + o[0];
      for (int64_t i = 0; i < n; ++i) d[i * st[0]] = v;
    });
  });
  return *this;
}

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(); }

Tensor Tensor::clone() const { return Tensor::empty(shape_, dtype_).copy_(*this); }

Tensor Tensor::to(DType dtype) const {
  return dtype == dtype_ ? *this : Tensor::empty(shape_, dtype).copy_(*this);
}

// ---- printing --------------------------------------------------------------

std::string Tensor::to_string() const {
  if (!defined()) return "Tensor(undefined)";
  std::ostringstream out;
  std::vector<double> v = to_vector();
  // Print nested brackets row by row; long tensors are abbreviated.
  const size_t limit = 64;
  Strides rowmajor = contiguous_strides(shape_);
  out << "tensor(";
  for (size_t i = 0; i < v.size() && i < limit; ++i) {
    for (size_t a = 0; a < shape_.size(); ++a)
      if (i % (rowmajor[a] * shape_[a]) == 0) out << "[";
    out << std::setprecision(6) << v[i];
    size_t closes = 0;
    for (size_t a = 0; a < shape_.size(); ++a)
      if ((i + 1) % (rowmajor[a] * shape_[a]) == 0) ++closes;
    out << std::string(closes, ']');
    if (i + 1 < v.size()) out << (closes ? ",\n       " : ", ");
  }
  if (v.size() > limit) out << "...";
  out << ", shape=" << shape_str(shape_) << ", dtype=" << dtype_name(dtype_) << ")";
  return out.str();
}

std::ostream& operator<<(std::ostream& out, const Tensor& t) { return out << t.to_string(); }

}  // namespace gradflow
