#include "tensor/index.h"

#include <cstring>

#include "tensor/elementwise.h"
#include "tensor/strided_loop.h"

namespace gradflow {

namespace {

// Copies the indices out as a contiguous vector after checking each one.
std::vector<int64_t> checked_indices(const Tensor& index, int64_t limit, int axis, const char* op) {
  if (!index.defined() || index.dtype() != DType::Int64)
    fail(op, ": indices must be an int64 tensor");
  if (index.ndim() != 1) fail(op, ": indices must be 1-D, got shape ", shape_str(index.shape()));
  Tensor c = index.contiguous();
  std::vector<int64_t> out(c.data<int64_t>(), c.data<int64_t>() + c.numel());
  for (int64_t i : out)
    if (i < 0 || i >= limit)
      fail(op, ": index ", i, " is out of range for axis ", axis, " of size ", limit);
  return out;
}

}  // namespace

Tensor index_select(const Tensor& x, int64_t axis, const Tensor& index) {
  int ax = normalize_axis(axis, x.ndim(), "index_select");
  std::vector<int64_t> idx = checked_indices(index, x.shape()[ax], ax, "index_select");
  Shape shape = x.shape();
  shape[ax] = static_cast<int64_t>(idx.size());
  Tensor out = Tensor::empty(shape, x.dtype());
  if (ax == 0 && x.is_contiguous()) {  // embedding lookup: whole rows
    size_t row_bytes = x.numel() / std::max<int64_t>(1, x.shape()[0]) * dtype_size(x.dtype());
    const char* src =
        static_cast<const char*>(x.storage()->data()) + x.offset() * dtype_size(x.dtype());
    char* dst = static_cast<char*>(out.storage()->data());
    for (size_t i = 0; i < idx.size(); ++i)
      std::memcpy(dst + i * row_bytes, src + idx[i] * row_bytes, row_bytes);
    return out;
  }
  for (size_t i = 0; i < idx.size(); ++i) out.select(ax, i).copy_(x.select(ax, idx[i]));
  return out;
}

void index_add_(Tensor& dst, int64_t axis, const Tensor& index, const Tensor& src) {
  int ax = normalize_axis(axis, dst.ndim(), "index_add_");
  std::vector<int64_t> idx = checked_indices(index, dst.shape()[ax], ax, "index_add_");
  Shape expected = dst.shape();
  expected[ax] = static_cast<int64_t>(idx.size());
  if (src.shape() != expected)
    fail("index_add_: source shape ", shape_str(src.shape()), " should be ", shape_str(expected));
  dst.storage()->bump_version();
  if (ax == 0 && dst.is_contiguous() && src.is_contiguous() && dst.dtype() == src.dtype() &&
      dst.dtype() != DType::Int64) {
    // The embedding's backward: whole rows of src added into rows of dst, in
    // index order (so a repeated row sums in the same order as below). A
    // view and an add_ per row cost more than the row's arithmetic.
    // Shape: dst (N, ...), src (J, ...), rows of `row` elements.
    const int64_t row = dst.numel() / std::max<int64_t>(1, dst.shape()[0]);
    visit_float(dst.dtype(), "index_add_", [&](auto zero) {
      using T = decltype(zero);
      T* d = dst.data<T>();
      const T* s = src.data<T>();
      for (size_t i = 0; i < idx.size(); ++i) {
        T* to = d + idx[i] * row;
        const T* from = s + static_cast<int64_t>(i) * row;
        for (int64_t k = 0; k < row; ++k) to[k] += from[k];
      }
    });
    return;
  }
  for (size_t i = 0; i < idx.size(); ++i) {
    Tensor slot = dst.select(ax, idx[i]);
    add_(slot, src.select(ax, i));
  }
}

namespace {

void check_gather(const Tensor& x, int ax, const Tensor& index, const char* op) {
  if (!index.defined() || index.dtype() != DType::Int64)
    fail(op, ": indices must be an int64 tensor");
  if (index.ndim() != x.ndim())
    fail(op, ": index of shape ", shape_str(index.shape()), " must have the rank of ",
         shape_str(x.shape()));
  for (int64_t d = 0; d < x.ndim(); ++d)
    if (d != ax && index.shape()[d] > x.shape()[d])
      fail(op, ": index of shape ", shape_str(index.shape()), " is larger than ",
           shape_str(x.shape()), " on axis ", d);
}

// Calls body(x_offset, index_position_offset, j) for every index element,
// after checking the index value; shared by gather and scatter_add_.
// Shape: index (..., J along axis, ...); x (..., N along axis, ...).
template <class Body>
void walk_gather(const Tensor& x, int ax, const Tensor& index, const Strides& other, const char* op,
                 Body body) {
  const int64_t* ip = index.data<int64_t>();
  const int64_t n = x.shape()[ax], j_count = index.shape()[ax];
  const int64_t si = index.strides()[ax], sx = x.strides()[ax], so = other[ax];
  for_each_row<3>(index.shape(), {index.strides(), x.strides(), other}, ax, [&](Offsets<3> off) {
    for (int64_t j = 0; j < j_count; ++j) {
      int64_t i = ip[off[0] + j * si];
      if (i < 0 || i >= n)
        fail(op, ": index ", i, " is out of range for axis ", ax, " of size ", n);
      body(off[1] + i * sx, off[2] + j * so);
    }
  });
}

}  // namespace

Tensor gather(const Tensor& x, int64_t axis, const Tensor& index) {
  int ax = normalize_axis(axis, x.ndim(), "gather");
  check_gather(x, ax, index, "gather");
  Tensor out = Tensor::empty(index.shape(), x.dtype());
  visit_any(x.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* px = x.data<T>();
    T* po = out.data<T>();
    walk_gather(x, ax, index, out.strides(), "gather",
                [&](int64_t xo, int64_t oo) { po[oo] = px[xo]; });
  });
  return out;
}

