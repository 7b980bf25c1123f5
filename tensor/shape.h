// Shapes and strides, and the small rules every op shares: normalising a
// negative axis, broadcasting two shapes, printing "(2, 3)" in errors.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gradflow {

using Shape = std::vector<int64_t>;    // sizes, outermost first
using Strides = std::vector<int64_t>;  // in elements, not bytes
using Axes = std::vector<int64_t>;     // axes to reduce over; empty means every axis

int64_t numel_of(const Shape& shape);
Strides contiguous_strides(const Shape& shape);

// "(2, 3)"; a scalar prints as "()".
std::string shape_str(const Shape& shape);

// Maps axis in [-ndim, ndim) to [0, ndim); throws naming `op` otherwise.
int normalize_axis(int64_t axis, int64_t ndim, std::string_view op);

// NumPy broadcasting: align from the right, sizes must match or be 1.
Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view op);

// Strides that read a tensor of (shape, strides) as if it had shape `to`
// (which it must broadcast to): stride 0 along repeated axes.
Strides broadcast_strides(const Shape& shape, const Strides& strides, const Shape& to);

// The element offset, through `strides`, of the index-th position (row-major)
// of the first `axes` axes of `shape`: where row or matrix `index` of a
// tensor starts.
int64_t leading_offset(int64_t index, const Shape& shape, const Strides& strides, size_t axes);

}  // namespace gradflow
