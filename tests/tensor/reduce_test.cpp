// Reductions and the softmax family against plain loops over every element.
#include "tensor/reduce.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "tensor/creation.h"
#include "tensor/elementwise.h"
#include "tests/tensor/testing.h"

namespace gradflow {
namespace {

using testing::contains;
using testing::element;
using testing::elements;
using testing::error_message;
using testing::expect_tensor;
using testing::for_each_index;
using testing::Index;
using testing::sample;

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

// Which axes of an ndim tensor `axes` reduces (empty: all).
std::vector<bool> reduced_axes(const Axes& axes, int64_t ndim) {
  std::vector<bool> r(ndim, axes.empty());
  for (int64_t a : axes) r[a < 0 ? a + ndim : a] = true;
  return r;
}

// Sum, mean and variance by looping over every element of x and adding it
// into the slot of the kept shape it falls in.
struct Naive {
  Shape kept, dropped;
  std::vector<double> sum, mean, var0, var1;  // var with correction 0 and 1
};

Naive naive_moments(const Tensor& x, const Axes& axes) {
  std::vector<bool> red = reduced_axes(axes, x.ndim());
  Naive n;
  for (int64_t a = 0; a < x.ndim(); ++a) {
    n.kept.push_back(red[a] ? 1 : x.shape()[a]);
    if (!red[a]) n.dropped.push_back(x.shape()[a]);
  }
  Strides ks = contiguous_strides(n.kept);
  auto slot = [&](const Index& i) {
    int64_t s = 0;
    for (size_t a = 0; a < i.size(); ++a) s += red[a] ? 0 : i[a] * ks[a];
    return s;
  };
  int64_t slots = numel_of(n.kept), count = x.numel() / std::max<int64_t>(1, slots);
  n.sum.assign(slots, 0);
  std::vector<double> sq(slots, 0);
  for_each_index(x.shape(), [&](const Index& i) { n.sum[slot(i)] += element(x, i); });
  for (double s : n.sum) n.mean.push_back(s / count);
  for_each_index(x.shape(), [&](const Index& i) {
    double d = element(x, i) - n.mean[slot(i)];
    sq[slot(i)] += d * d;
  });
  for (double s : sq) n.var0.push_back(s / count), n.var1.push_back(s / (count - 1));
  return n;
}

TEST(Reduce, SumMeanVarOverAxesAndLayouts) {
  std::vector<Tensor> inputs = {
      sample({2, 3, 4}),
      sample({4, 2, 3}, DType::Float64, 2).permute({1, 2, 0}),  // (2, 3, 4), permuted
      sample({3, 5, 9}, DType::Float64, 3).slice(0, 1, 3).slice(2, 0, 8, 2).narrow(1, 1, 3),
      sample({2, 1, 4}, DType::Float64, 4).expand({2, 3, 4}),  // stride 0
  };
  std::vector<Axes> axes_list = {{0}, {1}, {2}, {-1}, {-3}, {0, 2}, {2, 0}, {1, -1}, {0, 1, 2}, {}};
  for (const Tensor& x : inputs) {
    ASSERT_EQ(x.shape(), (Shape{2, 3, 4}));
    for (const Axes& axes : axes_list) {
      Naive n = naive_moments(x, axes);
      for (bool keepdim : {false, true}) {
        SCOPED_TRACE("axes " + shape_str(axes) + " keepdim " + std::to_string(keepdim) +
                     " strides " + shape_str(x.strides()));
        const Shape& shape = keepdim ? n.kept : n.dropped;
        expect_tensor(sum(x, axes, keepdim), shape, n.sum, 1e-14);
        expect_tensor(mean(x, axes, keepdim), shape, n.mean, 1e-14);
        expect_tensor(var(x, axes, keepdim), shape, n.var1, 1e-12);
        expect_tensor(var(x, axes, keepdim, 0), shape, n.var0, 1e-12);
      }
    }
  }
}

// A matrix summed over its rows (a bias gradient) takes a loop of its own
// (column blocks held in registers); it must give the bits of the general
// loop, which sums each column down the rows in double: the same sum over
// the same matrix stored column by column, and the naive row-order sum.
TEST(Reduce, SumOverRowsOfAMatrixHasTheGeneralLoopsBits) {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    for (int64_t n : {1, 5, 32, 45, 70}) {
      const Tensor wide = sample({37, n + 3}, DType::Float64, n).to(dtype);
      for (const Tensor& x : {wide.narrow(1, 0, n).contiguous(), wide.narrow(1, 2, n)}) {
        SCOPED_TRACE(std::string(dtype_name(dtype)) + " n " + std::to_string(n) + " strides " +
                     shape_str(x.strides()));
        const Tensor by_columns = x.transpose(0, 1).contiguous().transpose(0, 1);
        const Tensor fast = sum(x, {0}), general = sum(by_columns, {0});
        EXPECT_EQ(fast.to_vector(), general.to_vector());
        EXPECT_EQ(sum_to(x, {n}).to_vector(), general.to_vector());
        const std::vector<double> naive = naive_moments(x, {0}).sum;
        EXPECT_EQ(fast.to_vector(), from_vector(naive, {n}, DType::Float64).to(dtype).to_vector());
      }
    }
  }
}

TEST(Reduce, HandValues) {
  Tensor x = from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, DType::Float64);
  expect_tensor(sum(x, {0}), {3}, {5, 7, 9});
  expect_tensor(sum(x, {1}, true), {2, 1}, {6, 15});
  expect_tensor(sum(x), {}, {21});
  expect_tensor(mean(x, {-1}), {2}, {2, 5});
  expect_tensor(var(from_vector({1, 2, 3, 4}, DType::Float64)), {}, {5.0 / 3});
  expect_tensor(var(from_vector({1, 2, 3, 4}, DType::Float64), {}, false, 0), {}, {1.25});
  expect_tensor(var(x, {1}), {2}, {1, 1});
  expect_tensor(sum(scalar_tensor(2.5)), {}, {2.5});
  expect_tensor(sum(zeros({0, 3}), {0}), {3}, {0, 0, 0});
  // float32 sums accumulate without losing the small terms entirely.
  Tensor f = full({1000}, 0.1);
  EXPECT_NEAR(sum(f).item(), 100.0, 1e-4);
  EXPECT_EQ(sum(f).dtype(), DType::Float32);
}

