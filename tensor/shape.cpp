#include "tensor/shape.h"

#include "tensor/error.h"

namespace gradflow {

int64_t numel_of(const Shape& shape) {
  int64_t n = 1;
  bool overflow = false;
  for (int64_t s : shape) {
    if (s == 0) return 0;  // empty, however large the other sizes
    overflow = __builtin_mul_overflow(n, s, &n) || overflow;
  }
  if (overflow) fail("shape ", shape_str(shape), " has more elements than an int64 can count");
  return n;
}

Strides contiguous_strides(const Shape& shape) {
  Strides strides(shape.size());
  int64_t stride = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= shape[i];
  }
  return strides;
}

std::string shape_str(const Shape& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + ")";
}

int normalize_axis(int64_t axis, int64_t ndim, std::string_view op) {
  if (axis < -ndim || axis >= ndim)
    fail(op, ": axis ", axis, " is out of range for a tensor of ", ndim, " dimensions");
  return static_cast<int>(axis < 0 ? axis + ndim : axis);
}

Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view op) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    if (da != db && da != 1 && db != 1)
      fail(op, ": shapes cannot be broadcast: ", shape_str(a), " and ", shape_str(b));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Strides broadcast_strides(const Shape& shape, const Strides& strides, const Shape& to) {
  Strides out(to.size(), 0);
  size_t lead = to.size() - shape.size();
  for (size_t i = 0; i < shape.size(); ++i)
    out[lead + i] = (shape[i] == 1 && to[lead + i] != 1) ? 0 : strides[i];
  return out;
}

int64_t leading_offset(int64_t index, const Shape& shape, const Strides& strides, size_t axes) {
  int64_t offset = 0;
  for (size_t axis = axes; axis-- > 0;) {
    offset += (index % shape[axis]) * strides[axis];
    index /= shape[axis];
  }
  return offset;
}

}  // namespace gradflow
