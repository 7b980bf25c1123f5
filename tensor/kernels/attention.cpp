// The kernels of tensor/kernels/attention.h. One work item is one head (one matrix
// of the batch axes): its products go through gemm() with the head's rows
// read in place, and its (T, S) weights live in a per-thread scratch buffer.
#include "tensor/kernels/attention.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "tensor/kernels/gemm.h"
#include "tensor/kernels/masked_softmax.h"
#include "tensor/parallel.h"

namespace gradflow {

namespace {

// Below about this many multiply-adds, a parallel chunk costs more than it saves.
constexpr int64_t kGrainMacs = int64_t{1} << 17;

// How GEMM reads the last two axes of t as stored rows, if it can.
GemmLayout row_layout(const Tensor& t) {
  const int64_t n = t.ndim();
  return gemm_layout(t.shape()[n - 2], t.shape()[n - 1], t.strides()[n - 2], t.strides()[n - 1]);
}

// t itself when every matrix of it is stored rows GEMM can read in place
// (any batch strides), else a contiguous copy.
Tensor rows_contiguous(const Tensor& t) {
  const GemmLayout l = row_layout(t);
  return l.ok && !l.operand.transposed ? t : t.contiguous();
}

// An uninitialised tensor of `shape` stored in the axis order of `like`'s
// strides (largest first, the last axis innermost): a head's gradient or
// output then has the layout of the head it came from.
Tensor empty_laid_out_like(const Shape& shape, const Strides& like, DType dtype) {
  const size_t n = shape.size();
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end() - 1,
                   [&](int64_t a, int64_t b) { return like[a] > like[b]; });
  Shape stored(n);
  std::vector<int64_t> back(n);
  for (size_t i = 0; i < n; ++i) {
    stored[i] = shape[order[i]];
    back[order[i]] = static_cast<int64_t>(i);
  }
  return Tensor::empty(stored, dtype).permute(back);
}

// The element offset of matrix `item` (row-major over the batch axes).
int64_t item_offset(int64_t item, const Shape& batch, const Strides& strides) {
  return leading_offset(item, batch, strides, batch.size());
}

Shape batch_of(const Tensor& t) { return Shape(t.shape().begin(), t.shape().end() - 2); }

// What every kernel needs to know about its operands.
struct Problem {
  Tensor q, k, v, mask;  // rows contiguous; mask in q's dtype, rows contiguous, or undefined
  Shape batch;
  Strides mask_strides;  // the mask's, broadcast to (..., T, S)
  int64_t t, s, d, dv, items;
};

Problem make_problem(const char* op, const Tensor& q_in, const Tensor& k_in, const Tensor& v_in,
                     const Tensor& mask) {
  if (!q_in.defined() || !k_in.defined() || !v_in.defined()) fail(op, ": undefined tensor");
  const auto shapes = [&] {
    return shape_str(q_in.shape()) + ", " + shape_str(k_in.shape()) + ", " +
           shape_str(v_in.shape());
  };
  if (q_in.ndim() < 2 || k_in.ndim() != q_in.ndim() || v_in.ndim() != q_in.ndim() ||
      batch_of(k_in) != batch_of(q_in) || batch_of(v_in) != batch_of(q_in) ||
      q_in.shape().back() != k_in.shape().back() ||
      k_in.shape()[k_in.ndim() - 2] != v_in.shape()[v_in.ndim() - 2])
    fail(op,
         ": expected q (..., T, D), k (..., S, D), v (..., S, Dv) with the same batch axes, got ",
         shapes());
  if (k_in.dtype() != q_in.dtype() || v_in.dtype() != q_in.dtype())
    fail(op, ": dtypes differ: ", dtype_name(q_in.dtype()), ", ", dtype_name(k_in.dtype()), ", ",
         dtype_name(v_in.dtype()));
  visit_float(q_in.dtype(), op, [](auto) {});
  Problem p{rows_contiguous(q_in),
            rows_contiguous(k_in),
            rows_contiguous(v_in),
            Tensor(),
            batch_of(q_in),
            {},
            q_in.shape()[q_in.ndim() - 2],
            k_in.shape()[k_in.ndim() - 2],
            q_in.shape().back(),
            v_in.shape().back(),
            0};
  p.items = numel_of(p.batch);
  if (mask.defined()) {
    Shape scores = p.batch;
    scores.insert(scores.end(), {p.t, p.s});
    bool fits = mask.ndim() <= static_cast<int64_t>(scores.size());
    for (int64_t i = 1; fits && i <= mask.ndim(); ++i) {
      const int64_t m = mask.shape()[mask.ndim() - i];
      fits = m == 1 || m == scores[scores.size() - i];
    }
    if (!fits)
      fail(op, ": mask of shape ", shape_str(mask.shape()), " does not broadcast to the scores ",
           shape_str(scores));
    Tensor m = mask.to(q_in.dtype());
    if (m.ndim() == 0 || m.shape().back() != p.s || (m.strides().back() != 1 && p.s > 1)) {
      Shape rowwise = m.ndim() == 0 ? Shape{p.s} : m.shape();
      rowwise.back() = p.s;
      m = m.expand(rowwise).contiguous();  // repeated or strided along S: copy
    }
    p.mask_strides = broadcast_strides(m.shape(), m.strides(), scores);
    p.mask = m;
  }
  return p;
}

// One head's operands: where each matrix starts, and how GEMM reads it.
template <class T>
struct Head {
  const T *q, *k, *v, *mask;  // mask null when there is none
  GemmOperand lq, lk, lv;     // each row-major with its own row stride
  int64_t mask_row;           // the mask's stride between query rows
};

template <class T>
Head<T> head(const Problem& p, int64_t item) {
  const int64_t nb = static_cast<int64_t>(p.batch.size());  // the T axis
  const auto at = [&](const Tensor& t) {
    return t.data<T>() + item_offset(item, p.batch, t.strides());
  };
  Head<T> h{at(p.q),
            at(p.k),
            at(p.v),
            nullptr,
            row_layout(p.q).operand,
            row_layout(p.k).operand,
            row_layout(p.v).operand,
            0};
  if (p.mask.defined()) {
    h.mask = p.mask.data<T>() + item_offset(item, p.batch, p.mask_strides);
    h.mask_row = p.mask_strides[nb];
  }
  return h;
}

// The head's weights (T, S) into w: scores by GEMM, then row by row.
template <class T>
void head_weights(const Problem& p, const Head<T>& h, T scale, T* w, T* top, T* inv, bool forward) {
  gemm(h.q, h.lq, h.k, GemmOperand{true, h.lk.ld}, w, p.s, p.t, p.s, p.d);
  for (int64_t i = 0; i < p.t; ++i)
    masked_softmax_row(w + i * p.s, h.mask ? h.mask + i * h.mask_row : nullptr, w + i * p.s, p.s,
                       scale, top[i], inv[i], forward);
}

int64_t grain_for(const Problem& p) {
  return std::max<int64_t>(1, kGrainMacs / std::max<int64_t>(1, p.t * p.s * (p.d + p.dv)));
}

}  // namespace

