// The LayerNorm kernels of tensor/kernels/norm.h. A row of C values is read two or
// three times while it sits in cache and written once, where the composed
// LayerNorm made nine passes over the whole tensor and nine tensors.
#include "tensor/kernels/norm.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>

#include "tensor/creation.h"
#include "tensor/kernels/lanes.h"
#include "tensor/parallel.h"

namespace gradflow {

namespace {

// About 16K elements per parallel chunk: below that, handing work to the
// pool costs more than it saves.
constexpr int64_t kChunkElements = 16384;

// The backward's column sums (dweight, dbias) are cut into this many groups
// of consecutive rows. Each group sums its rows into a partial row of its
// own, and the partial rows are added in group order. The cut is fixed, not
// taken from the thread count, so the sums have the same bits at any count;
// 16 groups keep up to 16 threads busy for 2 * 16 * C doubles of partials.
constexpr int64_t kGroups = 16;

// The forward takes its rows in blocks of this many (see there).
constexpr int64_t kRowBlock = 16;

void check_param(const Tensor& p, const Tensor& x, const char* what) {
  if (!p.defined()) return;
  if (p.ndim() != 1 || p.shape()[0] != x.shape().back())
    fail("layer_norm: expected ", what, " (", x.shape().back(), ") for input ",
         shape_str(x.shape()), ", got ", shape_str(p.shape()));
  if (p.dtype() != x.dtype())
    fail("layer_norm: ", what, " is ", dtype_name(p.dtype()), " but the input is ",
         dtype_name(x.dtype()));
}

// The sum of term(i) over a row of C values, in T itself: float rows in 16
// lanes, one 512-bit vector, as the attention kernels sum theirs; double rows
// in kLanes. Widening each float to double had cost more than the rest of a
// short row's arithmetic (the study's rows are 32 long), for an error far
// below the float rounding of the mean and 1/std that the row keeps.
//
// A float row's 16 lanes are then added as a tree, a vector's upper half onto
// its lower, then in pairs, not one lane after another: the 15 dependent
// additions of the chain had taken longer than the row's vector work (rows of
// 32: forward 17.6 -> 13.6 us, backward 18.0 -> 15.5 us for 1152 rows). The
// order still depends only on C.
//
// The attention kernels' short rows keep lanes.h's chain: the tree measured no
// faster there (study-reverse 0.98x).
using Floats8 = float __attribute__((vector_size(32)));
using Floats4 = float __attribute__((vector_size(16)));
template <class T, class Term>
T row_sum(int64_t c, const Term& term) {
  if constexpr (sizeof(T) == sizeof(double)) {
    return lane_sum<T, kLanes>(c, term);
  } else {
    T part[16] = {};
    int64_t i = 0;
    for (; i + 16 <= c; i += 16)
      for (int k = 0; k < 16; ++k) part[k] += term(i + k);
    for (int k = 0; i < c; ++i, ++k) part[k] += term(i);
    Floats8 lo, hi;
    std::memcpy(&lo, part, sizeof lo);
    std::memcpy(&hi, part + 8, sizeof hi);
    lo += hi;
    Floats4 q, r;
    std::memcpy(&q, &lo, sizeof q);
    std::memcpy(&r, reinterpret_cast<const char*>(&lo) + sizeof q, sizeof r);
    q += r;
    return (q[0] + q[2]) + (q[1] + q[3]);
  }
}

// Rows of a (..., C) shape: every axis but the last.
int64_t rows_of(const Shape& shape) { return numel_of(Shape(shape.begin(), shape.end() - 1)); }

}  // namespace

LayerNormForward layer_norm_forward(const Tensor& input, const Tensor& weight, const Tensor& bias,
                                    double eps) {
  if (!input.defined() || input.ndim() == 0)
    fail("layer_norm: expected an input (..., C), got ",
         input.defined() ? shape_str(input.shape()) : "an undefined tensor");
  check_param(weight, input, "weight");
  check_param(bias, input, "bias");
  const Tensor x = input.contiguous();
  const DType dtype = x.dtype();
  const int64_t c = x.shape().back(), rows = rows_of(x.shape());
  // A missing weight or bias costs one multiply or add by 1 or 0 per element,
  // in exchange for one loop instead of four.
  const Tensor w = weight.defined() ? weight.contiguous() : ones({c}, dtype);
  const Tensor b = bias.defined() ? bias.contiguous() : zeros({c}, dtype);
  LayerNormForward out{Tensor::empty(x.shape(), dtype), Tensor::empty({rows}, dtype),
                       Tensor::empty({rows}, dtype)};
  visit_float(dtype, "layer_norm", [&](auto zero) {
    using T = decltype(zero);
    const T *px = x.data<T>(), *pw = w.data<T>(), *pb = b.data<T>();
    T *py = out.y.data<T>(), *pmean = out.mean.data<T>(), *prstd = out.rstd.data<T>();
    // Shape: x and y are (R, C), weight and bias (C), mean and rstd (R).
    parallel_for(rows, std::max<int64_t>(1, kChunkElements / std::max<int64_t>(c, 1)),
                 [&](int64_t begin, int64_t end) {
                   // Rows in blocks, each step for the whole block before the next: a
                   // row's steps are one chain of dependent sums, a square root and a
                   // division, with too little else in a short row for the CPU to
                   // overlap it with; it overlaps the block's independent chains (rows
                   // of 32: 13.5 -> 9.8 us for 1152 rows).
                   for (int64_t r0 = begin; r0 < end; r0 += kRowBlock) {
                     const int64_t r1 = std::min(end, r0 + kRowBlock);
                     for (int64_t r = r0; r < r1; ++r) {
                       const T* xr = px + r * c;
                       pmean[r] = row_sum<T>(c, [&](int64_t i) { return xr[i]; }) / c;
                     }
                     for (int64_t r = r0; r < r1; ++r) {
                       const T* xr = px + r * c;
                       const T m = pmean[r];
                       // The variance of the centred values, not mean(x^2) - mean^2:
                       // for 256 copies of 1234.0 that difference of two large
                       // numbers is rounding noise, while every centred term is 0.
                       // Centred in T, exactly as the output below is.
                       const T var = row_sum<T>(c,
                                                [&](int64_t i) {
                                                  const T d = xr[i] - m;
                                                  return d * d;
                                                }) /
                                     c;
                       prstd[r] = static_cast<T>(1.0 / std::sqrt(static_cast<double>(var) + eps));
                     }
                     for (int64_t r = r0; r < r1; ++r) {
                       const T* xr = px + r * c;
                       const T m = pmean[r], rs = prstd[r];
                       T* yr = py + r * c;
                       for (int64_t i = 0; i < c; ++i) yr[i] = (xr[i] - m) * rs * pw[i] + pb[i];
                     }
                   }
                 });
  });
  return out;
}

LayerNormGrads layer_norm_backward(const Tensor& grad, const Tensor& input, const Tensor& mean,
                                   const Tensor& rstd, const Tensor& weight, bool need_dx,
                                   bool need_dweight, bool need_dbias) {
  if (grad.shape() != input.shape() || grad.dtype() != input.dtype())
    fail("layer_norm_backward: gradient ", shape_str(grad.shape()), " ", dtype_name(grad.dtype()),
         " for an input ", shape_str(input.shape()), " ", dtype_name(input.dtype()));
  check_param(weight, input, "weight");
  const Tensor x = input.contiguous(), dy = grad.contiguous();
  const DType dtype = x.dtype();
  const int64_t c = x.shape().back(), rows = rows_of(x.shape());
  assert(mean.numel() == rows && rstd.numel() == rows && mean.is_contiguous());
  const Tensor w = weight.defined() ? weight.contiguous() : ones({c}, dtype);
  LayerNormGrads out;
  if (need_dx) out.dx = Tensor::empty(x.shape(), dtype);
  const bool need_columns = need_dweight || need_dbias;
  const int64_t groups = std::min(kGroups, rows);
  // partial[0][g] and partial[1][g]: group g's sums of dy * xhat and of dy.
  Tensor partial = need_columns ? Tensor::empty({2, groups, c}, DType::Float64) : Tensor();
  visit_float(dtype, "layer_norm_backward", [&](auto zero) {
    using T = decltype(zero);
    const T *px = x.data<T>(), *pdy = dy.data<T>(), *pw = w.data<T>();
    const T *pmean = mean.data<T>(), *prstd = rstd.data<T>();
    T* pdx = need_dx ? out.dx.data<T>() : nullptr;
    double* part = need_columns ? partial.data<double>() : nullptr;
    const int64_t per_group = rows * c / std::max<int64_t>(groups, 1);
    // Shape: x, dy and dx are (R, C), weight (C), mean and rstd (R); partial
    // is (2, groups, C).
    parallel_for(groups, std::max<int64_t>(1, kChunkElements / std::max<int64_t>(per_group, 1)),
                 [&](int64_t first, int64_t last) {
                   for (int64_t g = first; g < last; ++g) {
                     double* sum_dw = part ? part + g * c : nullptr;
                     double* sum_db = part ? part + (groups + g) * c : nullptr;
                     if (part) {
                       std::fill(sum_dw, sum_dw + c, 0.0);
                       std::fill(sum_db, sum_db + c, 0.0);
                     }
                     for (int64_t r = g * rows / groups; r < (g + 1) * rows / groups; ++r) {
                       const T *xr = px + r * c, *gr = pdy + r * c;
                       const T m = pmean[r], rs = prstd[r];
                       if (pdx) {
                         // mean(g) and mean(g * xhat) with g = dy * w: what the normalisation
                         // takes back out of dy, through the mean and through the variance.
                         const T sum_g = row_sum<T>(c, [&](int64_t i) { return gr[i] * pw[i]; });
                         const T sum_gx = row_sum<T>(
                             c, [&](int64_t i) { return gr[i] * pw[i] * ((xr[i] - m) * rs); });
                         const T mean_g = sum_g / c, mean_gx = sum_gx / c;
                         T* dxr = pdx + r * c;
                         for (int64_t i = 0; i < c; ++i) {
                           const T xhat = (xr[i] - m) * rs;
                           dxr[i] = rs * (gr[i] * pw[i] - mean_g - xhat * mean_gx);
                         }
                       }
                       if (part) {
                         for (int64_t i = 0; i < c; ++i) {
                           const T xhat = (xr[i] - m) * rs;
                           sum_dw[i] += static_cast<double>(gr[i]) * static_cast<double>(xhat);
                           sum_db[i] += static_cast<double>(gr[i]);
                         }
                       }
                     }
                   }
                 });
    // The groups' partial rows, added in group order.
    auto column_sums = [&](int64_t which) {
      Tensor total = Tensor::empty({c}, dtype);
      T* pt = total.data<T>();
      for (int64_t i = 0; i < c; ++i) {
        double s = 0;
        for (int64_t g = 0; g < groups; ++g) s += part[(which * groups + g) * c + i];
        pt[i] = static_cast<T>(s);
      }
      return total;
    };
    if (need_dweight) out.dweight = column_sums(0);
    if (need_dbias) out.dbias = column_sums(1);
  });
  return out;
}

}  // namespace gradflow
