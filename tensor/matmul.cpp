#include "tensor/matmul.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "tensor/creation.h"
#include "tensor/kernels/gemm.h"
#include "tensor/parallel.h"
#include "tensor/strided_loop.h"

namespace gradflow {

namespace {

GemmLayout matrix_layout(const Tensor& t) {
  const int64_t n = t.ndim();
  return gemm_layout(t.shape()[n - 2], t.shape()[n - 1], t.strides()[n - 2], t.strides()[n - 1]);
}

// Below this many multiply-adds a GEMM is not worth splitting over threads.
constexpr int64_t kSplitMacs = int64_t{1} << 17;
// A large product is cut into more pieces than threads, up to this many per
// thread and each of at least kPieceMacs, which the threads claim as they
// finish (parallel.cpp): a thread the machine slows down (a busy shared
// machine) then takes fewer pieces instead of holding the others up at the
// end, and one large product keeps every thread busy to its end.
constexpr int64_t kPiecesPerThread = 4;
constexpr int64_t kPieceMacs = int64_t{1} << 26;
// Cuts fall on multiples of this many rows (or columns), a multiple of the
// register tile of OpenBLAS's AVX-512 and AVX2 sgemm kernels, so a piece
// starts on a whole tile.
constexpr int64_t kAlign = 16;

// Where cut c of `parts` falls in [0, n): evenly, rounded to kAlign.
int64_t cut(int64_t c, int64_t parts, int64_t n) {
  return c == parts ? n : std::min(n, (c * n / parts + kAlign / 2) / kAlign * kAlign);
}

// One GEMM, C (M, N) = A (M, K) B (K, N) (+ the bias row on every row when
// there is one), cut into
// one piece per thread (more for a large one), each an independent GEMM over the full K: by rows
// of C, or by columns when C has too few rows (a weight's gradient, (N, K)
// from a long sum over the batch). The cut depends on the sizes and the thread count only,
// so a fixed count gives the same bits every time; different counts round
// differently only where OpenBLAS's kernels depend on where a piece starts
// (our own kernels' bits do not depend on the cut).
template <class T>
void parallel_gemm(const T* a, GemmOperand la, const T* b, GemmOperand lb, T* c, int64_t m,
                   int64_t n, int64_t k, const T* bias = nullptr) {
  // Every piece runs the kernel the whole product picks (gemm.h), so the
  // bits do not depend on the thread count; our packed GEMM splits itself
  // over the pool, so it takes the product whole rather than in pieces that
  // would each pack all of B.
  const GemmKernel kernel = gemm_kernel<T>(m, n, k, la, lb);
  if (kernel == GemmKernel::kPacked) {
    gemm(a, la, b, lb, c, n, m, n, k, kernel, bias);
    return;
  }
  const int64_t threads = num_threads(), macs = m * n * k;
  int64_t parts = std::clamp<int64_t>(macs / kSplitMacs, 1, threads);
  if (parts > 1) parts = std::clamp<int64_t>(macs / kPieceMacs, parts, threads * kPiecesPerThread);
  const bool by_rows = m >= parts * kAlign || n < parts * kAlign;
  const int64_t cuts = std::min(parts, by_rows ? (m + kAlign - 1) / kAlign : n / kAlign);
  parallel_pieces(std::max<int64_t>(cuts, 1), [&](int64_t first, int64_t last) {
    for (int64_t p = first; p < last; ++p) {
      if (by_rows) {
        const int64_t begin = cut(p, cuts, m), end = cut(p + 1, cuts, m);
        gemm(gemm_row(a, la, begin), la, b, lb, c + begin * n, n, end - begin, n, k, kernel, bias);
      } else {
        const int64_t begin = cut(p, cuts, n), end = cut(p + 1, cuts, n);
        // Columns [begin, end) of op(B): of B's rows, or of B^T's.
        const T* b_cols = lb.transposed ? b + begin * lb.ld : b + begin;
        gemm(a, la, b_cols, lb, c + begin, n, m, end - begin, k, kernel,
             bias ? bias + begin : nullptr);
      }
    }
  });
}

void check_matmul(const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined()) fail("matmul: undefined tensor");
  if (a.ndim() < 2 || b.ndim() < 2)
    fail("matmul: both operands need at least 2 dimensions, got ", shape_str(a.shape()), " @ ",
         shape_str(b.shape()));
  if (a.shape().back() != b.shape()[b.ndim() - 2])
    fail("matmul: inner dimensions differ: ", shape_str(a.shape()), " @ ", shape_str(b.shape()));
  if (a.dtype() != b.dtype())
    fail("matmul: dtypes differ: ", dtype_name(a.dtype()), " and ", dtype_name(b.dtype()));
  visit_float(a.dtype(), "matmul", [](auto) {});
}

Shape batch_shape(const Tensor& a, const Tensor& b) {
  Shape ba(a.shape().begin(), a.shape().end() - 2), bb(b.shape().begin(), b.shape().end() - 2);
  return broadcast_shapes(ba, bb, "matmul");
}

}  // namespace