AttentionForward attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, double scale,
                                   const Tensor& mask) {
  const Problem p = make_problem("attention", q, k, v, mask);
  Shape out_shape = p.batch, stats_shape = p.batch;
  out_shape.insert(out_shape.end(), {p.t, p.dv});
  stats_shape.push_back(p.t);
  AttentionForward f{empty_laid_out_like(out_shape, p.q.strides(), q.dtype()),
                     Tensor::empty(stats_shape, q.dtype()), Tensor::empty(stats_shape, q.dtype())};
  if (p.items == 0 || p.t == 0) return f;
  const GemmOperand lo = row_layout(f.out).operand;
  visit_float(q.dtype(), "attention", [&](auto zero) {
    using T = decltype(zero);
    // Shape per head: q (T, D), k (S, D), v (S, Dv), weights (T, S), out (T, Dv).
    parallel_for(p.items, grain_for(p), [&](int64_t begin, int64_t end) {
      thread_local std::vector<T> weights;  // per thread: heads run in parallel
      weights.resize(static_cast<size_t>(p.t * p.s));
      for (int64_t item = begin; item < end; ++item) {
        const Head<T> h = head<T>(p, item);
        T* top = f.row_max.data<T>() + item * p.t;
        T* inv = f.row_inv.data<T>() + item * p.t;
        head_weights(p, h, static_cast<T>(scale), weights.data(), top, inv, true);
        T* out = f.out.data<T>() + item_offset(item, p.batch, f.out.strides());
        gemm(weights.data(), GemmOperand{false, p.s}, h.v, h.lv, out, lo.ld, p.t, p.dv, p.s);
      }
    });
  });
  return f;
}

