// The kernels of tensor/kernels/masked_softmax.h: each row of S scores is scaled,
// masked, exponentiated and normalised while it sits in cache.
#include "tensor/kernels/masked_softmax.h"

#include <algorithm>

#include "tensor/kernels/lanes.h"
#include "tensor/parallel.h"

namespace gradflow {

namespace {

// Rows per parallel chunk: about 16K elements, below which handing work to
// the pool costs more than it saves.
int64_t row_grain(int64_t s) { return std::max<int64_t>(1, 16384 / std::max<int64_t>(s, 1)); }

int64_t rows_of(const Shape& shape) { return numel_of(Shape(shape.begin(), shape.end() - 1)); }

// Where row r of a (..., S) tensor starts in a tensor read through `strides`
// (a broadcast mask: 0 along the axes it repeats over).
int64_t row_offset(int64_t r, const Shape& shape, const Strides& strides) {
  return leading_offset(r, shape, strides, shape.size() - 1);
}

}  // namespace

Tensor scaled_masked_softmax(const Tensor& input, double scale, const Tensor& mask) {
  const char* op = "scaled_masked_softmax";
  if (!input.defined() || input.ndim() == 0)
    fail(op, ": expected scores (..., S), got ",
         input.defined() ? shape_str(input.shape()) : "an undefined tensor");
  const Tensor scores = input.contiguous();
  const DType dtype = scores.dtype();
  const int64_t s = scores.shape().back(), rows = rows_of(scores.shape());
  // The mask in the scores' dtype, each row of S contiguous, and where each
  // score row's mask row is: a (T, S) causal or (B, 1, 1, S) padding mask is
  // read in place, never expanded to (B, H, T, S).
  Tensor m;
  Strides mask_strides;
  if (mask.defined()) {
    if (mask.ndim() > scores.ndim() ||
        broadcast_shapes(mask.shape(), scores.shape(), op) != scores.shape())
      fail(op, ": mask of shape ", shape_str(mask.shape()), " does not broadcast to scores ",
           shape_str(scores.shape()));
    m = mask.to(dtype);
    if (m.ndim() == 0 || m.shape().back() != s || m.strides().back() != 1) {
      Shape rowwise = m.ndim() == 0 ? Shape{s} : m.shape();
      rowwise.back() = s;
      m = m.expand(rowwise).contiguous();  // repeated or strided along S: copy
    }
    mask_strides = broadcast_strides(m.shape(), m.strides(), scores.shape());
  }
  Tensor out = Tensor::empty(scores.shape(), dtype);
  visit_float(dtype, op, [&](auto zero) {
    using T = decltype(zero);
    const T* ps = scores.data<T>();
    const T* pm = m.defined() ? m.data<T>() : nullptr;
    T* py = out.data<T>();
    // Shape: scores and y are (R, S); the mask's rows are (S), shared by rows.
    parallel_for(rows, row_grain(s), [&](int64_t begin, int64_t end) {
      // A local, not a capture: g++ reloads a captured value after every
      // store through y (it might alias) and then will not vectorise. The
      // scale is rounded to T first, as the composed scores * scale does.
      const T sc = static_cast<T>(scale);
      for (int64_t r = begin; r < end; ++r) {
        T top, inv;
        masked_softmax_row(ps + r * s,
                           pm ? pm + row_offset(r, scores.shape(), mask_strides) : nullptr,
                           py + r * s, s, sc, top, inv, true);
      }
    });
  });
  return out;
}

Tensor scaled_masked_softmax_backward(const Tensor& grad, const Tensor& output, double scale) {
  if (!grad.defined() || !output.defined() || grad.shape() != output.shape() ||
      grad.dtype() != output.dtype() || output.ndim() == 0)
    fail(
        "scaled_masked_softmax_backward: expected a gradient of the output's shape and dtype, got ",
        grad.defined() ? shape_str(grad.shape()) : "undefined", " for ",
        output.defined() ? shape_str(output.shape()) : "undefined");
  const Tensor dy = grad.contiguous(), y = output.contiguous();
  const int64_t s = y.shape().back(), rows = rows_of(y.shape());
  Tensor out = Tensor::empty(y.shape(), y.dtype());
  visit_float(y.dtype(), "scaled_masked_softmax_backward", [&](auto zero) {
    using T = decltype(zero);
    const T *pdy = dy.data<T>(), *py = y.data<T>();
    T* pdx = out.data<T>();
    // Shape: dy, y and dscores are (R, S).
    parallel_for(rows, row_grain(s), [&](int64_t begin, int64_t end) {
      const T sc = static_cast<T>(scale);  // a local, as in the forward
      for (int64_t r = begin; r < end; ++r) {
        const T *gr = pdy + r * s, *yr = py + r * s;
        T* dxr = pdx + r * s;
        // The Jacobian diag(y) - y y^T applied to dy without forming it.
        const T dot = static_cast<T>(
            lane_sum(s, [&](int64_t j) { return static_cast<double>(gr[j] * yr[j]); }));
        for (int64_t j = 0; j < s; ++j) dxr[j] = yr[j] * (gr[j] - dot) * sc;
      }
    });
  });
  return out;
}

}  // namespace gradflow
