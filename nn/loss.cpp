#include "nn/loss.h"

#include <algorithm>
#include <cmath>

#include "autograd/ops.h"
#include "autograd/reference.h"
#include "tensor/creation.h"
#include "tensor/elementwise.h"
#include "tensor/kernels/cpu_dispatch.h"
#include "tensor/kernels/fast_math.h"
#include "tensor/kernels/lanes.h"

namespace gradflow::nn {

namespace {

// e^z for float logits: fast::exp (tensor/kernels/fast_math.h), which
// vectorises where std::exp is a call per element in double, but exactly 0
// below -87, where fast::exp stops at about the smallest normal float: a -inf
// or far-off logit then adds nothing, as it does through std::exp.
inline float exp_or_zero(float z) {
  const float e = fast::exp(z);
  return z < -87.0f ? 0.0f : e;
}

// Checks the call and returns the number of counted targets (not
// ignore_index), each of which must name a class.
int64_t check_cross_entropy(const char* op, const Variable& logits, const Tensor& targets,
                            int64_t ignore_index, double smoothing, int64_t divide_by) {
  if (!targets.defined() || targets.dtype() != DType::Int64)
    fail(op, ": targets must be an int64 tensor");
  Shape expected(logits.shape().begin(), logits.shape().end() - (logits.ndim() ? 1 : 0));
  if (logits.ndim() < 1 || targets.shape() != expected)
    fail(op, ": logits ", shape_str(logits.shape()), " need targets of shape ", shape_str(expected),
         ", got ", shape_str(targets.shape()));
  if (!(smoothing >= 0 && smoothing <= 1))
    fail(op, ": label_smoothing must be in [0, 1], got ", smoothing);
  if (divide_by < 0) fail(op, ": divide_by must be >= 0, got ", divide_by);
  const int64_t classes = logits.shape().back();
  const Tensor t = targets.contiguous();
  const int64_t* target = t.data<int64_t>();
  int64_t counted = 0;
  for (int64_t r = 0; r < t.numel(); ++r) {
    if (target[r] == ignore_index) continue;
    if (target[r] < 0 || target[r] >= classes)
      fail(op, ": target ", target[r], " is out of range for ", classes, " classes");
    ++counted;
  }
  return counted;
}

}  // namespace

int64_t counted_targets(const Tensor& targets, int64_t ignore_index) {
  if (!targets.defined() || targets.dtype() != DType::Int64)
    fail("counted_targets: targets must be an int64 tensor");
  const Tensor t = targets.contiguous();
  const int64_t* p = t.data<int64_t>();
  return std::count_if(p, p + t.numel(), [&](int64_t v) { return v != ignore_index; });
}

Variable cross_entropy(const Variable& logits, const Tensor& targets, int64_t ignore_index,
                       double smoothing, int64_t divide_by) {
  const int64_t counted =
      check_cross_entropy("cross_entropy", logits, targets, ignore_index, smoothing, divide_by);
  if (reference_ops())
    return cross_entropy_reference(logits, targets, ignore_index, smoothing, divide_by);
  const int64_t classes = logits.shape().back();
  const int64_t rows = logits.numel() / std::max<int64_t>(classes, 1);
  Tensor x = logits.data().contiguous().view({rows, classes});
  Tensor t = targets.contiguous().view({rows});
  const int64_t* target = t.data<int64_t>();
  // Shape: x (N, V); lse (N) the log-sum-exp of each row, kept for backward.
  Tensor lse = Tensor::empty({rows}, DType::Float64);
  double total = 0;
  visit_float(x.dtype(), "cross_entropy", [&](auto zero) {
    using T = decltype(zero);
    const T* px = x.data<T>();
    double* pl = lse.data<double>();
    // Compiled for this CPU's vectors (cpu_dispatch.h).
    std::vector<float> e(std::is_same_v<T, float> ? classes : 0);  // a row's exponentials
    run_for_this_cpu([&] {
      for (int64_t r = 0; r < rows; ++r) {
        const T* row = px + r * classes;
        // The row's largest logit in vector lanes: the same value as a running
        // std::max from row[0], NaN included (row[0] NaN stays the answer).
        const double m = lane_max(row, classes, row[0]);
        double s = 0, sum_x = 0;
        if constexpr (std::is_same_v<T, float>) {
          // The exponentials in float (m is one of the row's floats, so row - m
          // is its float difference), one vectorised pass, then added in
          // double lanes (g++ left the two in one loop scalar).
          const float mf = static_cast<float>(m);
          for (int64_t j = 0; j < classes; ++j) e[j] = exp_or_zero(row[j] - mf);
          s = lane_sum(classes, [&](int64_t j) { return double{e[j]}; });
        } else {
          for (int64_t j = 0; j < classes; ++j) s += std::exp(row[j] - m);
        }
        // Only smoothing reads the row's sum, a chain of dependent adds.
        if (smoothing > 0)
          for (int64_t j = 0; j < classes; ++j) sum_x += row[j] - m;
        double log_s = std::log(s);
        pl[r] = m + log_s;
        if (target[r] == ignore_index) continue;
        // -log p_j = (m - x_j) + log s, in that order for exactness at large m.
        double nll = (m - row[target[r]]) + log_s;
        double uniform = log_s - sum_x / static_cast<double>(classes);
        // Only with smoothing: a -inf logit makes `uniform` infinite, and
        // 0 * inf would turn an exact loss into NaN.
        total += smoothing > 0 ? (1 - smoothing) * nll + smoothing * uniform : nll;
      }
    });
  });
  const double count =
      static_cast<double>(divide_by > 0 ? divide_by : std::max<int64_t>(counted, 1));
  // No term to average: NaN, as PyTorch (the gradient stays 0, every row ignored).
  const bool empty = divide_by == 0 && counted == 0;
  Tensor loss = full({}, empty ? std::nan("") : total / count, logits.dtype());
  const Shape shape = logits.shape();
  return make_result(loss, "cross_entropy", {logits},
                     [x, t, lse, ignore_index, smoothing, count, shape](const Tensor& g) {
                       Tensor gx = Tensor::empty(x.shape(), x.dtype());
                       const int64_t n = x.shape()[0], v = x.shape()[1];
                       const double scale = g.item() / count;
                       const int64_t* target = t.data<int64_t>();
                       const double* pl = lse.data<double>();
                       visit_float(x.dtype(), "cross_entropy", [&](auto zero) {
                         using T = decltype(zero);
                         const T* px = x.data<T>();
                         T* pg = gx.data<T>();
                         run_for_this_cpu([&] {
                           for (int64_t r = 0; r < n; ++r) {
                             T* out = pg + r * v;
                             if (target[r] == ignore_index) {
                               std::fill(out, out + v, T{0});
                               continue;
                             }
                             const T* row = px + r * v;
                             const double off = smoothing / static_cast<double>(v);
                             if constexpr (std::is_same_v<T, float>) {
                               // p_j - off in float: the gradient is kept in float.
                               // x_j - lse in double: at large logits lse's
                               // fraction (log 2 for a tie) is below a float's.
                               const double row_lse = pl[r];
                               const float offf = static_cast<float>(off);
                               const float scalef = static_cast<float>(scale);
                               for (int64_t j = 0; j < v; ++j) {
                                 const float z = static_cast<float>(row[j] - row_lse);
                                 out[j] = (exp_or_zero(z) - offf) * scalef;
                               }
                             } else {
                               for (int64_t j = 0; j < v; ++j)
                                 out[j] = static_cast<T>((std::exp(row[j] - pl[r]) - off) * scale);
                             }
                             out[target[r]] -= static_cast<T>((1 - smoothing) * scale);
                           }
                         });
                       });
                       return std::vector<Tensor>{gx.view(shape)};
                     },
                     {t});
}

Variable cross_entropy_reference(const Variable& logits, const Tensor& targets,
                                 int64_t ignore_index, double smoothing, int64_t divide_by) {
  const int64_t counted = check_cross_entropy("cross_entropy_reference", logits, targets,
                                              ignore_index, smoothing, divide_by);
  // Shape: logits (..., V), targets (...). Ignored positions gather class 0
  // (any class would do) and are then multiplied by 0.
  Tensor ignored =
      eq(targets.to(DType::Float64), full({}, static_cast<double>(ignore_index), DType::Float64));
  Tensor safe = from_vector(std::vector<double>(targets.numel(), 0), targets.shape(), DType::Int64);
  safe.copy_(where(ignored, zeros({}, DType::Float64), targets.to(DType::Float64)));
  Tensor keep = sub(1.0, ignored).to(logits.dtype());
  Variable logp = log_softmax(logits, -1);
  Variable nll = neg(squeeze(gather(logp, -1, safe.unsqueeze(-1)), -1));  // -log p[target]
  Variable uniform = smoothing > 0 ? neg(mean(logp, {-1})) : Variable();  // mean_j -log p[j]
  Variable per = smoothing > 0 ? nll * (1 - smoothing) + uniform * smoothing : nll;
  const double count =
      static_cast<double>(divide_by > 0 ? divide_by : std::max<int64_t>(counted, 1));
  Variable loss = sum(per * Variable(keep)) / count;
  return divide_by == 0 && counted == 0 ? loss + std::nan("") : loss;  // as cross_entropy
}

Variable mse_loss(const Variable& prediction, const Variable& target) {
  if (prediction.shape() != target.shape())
    fail("mse_loss: shapes differ: ", shape_str(prediction.shape()), " and ",
         shape_str(target.shape()));
  Variable d = prediction - target;
  return mean(d * d);
}

}  // namespace gradflow::nn