// The same float32 sum must not depend on the layout: summing 10^6 copies of
// 0.1f down a column. Along the last axis the kernel accumulates in double;
// along a leading axis it adds into the float32 output row by row, which
// drifts by about 1% (100958.3 instead of 100000).
TEST(Reduce, Float32SumOverLeadingAxisAccumulatesPrecisely) {
  Tensor x = full({1000000, 2}, 0.1);
  const double exact = 1e6 * static_cast<double>(0.1f);
  EXPECT_NEAR(sum(x.transpose(0, 1).contiguous(), {1}).at({0}), exact, 0.5);
  EXPECT_NEAR(sum(x, {0}).at({0}), exact, 0.5);
  EXPECT_NEAR(sum_to(x, {1, 2}).at({0, 1}), exact, 0.5);
}

TEST(Reduce, AxisErrors) {
  Tensor x = zeros({2, 3});
  EXPECT_EQ(error_message([&] { sum(x, {1, -1}); }), "sum: axis -1 appears twice");
  EXPECT_TRUE(contains(error_message([&] { sum(x, {2}); }), "sum: axis 2 is out of range"));
  EXPECT_TRUE(contains(error_message([&] { mean(x, {-3}); }), "axis -3"));
  EXPECT_TRUE(contains(error_message([&] { var(x, {5}); }), "axis 5"));
  EXPECT_TRUE(contains(error_message([&] { sum(zeros({2}, DType::Int64)); }), "floating"));
}

// Values and first indices of the largest element along `axis`, NaN first.
void expect_max(const Tensor& x, int64_t axis) {
  int ax = static_cast<int>(axis < 0 ? axis + x.ndim() : axis);
  Shape kept = x.shape(), dropped = x.shape();
  kept[ax] = 1;
  dropped.erase(dropped.begin() + ax);
  std::vector<double> values, indices;
  for_each_index(kept, [&](const Index& k) {
    Index i = k;
    double best = element(x, i);
    int64_t arg = 0;
    for (int64_t j = 1; j < x.shape()[ax]; ++j) {
      i[ax] = j;
      double v = element(x, i);
      if (!std::isnan(best) && (std::isnan(v) || v > best)) best = v, arg = j;
    }
    values.push_back(best);
    indices.push_back(static_cast<double>(arg));
  });
  for (bool keepdim : {false, true}) {
    SCOPED_TRACE("max axis " + std::to_string(axis) + " keepdim " + std::to_string(keepdim));
    MaxResult r = max(x, axis, keepdim);
    EXPECT_EQ(r.indices.dtype(), DType::Int64);
    expect_tensor(r.values, keepdim ? kept : dropped, values);
    expect_tensor(r.indices, keepdim ? kept : dropped, indices);
  }
}

