// The loops every kernel is built on.
//
// for_each_run walks N operands of one shape, each with its own strides (0
// where it is broadcast), and hands the kernel one run at a time along the
// innermost axis: inner(n, offsets, steps), with offsets[k] the element
// offset of operand k at the start of the run and steps[k] its stride along
// the run. Adjacent axes that are laid out back to back are merged first, so a
// contiguous tensor is a single run and the kernel's "all steps are 1" branch
// is a plain loop the compiler vectorises.
#pragma once

#include <array>
#include <cstdint>

#include "tensor/shape.h"

namespace gradflow {

template <size_t N>
using Offsets = std::array<int64_t, N>;

template <size_t N, class Inner>
void for_each_run(const Shape& shape, const std::array<Strides, N>& strides, Inner&& inner) {
  // Merge axes: drop size-1 axes, join i-1 and i when every operand steps
  // over axis i-1 exactly as far as a whole run of axis i.
  Shape dims;
  std::array<Strides, N> st;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) return;
    if (shape[i] == 1) continue;
    bool merge = !dims.empty();
    for (size_t k = 0; k < N && merge; ++k) merge = st[k].back() == strides[k][i] * shape[i];
    if (merge) {
      dims.back() *= shape[i];
      for (size_t k = 0; k < N; ++k) st[k].back() = strides[k][i];
    } else {
      dims.push_back(shape[i]);
      for (size_t k = 0; k < N; ++k) st[k].push_back(strides[k][i]);
    }
  }
  Offsets<N> offsets{};
  if (dims.empty()) {  // a single element
    inner(int64_t{1}, offsets, Offsets<N>{});
    return;
  }
  const size_t last = dims.size() - 1;
  Offsets<N> steps;
  for (size_t k = 0; k < N; ++k) steps[k] = st[k][last];
  // Odometer over the outer axes, moving the offsets incrementally.
  std::vector<int64_t> counter(last, 0);
  while (true) {
    inner(dims[last], offsets, steps);
    size_t axis = last;
    while (axis > 0) {
      --axis;
      if (++counter[axis] < dims[axis]) {
        for (size_t k = 0; k < N; ++k) offsets[k] += st[k][axis];
        break;
      }
      for (size_t k = 0; k < N; ++k) offsets[k] -= st[k][axis] * (dims[axis] - 1);
      counter[axis] = 0;
      if (axis == 0) return;
    }
    if (last == 0) return;
  }
}

// Calls row(offsets) once per position of `shape` with `axis` left out, for
// kernels that work along one axis (softmax, max, cumulative work): the row
// itself runs from offsets[k] in steps of strides[k][axis].
template <size_t N, class Row>
void for_each_row(const Shape& shape, const std::array<Strides, N>& strides, int axis, Row&& row) {
  Shape outer = shape;
  outer[axis] = 1;
  for (int64_t s : shape)
    if (s == 0) return;
  for_each_run<N>(outer, strides, [&](int64_t n, Offsets<N> offsets, Offsets<N> steps) {
    for (int64_t i = 0; i < n; ++i) {
      row(offsets);
      for (size_t k = 0; k < N; ++k) offsets[k] += steps[k];
    }
  });
}

}  // namespace gradflow
