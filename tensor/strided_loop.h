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

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "tensor/parallel.h"
#include "tensor/shape.h"

namespace gradflow {

template <size_t N>
using Offsets = std::array<int64_t, N>;

// The loop for_each_run walks after merging axes: sizes and per-operand
// strides, innermost last. Empty when the shape has no elements.
template <size_t N>
struct MergedLoop {
  Shape dims;
  std::array<Strides, N> strides;
  int64_t numel = 0;
};

template <size_t N>
MergedLoop<N> merge_axes(const Shape& shape, const std::array<Strides, N>& strides) {
  // Drop size-1 axes, join i-1 and i when every operand steps over axis i-1
  // exactly as far as a whole run of axis i.
  MergedLoop<N> loop;
  for (int64_t s : shape)
    if (s == 0) return loop;
  loop.numel = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1) continue;
    loop.numel *= shape[i];
    bool merge = !loop.dims.empty();
    for (size_t k = 0; k < N && merge; ++k)
      merge = loop.strides[k].back() == strides[k][i] * shape[i];
    if (merge) {
      loop.dims.back() *= shape[i];
      for (size_t k = 0; k < N; ++k) loop.strides[k].back() = strides[k][i];
    } else {
      loop.dims.push_back(shape[i]);
      for (size_t k = 0; k < N; ++k) loop.strides[k].push_back(strides[k][i]);
    }
  }
  return loop;
}

// Runs over the elements [begin, end) of the loop, in row-major order: a run
// may start or stop inside a row, so `inner` must treat elements independently.
template <size_t N, class Inner>
void for_each_run_in(const MergedLoop<N>& loop, int64_t begin, int64_t end, Inner&& inner) {
  if (begin >= end) return;
  Offsets<N> offsets{};
  if (loop.dims.empty()) {  // a single element
    inner(int64_t{1}, offsets, Offsets<N>{});
    return;
  }
  const size_t last = loop.dims.size() - 1;
  Offsets<N> steps;
  for (size_t k = 0; k < N; ++k) steps[k] = loop.strides[k][last];
  // The odometer's position at `begin`, and the offsets there.
  std::vector<int64_t> counter(loop.dims.size());
  for (size_t axis = loop.dims.size(), rest = static_cast<size_t>(begin); axis-- > 0;) {
    counter[axis] = static_cast<int64_t>(rest % static_cast<size_t>(loop.dims[axis]));
    rest /= static_cast<size_t>(loop.dims[axis]);
    for (size_t k = 0; k < N; ++k) offsets[k] += counter[axis] * loop.strides[k][axis];
  }
  for (int64_t done = begin; done < end;) {
    const int64_t n = std::min(loop.dims[last] - counter[last], end - done);
    inner(n, offsets, steps);
    done += n;
    if (done >= end) return;
    // Back to the start of the row, then move the outer axes by one.
    for (size_t k = 0; k < N; ++k) offsets[k] -= counter[last] * steps[k];
    counter[last] = 0;
    for (size_t axis = last; axis-- > 0;) {
      if (++counter[axis] < loop.dims[axis]) {
        for (size_t k = 0; k < N; ++k) offsets[k] += loop.strides[k][axis];
        break;
      }
      for (size_t k = 0; k < N; ++k) offsets[k] -= loop.strides[k][axis] * (loop.dims[axis] - 1);
      counter[axis] = 0;
    }
  }
}

template <size_t N, class Inner>
void for_each_run(const Shape& shape, const std::array<Strides, N>& strides, Inner&& inner) {
  const MergedLoop<N> loop = merge_axes<N>(shape, strides);
  for_each_run_in<N>(loop, 0, loop.numel, inner);
}

// Elements per thread below which elementwise work is not split: about 10
// microseconds of work, against a few for waking the pool.
inline constexpr int64_t kElementwiseGrain = 16384;

// for_each_run with the elements split over the thread pool (parallel.h). For
// elementwise kernels only: every element's output must be its own.
template <size_t N, class Inner>
void parallel_for_each_run(const Shape& shape, const std::array<Strides, N>& strides,
                           Inner&& inner) {
  const MergedLoop<N> loop = merge_axes<N>(shape, strides);
  parallel_for(loop.numel, kElementwiseGrain,
               [&](int64_t begin, int64_t end) { for_each_run_in<N>(loop, begin, end, inner); });
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