TEST(Reduce, MaxValuesAndIndices) {
  Tensor x = sample({3, 4, 5});
  Tensor t = sample({5, 3, 4}, DType::Float32, 2).permute({1, 2, 0});
  // Ties (the first index wins) and NaN (wins wherever it is).
  Tensor ties = from_vector({1, 3, 3, 2, 7, 7, 7, 7, kNaN, 1, kNaN, 9, 5, 9, 5, kNaN}, {4, 4},
                            DType::Float64);
  for (int64_t axis : {0, 1, 2, -1, -3}) {
    expect_max(x, axis);
    expect_max(t, axis);
  }
  expect_max(ties, 0);
  expect_max(ties, 1);
  MaxResult r = max(ties, 1);
  expect_tensor(r.indices, {4}, {1, 0, 0, 3});
  expect_tensor(r.values, {4}, {3, 7, kNaN, kNaN});
  expect_tensor(max(from_vector({-kInf, -kInf, -5}, DType::Float64), 0).indices, {}, {2});
  std::vector<double> all = elements(x);
  expect_tensor(max(x), {}, {*std::max_element(all.begin(), all.end())});
  expect_tensor(max(x.transpose(0, 2)), {}, {max(x).item()});
  EXPECT_TRUE(contains(error_message([] { max(zeros({2, 0}), 1); }), "max"));
  EXPECT_TRUE(contains(error_message([] { max(zeros({2, 3}), 2); }), "max: axis 2"));
  EXPECT_TRUE(contains(error_message([] { max(zeros({0})); }), "max"));
}

TEST(Reduce, SumTo) {
  Tensor x = sample({2, 3, 4});
  struct Target {
    Shape shape;
    Axes axes;  // the axes of x that are summed away
  };
  for (const Target& t : {Target{{3, 1}, {0, 2}}, Target{{1, 4}, {0, 1}}, Target{{4}, {0, 1}},
                          Target{{2, 1, 4}, {1}}, Target{{}, {}}, Target{{1, 1, 1}, {}}}) {
    SCOPED_TRACE(shape_str(t.shape));
    Naive n = naive_moments(x, t.axes);
    expect_tensor(sum_to(x, t.shape), t.shape, n.sum, 1e-14);
    expect_tensor(sum_to(x.transpose(0, 1).contiguous().transpose(0, 1), t.shape), t.shape, n.sum,
                  1e-14);
  }
  EXPECT_EQ(sum_to(x, x.shape()).shape(), x.shape());
  std::string msg = error_message([&] { sum_to(x, {3, 2}); });
  EXPECT_TRUE(contains(msg, "sum_to") && contains(msg, "(2, 3, 4)")) << msg;
  EXPECT_TRUE(contains(error_message([&] { sum_to(x, {1, 2, 3, 4}); }), "sum_to"));
}

// softmax along `axis` by hand: subtract the row max, exponentiate, normalise.
void expect_softmax(const Tensor& x, int64_t axis, double tol) {
  int ax = static_cast<int>(axis < 0 ? axis + x.ndim() : axis);
  Shape kept = x.shape();
  kept[ax] = 1;
  std::vector<double> soft(x.numel()), logsoft(x.numel());
  Strides out = contiguous_strides(x.shape());
  for_each_index(kept, [&](const Index& k) {
    Index i = k;
    double m = -kInf, total = 0;
    for (i[ax] = 0; i[ax] < x.shape()[ax]; ++i[ax]) m = std::max(m, element(x, i));
    for (i[ax] = 0; i[ax] < x.shape()[ax]; ++i[ax]) total += std::exp(element(x, i) - m);
    for (i[ax] = 0; i[ax] < x.shape()[ax]; ++i[ax]) {
      int64_t flat = 0;
      for (size_t a = 0; a < i.size(); ++a) flat += i[a] * out[a];
      soft[flat] = std::exp(element(x, i) - m) / total;
      logsoft[flat] = element(x, i) - m - std::log(total);
    }
  });
  SCOPED_TRACE("softmax axis " + std::to_string(axis) + " strides " + shape_str(x.strides()));
  Tensor s = softmax(x, axis);
  expect_tensor(s, x.shape(), soft, tol);
  expect_tensor(log_softmax(x, axis), x.shape(), logsoft, tol);
  Shape ones_shape = kept;
  expect_tensor(sum(s, {axis}, true), ones_shape, std::vector<double>(numel_of(kept), 1.0), tol);
}

