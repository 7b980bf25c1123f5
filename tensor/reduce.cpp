#include "tensor/reduce.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "tensor/creation.h"
#include "tensor/elementwise.h"
#include "tensor/kernels/fast_math.h"
#include "tensor/parallel.h"
#include "tensor/strided_loop.h"

namespace gradflow {

namespace {

// The shape with reduced axes set to 1 (keepdim), checking the axes.
Shape kept_shape(const Tensor& a, const Axes& axes, const char* op) {
  Shape shape = a.shape();
  if (axes.empty()) return Shape(shape.size(), 1);
  std::vector<bool> seen(shape.size(), false);
  for (int64_t axis : axes) {
    int i = normalize_axis(axis, a.ndim(), op);
    if (seen[i]) fail(op, ": axis ", axis, " appears twice");
    seen[i] = true;
    shape[i] = 1;
  }
  return shape;
}

Shape drop_ones(const Shape& kept, const Tensor& a, const Axes& axes) {
  if (axes.empty()) return {};
  Shape out;
  std::vector<bool> reduced(kept.size(), false);
  for (int64_t axis : axes) reduced[axis < 0 ? axis + a.ndim() : axis] = true;
  for (size_t i = 0; i < kept.size(); ++i)
    if (!reduced[i]) out.push_back(kept[i]);
  return out;
}

// Adds the column sums of the (M, N) rows x (row stride ld, columns
// contiguous) into o[0, N). Each column is summed down the rows from 0, as
// accumulate_sum's general loop sums it, so the bits are the same; but a
// block of 32 columns' sums stays in registers for all M rows, where the
// general loop read and wrote the row of sums once per row, through a call
// per row. A bias gradient over the study's ~1000 rows of 32 took 6.7 us.
template <class T>
void add_column_sums(const T* x, int64_t m, int64_t n, int64_t ld, double* o) {
  constexpr int64_t kBlock = 32;
  for (int64_t j = 0; j < n; j += kBlock) {
    const int64_t w = std::min(kBlock, n - j);
    double acc[kBlock] = {};
    if (w == kBlock) {
      for (int64_t r = 0; r < m; ++r)
        for (int64_t k = 0; k < kBlock; ++k) acc[k] += x[r * ld + j + k];
    } else {
      for (int64_t r = 0; r < m; ++r)
        for (int64_t k = 0; k < w; ++k) acc[k] += x[r * ld + j + k];
    }
    for (int64_t k = 0; k < w; ++k) o[j + k] += acc[k];
  }
}

// Adds the sums of `a` over the axes where `total` has size 1 into total
// (float64, of a's shape with those axes set to 1).
void accumulate_sum(const Tensor& a, Tensor& total) {
  Strides so = broadcast_strides(total.shape(), total.strides(), a.shape());
  visit_float(a.dtype(), "sum", [&](auto zero) {
    using T = decltype(zero);
    double* o = total.data<double>();
    const T* x = a.data<T>();
    // Shape: a (M, N) with contiguous rows summed over M, as a bias gradient is.
    if (a.ndim() == 2 && so[0] == 0 && so[1] == 1 && a.strides()[1] == 1) {
      add_column_sums(x, a.shape()[0], a.shape()[1], a.strides()[0], o);
      return;
    }
    for_each_run<2>(a.shape(), {so, a.strides()}, [&](int64_t n, Offsets<2> off, Offsets<2> st) {
      double* po = o + off[0];
      const T* px = x + off[1];
      if (st[0] == 0) {  // a run along a reduced axis: one accumulator
        double acc = 0;
        for (int64_t i = 0; i < n; ++i) acc += px[i * st[1]];
        *po += acc;
      } else if (st[0] == 1 && st[1] == 1) {
        for (int64_t i = 0; i < n; ++i) po[i] += px[i];
      } else {
        for (int64_t i = 0; i < n; ++i) po[i * st[0]] += px[i * st[1]];
      }
    });
  });
}

// The sum of `a` over the axes where `kept` has size 1 (kept broadcasts to
// a's shape), as a tensor of shape `kept` in a's dtype. Partial sums live in
// float64 whatever the input: adding a million float32 rows one by one into
// a float32 total loses about 1% (a bias gradient over B*T rows does this).
// Threads split the longest kept axis, so each output has one owner and is
// summed in the same order at any thread count.
// Shape: a is (..., N, ...), the result (..., 1, ...).
Tensor reduce_sum(const Tensor& a, const Shape& kept) {
  Tensor total = zeros(kept, DType::Float64);
  int split = -1;
  for (size_t i = 0; i < kept.size(); ++i)
    if (kept[i] > 1 && (split < 0 || kept[i] > kept[static_cast<size_t>(split)]))
      split = static_cast<int>(i);
  if (split < 0) {
    run_for_this_cpu([&] { accumulate_sum(a, total); });  // cpu_dispatch.h
  } else {
    // kept may have fewer axes than a (sum_to): they line up from the right.
    const int lead = static_cast<int>(a.ndim()) - static_cast<int>(kept.size());
    const int64_t per_index = a.numel() / kept[static_cast<size_t>(split)];
    parallel_for(kept[static_cast<size_t>(split)],
                 std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, per_index)),
                 [&](int64_t begin, int64_t end) {
                   Tensor part = total.narrow(split, begin, end - begin);
                   accumulate_sum(a.narrow(split + lead, begin, end - begin), part);
                 });
  }
  return total.to(a.dtype());
}

}  // namespace