void scatter_add_(Tensor& dst, int64_t axis, const Tensor& index, const Tensor& src) {
  int ax = normalize_axis(axis, dst.ndim(), "scatter_add_");
  check_gather(dst, ax, index, "scatter_add_");
  if (src.shape() != index.shape() || src.dtype() != dst.dtype())
    fail("scatter_add_: source ", shape_str(src.shape()), " must match the index shape ",
         shape_str(index.shape()), " and the destination dtype");
  dst.storage()->bump_version();
  visit_float(dst.dtype(), "scatter_add_", [&](auto zero) {
    using T = decltype(zero);
    T* pd = dst.data<T>();
    const T* ps = src.data<T>();
    walk_gather(dst, ax, index, src.strides(), "scatter_add_",
                [&](int64_t d, int64_t s) { pd[d] += ps[s]; });
  });
}

Tensor cat(const std::vector<Tensor>& parts, int64_t axis) {
  if (parts.empty()) fail("cat: no tensors given");
  const Tensor& first = parts[0];
  int ax = normalize_axis(axis, first.ndim(), "cat");
  Shape shape = first.shape();
  shape[ax] = 0;
  for (const Tensor& p : parts) {
    Shape expect = first.shape();
    expect[ax] = p.ndim() == first.ndim() ? p.shape()[ax] : -1;
    if (p.shape() != expect)
      fail("cat: shapes ", shape_str(first.shape()), " and ", shape_str(p.shape()),
           " differ outside axis ", ax);
    if (p.dtype() != first.dtype())
      fail("cat: dtypes differ: ", dtype_name(first.dtype()), " and ", dtype_name(p.dtype()));
    shape[ax] += p.shape()[ax];
  }
  Tensor out = Tensor::empty(shape, first.dtype());
  int64_t start = 0;
  for (const Tensor& p : parts) {
    out.narrow(ax, start, p.shape()[ax]).copy_(p);
    start += p.shape()[ax];
  }
  return out;
}

}  // namespace gradflow