TEST(Reduce, SoftmaxAlongEachAxis) {
  Tensor x = mul(sample({2, 3, 4}), 5.0);
  Tensor p = mul(sample({4, 2, 3}, DType::Float64, 3), 5.0).permute({1, 2, 0});  // non-contiguous
  Tensor s = mul(sample({3, 6, 4}, DType::Float64, 4), 5.0).slice(1, 0, 6, 2).narrow(0, 1, 2);
  for (int64_t axis : {0, 1, 2, -1}) {
    expect_softmax(x, axis, 1e-14);
    expect_softmax(p, axis, 1e-14);
    expect_softmax(s, axis, 1e-14);
    expect_softmax(x.to(DType::Float32), axis, 1e-6);
    expect_softmax(p.to(DType::Float32), axis, 1e-6);
  }
  expect_tensor(softmax(from_vector({1000, 1000}, DType::Float64), 0), {2}, {0.5, 0.5});
  expect_tensor(softmax(from_vector({0, std::log(3.0)}, DType::Float64), 0), {2}, {0.25, 0.75},
                1e-15);
  EXPECT_TRUE(contains(error_message([] { softmax(zeros({2}), 1); }), "softmax: axis 1"));
  EXPECT_TRUE(contains(error_message([] { log_softmax(zeros({2}), -2); }), "log_softmax"));
}

TEST(Reduce, LogSoftmaxExtremeValues) {
  // Rounding: (x - m) - log(2) keeps every bit of log(0.5).
  Tensor big = log_softmax(from_vector({1e8, 1e8}), 0);
  EXPECT_EQ(big.at({0}), static_cast<double>(static_cast<float>(std::log(0.5))));
  EXPECT_EQ(big.at({1}), static_cast<double>(static_cast<float>(std::log(0.5))));
  // Spread wider than float's exp range: the max entry gets ~0, the others x - max.
  Tensor wide = log_softmax(from_vector({-431, 279, 427}), 0);
  EXPECT_TRUE(all_finite(wide));
  double lse = 427 + std::log1p(std::exp(279.0 - 427) + std::exp(-431.0 - 427));
  expect_tensor(wide, {3}, {-431 - lse, 279 - lse, 427 - lse}, 1e-7);
  expect_tensor(softmax(from_vector({-431, 279, 427}), 0), {3}, {0, std::exp(279.0 - 427), 1},
                1e-7);
}

TEST(Reduce, SoftmaxOfMaskedRows) {
  for (DType dt : {DType::Float32, DType::Float64}) {
    // Row 0 is fully masked (-inf), row 1 partly.
    Tensor x = from_vector({-kInf, -kInf, -kInf, 0, -kInf, std::log(3.0)}, {2, 3}, dt);
    expect_tensor(softmax(x, 1), {2, 3}, {0, 0, 0, 0.25, 0, 0.75}, 1e-7);
    expect_tensor(log_softmax(x, 1), {2, 3},
                  {-kInf, -kInf, -kInf, std::log(0.25), -kInf, std::log(0.75)}, 1e-7);
    // Along axis 0 of the transpose, the same rows.
    expect_tensor(softmax(x.transpose(0, 1), 0), {3, 2}, {0, 0.25, 0, 0, 0, 0.75}, 1e-7);
    // A masked key's weight is exactly 0, as the fused attention's is, not
    // float32's fast exp of -87 (1e-38): its value then adds nothing at all.
    EXPECT_EQ(softmax(x, 1).at({1, 1}), 0.0) << dtype_name(dt);
    EXPECT_EQ(softmax(x.transpose(0, 1), 0).at({1, 1}), 0.0) << dtype_name(dt);
  }
  EXPECT_EQ(softmax(zeros({2, 0}), 1).shape(), (Shape{2, 0}));
}

}  // namespace
}  // namespace gradflow