Tensor sum(const Tensor& a, const Axes& axes, bool keepdim) {
  Shape kept = kept_shape(a, axes, "sum");
  Tensor out = reduce_sum(a, kept);
  return keepdim ? out : out.view(drop_ones(kept, a, axes));
}

Tensor mean(const Tensor& a, const Axes& axes, bool keepdim) {
  Tensor s = sum(a, axes, keepdim);
  int64_t count = s.numel() == 0 ? 0 : a.numel() / s.numel();
  return div(s, static_cast<double>(count));
}

Tensor var(const Tensor& a, const Axes& axes, bool keepdim, int64_t correction) {
  Tensor m = mean(a, axes, true);
  Tensor d = sub(a, m);
  Tensor ss = sum(mul(d, d), axes, keepdim);
  int64_t count = ss.numel() == 0 ? 0 : a.numel() / ss.numel();
  return div(ss, static_cast<double>(std::max<int64_t>(count - correction, 0)));
}

Tensor sum_to(const Tensor& a, const Shape& shape) {
  if (a.shape() == shape) return a;
  if (shape.size() > a.shape().size() || broadcast_shapes(shape, a.shape(), "sum_to") != a.shape())
    fail("sum_to: shape ", shape_str(a.shape()), " cannot be reduced to ", shape_str(shape));
  return reduce_sum(a, shape);
}

MaxResult max(const Tensor& a, int64_t axis, bool keepdim) {
  int ax = normalize_axis(axis, a.ndim(), "max");
  if (a.shape()[ax] == 0) fail("max: axis ", ax, " of shape ", shape_str(a.shape()), " is empty");
  Shape kept = a.shape();
  kept[ax] = 1;
  MaxResult r{Tensor::empty(kept, a.dtype()), Tensor::empty(kept, DType::Int64)};
  Strides sv = broadcast_strides(kept, r.values.strides(), a.shape());
  Strides si = broadcast_strides(kept, r.indices.strides(), a.shape());
  visit_float(a.dtype(), "max", [&](auto zero) {
    using T = decltype(zero);
    const T* x = a.data<T>();
    T* v = r.values.data<T>();
    int64_t* idx = r.indices.data<int64_t>();
    const int64_t n = a.shape()[ax], step = a.strides()[ax];
    for_each_row<3>(a.shape(), {a.strides(), sv, si}, ax, [&](Offsets<3> off) {
      const T* row = x + off[0];
      T best = row[0];
      int64_t arg = 0;
      for (int64_t j = 1; j < n; ++j) {
        T value = row[j * step];
        if (value > best || (std::isnan(value) && !std::isnan(best))) {
          best = value;
          arg = j;
        }
      }
      v[off[1]] = best;
      idx[off[2]] = arg;
    });
  });
  if (!keepdim) {
    r.values = r.values.squeeze(ax);
    r.indices = r.indices.squeeze(ax);
  }
  return r;
}

