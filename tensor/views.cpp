// View operations: each returns a tensor over the same storage with a new
// (shape, strides, offset). Nothing here copies data, except reshape when the
// layout leaves no other way.
#include <algorithm>
#include <optional>

#include "tensor/tensor.h"

namespace gradflow {

namespace {

// Resolves one -1 entry from the element count; checks the count matches.
Shape infer_shape(Shape shape, int64_t numel, const char* op, const Shape& from) {
  int64_t known = 1, unknown = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (unknown >= 0) fail(op, ": only one size may be -1, got ", shape_str(shape));
      unknown = static_cast<int64_t>(i);
    } else if (shape[i] < 0) {
      fail(op, ": invalid size ", shape[i], " in ", shape_str(shape));
    } else if (__builtin_mul_overflow(known, shape[i], &known)) {
      fail(op, ": shape ", shape_str(shape), " has more elements than an int64 can count");
    }
  }
  if (unknown >= 0 && known != 0 && numel % known == 0) shape[unknown] = numel / known;
  if ((unknown >= 0 && (known == 0 || numel % known != 0)) || numel_of(shape) != numel)
    fail(op, ": cannot view shape ", shape_str(from), " (", numel, " elements) as ",
         shape_str(shape));
  return shape;
}

// Strides that read (old_shape, old_strides) as new_shape without copying, if
// any exist. Axes of the old tensor that are laid out back to back form
// chunks; each chunk may be split or merged freely (as in PyTorch's
// computeStride), but no new axis may straddle two chunks.
std::optional<Strides> view_strides(const Shape& old_shape, const Strides& old_strides,
                                    const Shape& new_shape) {
  Strides out(new_shape.size());
  int64_t view_d = static_cast<int64_t>(new_shape.size()) - 1;
  int64_t chunk_stride = old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t d = static_cast<int64_t>(old_shape.size()) - 1; d >= 0; --d) {
    tensor_numel *= old_shape[d];
    bool chunk_ends =
        d == 0 || (old_shape[d - 1] != 1 && old_strides[d - 1] != tensor_numel * chunk_stride);
    if (!chunk_ends) continue;
    while (view_d >= 0 && (view_numel < tensor_numel || new_shape[view_d] == 1)) {
      out[view_d] = view_numel * chunk_stride;
      view_numel *= new_shape[view_d];
      --view_d;
    }
    if (view_numel != tensor_numel) return std::nullopt;
    if (d > 0) {
      chunk_stride = old_strides[d - 1];
      tensor_numel = view_numel = 1;
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

}  // namespace

Tensor Tensor::view(const Shape& shape) const {
  Shape target = infer_shape(shape, numel(), "view", shape_);
  if (is_contiguous() || numel() == 0)
    return make_view(*this, target, contiguous_strides(target), offset_);
  std::optional<Strides> strides = view_strides(shape_, strides_, target);
  if (!strides)
    fail("view: the layout of shape ", shape_str(shape_), " cannot be viewed as ",
         shape_str(target), " without a copy (use reshape)");
  return make_view(*this, target, *strides, offset_);
}

Tensor Tensor::reshape(const Shape& shape) const {
  Shape target = infer_shape(shape, numel(), "reshape", shape_);
  if (is_contiguous() || numel() == 0)
    return make_view(*this, target, contiguous_strides(target), offset_);
  if (std::optional<Strides> strides = view_strides(shape_, strides_, target))
    return make_view(*this, target, *strides, offset_);
  return clone().view(target);
}

Tensor Tensor::transpose(int64_t a, int64_t b) const {
  int ia = normalize_axis(a, ndim(), "transpose"), ib = normalize_axis(b, ndim(), "transpose");
  Shape shape = shape_;
  Strides strides = strides_;
  std::swap(shape[ia], shape[ib]);
  std::swap(strides[ia], strides[ib]);
  return make_view(*this, shape, strides, offset_);
}

Tensor Tensor::permute(const std::vector<int64_t>& order) const {
  if (static_cast<int64_t>(order.size()) != ndim())
    fail("permute: got ", order.size(), " axes for a tensor of shape ", shape_str(shape_));
  Shape shape(order.size());
  Strides strides(order.size());
  std::vector<bool> seen(order.size(), false);
  for (size_t i = 0; i < order.size(); ++i) {
    int axis = normalize_axis(order[i], ndim(), "permute");
    if (seen[axis]) fail("permute: axis ", order[i], " appears twice");
    seen[axis] = true;
    shape[i] = shape_[axis];
    strides[i] = strides_[axis];
  }
  return make_view(*this, shape, strides, offset_);
}

Tensor Tensor::narrow(int64_t axis, int64_t start, int64_t length) const {
  int a = normalize_axis(axis, ndim(), "narrow");
  if (start < 0) start += shape_[a];
  if (start < 0 || length < 0 || start + length > shape_[a])
    fail("narrow: range [", start, ", ", start + length, ") is out of bounds for axis ", a,
         " of size ", shape_[a]);
  Shape shape = shape_;
  shape[a] = length;
  return make_view(*this, shape, strides_, offset_ + start * strides_[a]);
}

Tensor Tensor::slice(int64_t axis, int64_t start, int64_t end, int64_t step) const {
  int a = normalize_axis(axis, ndim(), "slice");
  if (step <= 0) fail("slice: step must be positive, got ", step);
  int64_t n = shape_[a];
  // Python semantics: negative bounds count from the end, then clamp.
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  Shape shape = shape_;
  Strides strides = strides_;
  shape[a] = (end - start + step - 1) / step;
  strides[a] *= step;
  return make_view(*this, shape, strides, offset_ + start * strides_[a]);
}

Tensor Tensor::select(int64_t axis, int64_t index) const {
  int a = normalize_axis(axis, ndim(), "select");
  if (index < -shape_[a] || index >= shape_[a])
    fail("select: index ", index, " is out of range for axis ", a, " of size ", shape_[a]);
  if (index < 0) index += shape_[a];
  Shape shape = shape_;
  Strides strides = strides_;
  shape.erase(shape.begin() + a);
  strides.erase(strides.begin() + a);
  return make_view(*this, shape, strides, offset_ + index * strides_[a]);
}

Tensor Tensor::squeeze(int64_t axis) const {
  int a = normalize_axis(axis, ndim(), "squeeze");
  if (shape_[a] != 1)
    fail("squeeze: axis ", a, " has size ", shape_[a], ", not 1, in shape ", shape_str(shape_));
  return select(a, 0);
}

Tensor Tensor::unsqueeze(int64_t axis) const {
  int a = normalize_axis(axis, ndim() + 1, "unsqueeze");
  Shape shape = shape_;
  Strides strides = strides_;
  int64_t stride = a < ndim() ? strides_[a] * shape_[a] : 1;
  shape.insert(shape.begin() + a, 1);
  strides.insert(strides.begin() + a, stride);
  return make_view(*this, shape, strides, offset_);
}

Tensor Tensor::expand(const Shape& shape) const {
  if (shape.size() < shape_.size() || broadcast_shapes(shape_, shape, "expand") != shape)
    fail("expand: shape ", shape_str(shape_), " cannot be expanded to ", shape_str(shape));
  numel_of(shape);  // throws when the element count overflows
  return make_view(*this, shape, broadcast_strides(shape_, strides_, shape), offset_);
}

}  // namespace gradflow