Tensor matmul(const Tensor& a_in, const Tensor& b_in) {
  check_matmul(a_in, b_in);
  const int64_t m = a_in.shape()[a_in.ndim() - 2], k = a_in.shape().back(), n = b_in.shape().back();
  // A stack of matrices times one matrix is one tall GEMM when the stack is
  // contiguous: (B, T, K) @ (K, N) as (B*T, K) @ (K, N). This is every Linear.
  if (b_in.ndim() == 2 && a_in.ndim() > 2 && a_in.is_contiguous() && k > 0) {
    Shape out_shape = a_in.shape();
    out_shape.back() = n;
    return matmul(a_in.view({-1, k}), b_in).view(out_shape);
  }
  Shape batch = batch_shape(a_in, b_in);
  Shape out_shape = batch;
  out_shape.push_back(m);
  out_shape.push_back(n);
  if (k == 0) return zeros(out_shape, a_in.dtype());
  Tensor out = Tensor::empty(out_shape, a_in.dtype());
  if (out.numel() == 0) return out;

  Tensor a = matrix_layout(a_in).ok ? a_in : a_in.contiguous();
  Tensor b = matrix_layout(b_in).ok ? b_in : b_in.contiguous();
  const GemmOperand la = matrix_layout(a).operand, lb = matrix_layout(b).operand;
  // Batch strides, broadcast (0 where an operand has size 1 or no such axis).
  auto batch_strides = [&](const Tensor& t) {
    Shape s(t.shape().begin(), t.shape().end() - 2);
    Strides st(t.strides().begin(), t.strides().end() - 2);
    return broadcast_strides(s, st, batch);
  };
  Strides sc(out.strides().begin(), out.strides().end() - 2);
  // The element offsets of every matrix of the batch, for each operand.
  std::vector<Offsets<3>> items;
  items.reserve(static_cast<size_t>(numel_of(batch)));
  for_each_run<3>(batch, {batch_strides(a), batch_strides(b), sc},
                  [&](int64_t count, Offsets<3> off, Offsets<3> st) {
                    for (int64_t i = 0; i < count; ++i)
                      items.push_back({off[0] + i * st[0], off[1] + i * st[1], off[2] + i * st[2]});
                  });
  const auto n_items = static_cast<int64_t>(items.size());
  visit_float(a.dtype(), "matmul", [&](auto zero) {
    using T = decltype(zero);
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* pc = out.data<T>();
    if (n_items < num_threads()) {  // few big matrices: cut each one
      for (const Offsets<3>& o : items)
        parallel_gemm(pa + o[0], la, pb + o[1], lb, pc + o[2], m, n, k);
      return;
    }
    // Many matrices (attention's batch x heads): whole matrices per thread.
    const GemmKernel kernel = gemm_kernel<T>(m, n, k, la, lb);
    const int64_t grain = std::max<int64_t>(1, kSplitMacs / std::max<int64_t>(1, m * n * k));
    parallel_for(n_items, grain, [&](int64_t first, int64_t last) {
      for (int64_t i = first; i < last; ++i) {
        const Offsets<3>& o = items[static_cast<size_t>(i)];
        gemm(pa + o[0], la, pb + o[1], lb, pc + o[2], n, m, n, k, kernel);
      }
    });
  });
  return out;
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  if (!x.defined() || !weight.defined()) fail("linear: undefined tensor");
  if (x.ndim() < 1 || weight.ndim() != 2 || x.shape().back() != weight.shape()[1])
    fail("linear: expected x (..., K) and weight (N, K), got x ", shape_str(x.shape()),
         " and weight ", shape_str(weight.shape()));
  if (bias.defined() && (bias.ndim() != 1 || bias.shape()[0] != weight.shape()[0]))
    fail("linear: expected bias (", weight.shape()[0], ") for weight ", shape_str(weight.shape()),
         ", got ", shape_str(bias.shape()));
  if (x.dtype() != weight.dtype() || (bias.defined() && bias.dtype() != x.dtype()))
    fail("linear: dtypes differ: x ", dtype_name(x.dtype()), ", weight ",
         dtype_name(weight.dtype()), bias.defined() ? ", bias " : "",
         bias.defined() ? dtype_name(bias.dtype()) : "");
  const int64_t k = weight.shape()[1], n = weight.shape()[0];
  Shape out_shape = x.shape();
  out_shape.back() = n;
  if (k == 0) {
    Tensor out = zeros(out_shape, x.dtype());
    return bias.defined() ? out.copy_(bias) : out;
  }
  // Shape: x as (M, K) rows, weight (N, K), out (M, N) = x weight^T + bias.
  const Tensor rows = x.reshape({-1, k});
  const Tensor a = matrix_layout(rows).ok ? rows : rows.contiguous();
  const Tensor wt = weight.transpose(0, 1);
  const Tensor b = matrix_layout(wt).ok ? wt : wt.contiguous();
  const int64_t m = a.shape()[0];
  Tensor out = Tensor::empty(out_shape, x.dtype());
  if (out.numel() == 0) return out;
  visit_float(x.dtype(), "linear", [&](auto zero) {
    using T = decltype(zero);
    // The bias goes in with the product, not in a pass of its own (gemm.h).
    const Tensor bc = bias.defined() ? bias.contiguous() : Tensor();
    parallel_gemm(a.data<T>(), matrix_layout(a).operand, b.data<T>(), matrix_layout(b).operand,
                  out.data<T>(), m, n, k, bc.defined() ? bc.data<T>() : nullptr);
  });
  return out;
}

Tensor matmul_reference(const Tensor& a, const Tensor& b) {
  check_matmul(a, b);
  Shape batch = batch_shape(a, b);
  const int64_t m = a.shape()[a.ndim() - 2], k = a.shape().back(), n = b.shape().back();
  Shape sa = batch, sb = batch;
  sa.insert(sa.end(), {m, k});
  sb.insert(sb.end(), {k, n});
  Tensor ea = a.expand(sa).contiguous().to(DType::Float64);
  Tensor eb = b.expand(sb).contiguous().to(DType::Float64);
  Shape out_shape = batch;
  out_shape.insert(out_shape.end(), {m, n});
  Tensor out = zeros(out_shape, DType::Float64);
  const double* x = ea.data<double>();
  const double* y = eb.data<double>();
  double* z = out.data<double>();
  for (int64_t p = 0; p < numel_of(batch); ++p)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t t = 0; t < k; ++t) acc += x[(p * m + i) * k + t] * y[(p * k + t) * n + j];
        z[(p * m + i) * n + j] = acc;
      }
  return out.to(a.dtype());
}

}  // namespace gradflow
