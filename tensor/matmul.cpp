#include "tensor/matmul.h"

#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "tensor/creation.h"
#include "tensor/parallel.h"
#include "tensor/strided_loop.h"

namespace gradflow {

namespace {

// How GEMM reads one (rows, cols) matrix of a view: row-major as is, or as
// the transpose of a row-major matrix, with its leading dimension.
struct Layout {
  bool ok = false;
  CBLAS_TRANSPOSE trans = CblasNoTrans;
  int64_t ld = 0;
};

Layout layout_of(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride) {
  if ((col_stride == 1 || cols == 1) && (rows == 1 || row_stride >= std::max<int64_t>(1, cols)))
    return {true, CblasNoTrans, rows == 1 ? std::max<int64_t>(1, cols) : row_stride};
  if ((row_stride == 1 || rows == 1) && (cols == 1 || col_stride >= std::max<int64_t>(1, rows)))
    return {true, CblasTrans, cols == 1 ? std::max<int64_t>(1, rows) : col_stride};
  return {};
}

Layout matrix_layout(const Tensor& t) {
  int64_t n = t.ndim();
  return layout_of(t.shape()[n - 2], t.shape()[n - 1], t.strides()[n - 2], t.strides()[n - 1]);
}

// At or below this many multiply-adds a product is computed by small_gemm:
// attention's per-head products in a small model (16 x 16 x 16) cost
// OpenBLAS a microsecond or two each in setup, packing and locks, several
// times the arithmetic.
constexpr int64_t kSmallMacs = int64_t{1} << 15;

// C (M, N) = A (M, K) B (K, N) as plain loops, in tiles of 4 rows by 16
// columns of C held in registers: for each k, the tile gains A(i, k) times
// row k of B, a 16-wide multiply-add g++ vectorises. B is first copied into a
// row-major buffer padded with zeros to whole tiles, which also undoes a
// transpose. Every element sums over k in order, whatever the tiling.
template <class T>
void small_gemm(const T* a, Layout la, const T* b, Layout lb, T* c, int64_t ldc, int64_t m,
                int64_t n, int64_t k) {
  constexpr int64_t kRows = 4, kCols = 16;
  const int64_t np = (n + kCols - 1) / kCols * kCols;
  thread_local std::vector<T> padded;  // per thread: matmul runs these in parallel
  padded.assign(static_cast<size_t>(k * np), T{0});
  const int64_t b_row = lb.trans == CblasNoTrans ? lb.ld : 1;
  const int64_t b_col = lb.trans == CblasNoTrans ? 1 : lb.ld;
  for (int64_t p = 0; p < k; ++p)
    for (int64_t j = 0; j < n; ++j)
      padded[static_cast<size_t>(p * np + j)] = b[p * b_row + j * b_col];
  const int64_t a_row = la.trans == CblasNoTrans ? la.ld : 1;
  const int64_t a_col = la.trans == CblasNoTrans ? 1 : la.ld;
  // A as row-major (M, K) too, with rows padded to a whole tile.
  const int64_t mp = (m + kRows - 1) / kRows * kRows;
  thread_local std::vector<T> rows_of_a;
  rows_of_a.assign(static_cast<size_t>(mp * k), T{0});
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p)
      rows_of_a[static_cast<size_t>(i * k + p)] = a[i * a_row + p * a_col];
  for (int64_t i0 = 0; i0 < mp; i0 += kRows) {
    for (int64_t j0 = 0; j0 < np; j0 += kCols) {
      // A 16-wide vector of T (GCC's vector extension; it picks the
      // machine's widest registers), so the tile stays in registers.
      using Vec [[gnu::vector_size(kCols * sizeof(T))]] = T;
      const T* x = rows_of_a.data() + i0 * k;
      const T* in = padded.data() + j0;
      Vec v0 = {}, v1 = {}, v2 = {}, v3 = {};
      for (int64_t p = 0; p < k; ++p, in += np) {
        Vec row;
        std::memcpy(&row, in, sizeof row);
        v0 += x[p] * row;
        v1 += x[k + p] * row;
        v2 += x[2 * k + p] * row;
        v3 += x[3 * k + p] * row;
      }
      T acc0[kCols], acc1[kCols], acc2[kCols], acc3[kCols];
      std::memcpy(acc0, &v0, sizeof v0);
      std::memcpy(acc1, &v1, sizeof v1);
      std::memcpy(acc2, &v2, sizeof v2);
      std::memcpy(acc3, &v3, sizeof v3);
      const T* acc[kRows] = {acc0, acc1, acc2, acc3};
      const int64_t rows = std::min(kRows, m - i0), cols = std::min(kCols, n - j0);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < cols; ++j) c[(i0 + r) * ldc + j0 + j] = acc[r][j];
    }
  }
}