AttentionGrads attention_backward(const Tensor& dout_in, const Tensor& q, const Tensor& k,
                                  const Tensor& v, const Tensor& row_max, const Tensor& row_inv,
                                  double scale, const Tensor& mask, bool need_q, bool need_k,
                                  bool need_v) {
  const Problem p = make_problem("attention_backward", q, k, v, mask);
  Shape out_shape = p.batch;
  out_shape.insert(out_shape.end(), {p.t, p.dv});
  if (!dout_in.defined() || dout_in.shape() != out_shape || dout_in.dtype() != q.dtype())
    fail("attention_backward: expected a gradient of shape ", shape_str(out_shape), ", got ",
         dout_in.defined() ? shape_str(dout_in.shape()) : "an undefined tensor");
  const Tensor dout = rows_contiguous(dout_in);
  const Tensor stats_max = row_max.contiguous(), stats_inv = row_inv.contiguous();
  AttentionGrads g;
  if (need_q) g.dq = empty_laid_out_like(p.q.shape(), p.q.strides(), q.dtype());
  if (need_k) g.dk = empty_laid_out_like(p.k.shape(), p.k.strides(), q.dtype());
  if (need_v) g.dv = empty_laid_out_like(p.v.shape(), p.v.strides(), q.dtype());
  if (p.items == 0) return g;
  visit_float(q.dtype(), "attention_backward", [&](auto zero) {
    using T = decltype(zero);
    // Where gradient `t` of this head starts, and its row stride.
    const auto grad_at = [&](const Tensor& t, int64_t item) {
      return t.data<T>() + item_offset(item, p.batch, t.strides());
    };
    // Shape per head: dout (T, Dv), weights and dweights (T, S), dq (T, D),
    // dk (S, D), dv (S, Dv).
    const GemmOperand lgo = row_layout(dout).operand;
    const int64_t ldq = need_q ? row_layout(g.dq).operand.ld : 0;
    const int64_t ldk = need_k ? row_layout(g.dk).operand.ld : 0;
    const int64_t ldv = need_v ? row_layout(g.dv).operand.ld : 0;
    parallel_for(p.items, grain_for(p), [&](int64_t begin, int64_t end) {
      thread_local std::vector<T> weights, dweights;
      weights.resize(static_cast<size_t>(p.t * p.s));
      dweights.resize(static_cast<size_t>(p.t * p.s));
      T* w = weights.data();
      T* dw = dweights.data();
      const T sc = static_cast<T>(scale);
      for (int64_t item = begin; item < end; ++item) {
        const Head<T> h = head<T>(p, item);
        const T* go = grad_at(dout, item);
        T* top = stats_max.data<T>() + item * p.t;
        T* inv = stats_inv.data<T>() + item * p.t;
        head_weights(p, h, sc, w, top, inv, false);
        if (need_v)  // dv (S, Dv) = w^T (S, T) dout (T, Dv)
          gemm(w, GemmOperand{true, p.s}, go, lgo, grad_at(g.dv, item), ldv, p.s, p.dv, p.t);
        if (!need_q && !need_k) continue;
        // dw (T, S) = dout (T, Dv) v^T (Dv, S), then the softmax's backward in place.
        gemm(go, lgo, h.v, GemmOperand{true, h.lv.ld}, dw, p.s, p.t, p.s, p.dv);
        for (int64_t i = 0; i < p.t; ++i) {
          const T* wr = w + i * p.s;
          T* dr = dw + i * p.s;
          const T dot = lane_sum<T, 16>(p.s, [&](int64_t j) { return dr[j] * wr[j]; });
          for (int64_t j = 0; j < p.s; ++j) dr[j] = wr[j] * (dr[j] - dot) * sc;
        }
        if (need_q)  // dq (T, D) = dscores (T, S) k (S, D)
          gemm(dw, GemmOperand{false, p.s}, h.k, h.lk, grad_at(g.dq, item), ldq, p.t, p.d, p.s);
        if (need_k)  // dk (S, D) = dscores^T (S, T) q (T, D)
          gemm(dw, GemmOperand{true, p.s}, h.q, h.lq, grad_at(g.dk, item), ldk, p.s, p.d, p.t);
      }
    });
  });
  return g;
}

}  // namespace gradflow