Tensor max(const Tensor& a) {
  if (a.numel() == 0) fail("max: the tensor is empty");
  return max(a.reshape({-1}), 0).values;
}

namespace {

// Float rows use the vectorisable exp of fast_math.h, double rows libm's.
inline float exp_of(float v) { return fast::exp(v); }
inline double exp_of(double v) { return std::exp(v); }

// One row of softmax (or log_softmax): x and y hold n elements, sx and sy
// apart.
template <class T>
void softmax_row(const T* x, int64_t sx, T* y, int64_t sy, int64_t n, bool log) {
  const T neg_inf = -std::numeric_limits<T>::infinity();
  T m = neg_inf;
  for (int64_t j = 0; j < n; ++j) m = std::max(m, x[j * sx]);
  if (m == neg_inf) {  // every entry masked: no distribution to speak of
    for (int64_t j = 0; j < n; ++j) y[j * sy] = log ? neg_inf : T{0};
    return;
  }
  // Why subtract the row's max m: exp overflows float32 past about 88
  // (e^88.7 is its largest value), and a logit of 100 is easy to reach. Yet
  // softmax(x - c) = softmax(x) for any c, since e^-c cancels between each
  // term and the sum, so c = m changes nothing mathematically and makes
  // every exponent <= 0: each term is in (0, 1], the sum in [1, n]. Overflow
  // is therefore not why attention divides by sqrt(d_k); saturation is
  // (docs/lessons/06_softmax_saturation.md).
  //
  // The exponentials go to y first, in a loop of their own that vectorises;
  // log_softmax overwrites them below. A masked (-inf) entry gets exactly 0:
  // the float exp stops at e^-87 (fast_math.h), and its value must add nothing.
  for (int64_t j = 0; j < n; ++j) y[j * sy] = x[j * sx] == neg_inf ? T{0} : exp_of(x[j * sx] - m);
  double total = 0;
  for (int64_t j = 0; j < n; ++j) total += y[j * sy];
  if (log) {
    // (x - m) - log(total), in that order: m + log(total) would round
    // away log(total) when m is large (log_softmax([1e8, 1e8])).
    T log_total = static_cast<T>(std::log(total));
    for (int64_t j = 0; j < n; ++j) y[j * sy] = (x[j * sx] - m) - log_total;
  } else {
    T inv = static_cast<T>(1.0 / total);
    for (int64_t j = 0; j < n; ++j) y[j * sy] *= inv;
  }
}

// Shape: x and out are (..., N along axis, ...). `log` picks log_softmax.
Tensor softmax_impl(const Tensor& a, int64_t axis, bool log, const char* op) {
  int ax = normalize_axis(axis, a.ndim(), op);
  Tensor out = Tensor::empty(a.shape(), a.dtype());
  visit_float(a.dtype(), op, [&](auto zero) {
    using T = decltype(zero);
    const T* x = a.data<T>();
    T* y = out.data<T>();
    const int64_t n = a.shape()[ax], sx = a.strides()[ax], sy = out.strides()[ax];
    if (ax == a.ndim() - 1 && a.is_contiguous() && n > 0) {  // rows back to back: split them
      parallel_for(a.numel() / n, std::max<int64_t>(1, kElementwiseGrain / n),
                   [&](int64_t begin, int64_t end) {
                     for (int64_t r = begin; r < end; ++r)
                       softmax_row(x + r * n, 1, y + r * n, 1, n, log);
                   });
      return;
    }
    for_each_row<2>(a.shape(), {a.strides(), out.strides()}, ax,
                    [&](Offsets<2> off) { softmax_row(x + off[0], sx, y + off[1], sy, n, log); });
  });
  return out;
}

}  // namespace

Tensor softmax(const Tensor& a, int64_t axis) { return softmax_impl(a, axis, false, "softmax"); }
Tensor log_softmax(const Tensor& a, int64_t axis) {
  return softmax_impl(a, axis, true, "log_softmax");
}

}  // namespace gradflow