// C (M, N, row-major, leading dimension ldc) = A (M, K) B (K, N). `small`
// is decided on the whole product, not a block of it, so that a product
// takes the same path at every thread count.
template <class T>
void gemm(const T* a, Layout la, const T* b, Layout lb, T* c, int64_t ldc, int64_t m, int64_t n,
          int64_t k, bool small) {
  if (small) {
    small_gemm(a, la, b, lb, c, ldc, m, n, k);
    return;
  }
  // OpenBLAS runs on the calling thread: matmul splits work over gradflow's
  // pool instead (see parallel.h). Set once, before the first GEMM.
  static const bool single_threaded = (openblas_set_num_threads(1), true);
  (void)single_threaded;
  if constexpr (std::is_same_v<T, float>) {
    cblas_sgemm(CblasRowMajor, la.trans, lb.trans, m, n, k, 1.0f, a, la.ld, b, lb.ld, 0.0f, c, ldc);
  } else {
    cblas_dgemm(CblasRowMajor, la.trans, lb.trans, m, n, k, 1.0, a, la.ld, b, lb.ld, 0.0, c, ldc);
  }
}

// Where row i of op(A) starts.
template <class T>
const T* row_of(const T* a, Layout la, int64_t i) {
  return la.trans == CblasNoTrans ? a + i * la.ld : a + i;
}

// Below this many multiply-adds a GEMM is not worth splitting over threads.
constexpr int64_t kSplitMacs = int64_t{1} << 17;
// Row blocks are multiples of this. OpenBLAS's Haswell sgemm computes an
// element of C the same way wherever the rows of a call start, as long as the
// start is a multiple of its 24-row tile, so cuts at multiples of 96 leave
// the result bitwise unchanged there (columns cuts do not, so none are made).
constexpr int64_t kBlock = 96;

// One GEMM, C (M, N) = A (M, K) B (K, N), cut over the pool's threads into
// blocks of rows of C, each an independent GEMM over the full K.
template <class T>
void parallel_gemm(const T* a, Layout la, const T* b, Layout lb, T* c, int64_t m, int64_t n,
                   int64_t k) {
  const bool small = m * n * k <= kSmallMacs;
  const int64_t blocks = (m + kBlock - 1) / kBlock;
  const int64_t grain = std::max<int64_t>(1, kSplitMacs / std::max<int64_t>(1, kBlock * n * k));
  parallel_for(blocks, grain, [&](int64_t first, int64_t last) {
    const int64_t begin = first * kBlock, end = std::min(m, last * kBlock);
    gemm(row_of(a, la, begin), la, b, lb, c + begin * n, n, end - begin, n, k, small);
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
  Layout la = matrix_layout(a), lb = matrix_layout(b);
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
    const bool small = m * n * k <= kSmallMacs;
    const int64_t grain = std::max<int64_t>(1, kSplitMacs / std::max<int64_t>(1, m * n * k));
    parallel_for(n_items, grain, [&](int64_t first, int64_t last) {
      for (int64_t i = first; i < last; ++i) {
        const Offsets<3>& o = items[static_cast<size_t>(i)];
        gemm(pa + o[0], la, pb + o[1], lb, pc + o[2], n, m, n, k, small);
      }
    });
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
