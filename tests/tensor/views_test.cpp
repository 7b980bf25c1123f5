// Views share storage and change only (shape, strides, offset); copies don't.
#include <gtest/gtest.h>

#include "tensor/creation.h"
#include "tensor/elementwise.h"
#include "tensor/reduce.h"
#include "tests/tensor/testing.h"

namespace gradflow {
namespace {

using testing::contains;
using testing::element;
using testing::elements;
using testing::error_message;
using testing::expect_tensor;

// 0, 1, ..., n-1 in float64, as a given shape.
Tensor iota(const Shape& shape) {
  std::vector<double> v(numel_of(shape));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  return from_vector(v, shape, DType::Float64);
}

TEST(Views, ReshapeAndViewInferMinusOne) {
  Tensor x = iota({12});
  Tensor r = x.reshape({3, -1});
  EXPECT_EQ(r.shape(), (Shape{3, 4}));
  EXPECT_EQ(r.storage(), x.storage());
  EXPECT_EQ(r.at({2, 1}), 9);
  Tensor v = x.view({-1, 2, 3});
  EXPECT_EQ(v.shape(), (Shape{2, 2, 3}));
  EXPECT_EQ(v.strides(), (Strides{6, 3, 1}));
  EXPECT_EQ(x.view({2, 1, -1, 1}).shape(), (Shape{2, 1, 6, 1}));
  EXPECT_EQ(x.flatten().storage(), x.storage());
  EXPECT_EQ(zeros({0, 3}).view({-1}).shape(), Shape{0});

  std::string msg = error_message([&] { x.reshape({5, -1}); });
  EXPECT_TRUE(contains(msg, "reshape") && contains(msg, "(12)")) << msg;
  msg = error_message([&] { x.view({-1, -1}); });
  EXPECT_TRUE(contains(msg, "view: only one size may be -1")) << msg;
  EXPECT_TRUE(contains(error_message([&] { x.view({5, 3}); }), "view"));
  EXPECT_TRUE(contains(error_message([&] { x.view({-2, -6}); }), "invalid size"));
}

TEST(Views, ViewOfTransposedFailsReshapeCopies) {
  Tensor x = iota({3, 4});
  Tensor t = x.transpose(0, 1);  // (4, 3), strides (1, 4)
  EXPECT_FALSE(t.is_contiguous());
  std::string msg = error_message([&] { t.view({12}); });
  EXPECT_TRUE(contains(msg, "view") && contains(msg, "(4, 3)") && contains(msg, "reshape")) << msg;
  Tensor r = t.reshape({12});
  EXPECT_NE(r.storage(), x.storage());
  expect_tensor(r, {12}, {0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11});
  EXPECT_TRUE(r.is_contiguous());
}

TEST(Views, ViewStridesOnNonContiguousInputs) {
  Tensor x = iota({4, 6});
  Tensor t = x.transpose(0, 1);  // (6, 4): t[i, k] = 6 k + i
  // Splitting the first axis of a transposed tensor needs no copy.
  Tensor v = t.view({2, 3, 4});
  EXPECT_EQ(v.storage(), x.storage());
  EXPECT_EQ(v.strides(), (Strides{3, 1, 6}));
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 4; ++k) EXPECT_EQ(element(v, {i, j, k}), 6 * k + 3 * i + j);
  // Size-1 axes may be added anywhere; the second axis may be split too.
  EXPECT_EQ(t.view({6, 1, 2, 2}).strides()[3], 6);
  // reshape takes the view when one exists.
  EXPECT_EQ(t.reshape({3, 2, 2, 2}).storage(), x.storage());

  // Every other row: (2, 6) with strides (12, 1). The rows split, but the two
  // rows cannot merge.
  Tensor s = x.slice(0, 0, 4, 2);
  Tensor sv = s.view({2, 2, 3});
  EXPECT_EQ(sv.strides(), (Strides{12, 3, 1}));
  EXPECT_EQ(element(sv, {1, 1, 2}), 17);
  EXPECT_TRUE(contains(error_message([&] { s.view({12}); }), "view"));
  expect_tensor(s.reshape({12}), {12}, {0, 1, 2, 3, 4, 5, 12, 13, 14, 15, 16, 17});

  // Every other column: (4, 3) with strides (6, 2). Rows follow each other at
  // 3 * 2, so the two axes merge into one of stride 2.
  Tensor even = x.slice(1, 0, 6, 2);
  Tensor ev = even.view({12});
  EXPECT_EQ(ev.strides(), Strides{2});
  EXPECT_EQ(ev.storage(), x.storage());
  expect_tensor(ev, {12}, {0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22});
  EXPECT_EQ(even.view({2, 6}).strides(), (Strides{12, 2}));

  // A permuted (2, 3, 4) as (3, 2, 4): axes 1 and 2 are not back to back.
  Tensor p = iota({2, 3, 4}).transpose(0, 1);
  EXPECT_TRUE(contains(error_message([&] { p.view({3, 8}); }), "view"));
  EXPECT_EQ(p.view({3, 2, 2, 2}).strides(), (Strides{4, 12, 2, 1}));
}

TEST(Views, TransposeAndPermuteShareStorage) {
  Tensor x = iota({2, 3, 4});
  Tensor t = x.transpose(0, -1);  // (4, 3, 2)
  EXPECT_EQ(t.shape(), (Shape{4, 3, 2}));
  EXPECT_EQ(element(t, {3, 1, 1}), 12 + 4 + 3);
  t.set({3, 1, 1}, -1);
  EXPECT_EQ(x.at({1, 1, 3}), -1);

  Tensor p = x.permute({2, 0, 1});  // p[k, i, j] = x[i, j, k]
  EXPECT_EQ(p.shape(), (Shape{4, 2, 3}));
  EXPECT_EQ(p.storage(), x.storage());
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t k = 0; k < 4; ++k) EXPECT_EQ(element(p, {k, i, j}), element(x, {i, j, k}));
  p.set({0, 1, 2}, 100);
  EXPECT_EQ(x.at({1, 2, 0}), 100);
  expect_tensor(p.contiguous(), {4, 2, 3}, elements(p));
  EXPECT_TRUE(p.contiguous().is_contiguous());

  EXPECT_TRUE(contains(error_message([&] { x.permute({0, 1}); }), "permute"));
  EXPECT_TRUE(contains(error_message([&] {
                         x.permute({0, 1, 1});
                       }),
                       "permute: axis 1 appears twice"));
  EXPECT_TRUE(contains(error_message([&] { x.permute({0, 1, 3}); }), "permute: axis 3"));
  EXPECT_EQ(error_message([&] {
              iota({2, 2}).transpose(0, 2);
            }),
            "transpose: axis 2 is out of range for a tensor of 2 dimensions");
}

TEST(Views, NarrowAndSlice) {
  Tensor x = iota({3, 5});
  Tensor n = x.narrow(1, 1, 3);
  expect_tensor(n, {3, 3}, {1, 2, 3, 6, 7, 8, 11, 12, 13});
  EXPECT_EQ(n.storage(), x.storage());
  EXPECT_FALSE(n.is_contiguous());
  expect_tensor(x.narrow(1, -2, 2), {3, 2}, {3, 4, 8, 9, 13, 14});
  Tensor rows = x.narrow(0, 1, 2);  // whole rows: contiguous, with an offset
  EXPECT_TRUE(rows.is_contiguous());
  EXPECT_EQ(rows.offset(), 5);
  n.set({2, 0}, -7);
  EXPECT_EQ(x.at({2, 1}), -7);
  std::string msg = error_message([&] { x.narrow(1, 3, 3); });
  EXPECT_TRUE(contains(msg, "narrow") && contains(msg, "[3, 6)")) << msg;
  EXPECT_TRUE(contains(error_message([&] { x.narrow(2, 0, 1); }), "narrow"));

  Tensor y = iota({2, 6});
  expect_tensor(y.slice(1, -4, -1), {2, 3}, {2, 3, 4, 8, 9, 10});
  expect_tensor(y.slice(1, 1, 6, 2), {2, 3}, {1, 3, 5, 7, 9, 11});
  expect_tensor(y.slice(1, 0, 100, 4), {2, 2}, {0, 4, 6, 10});  // end clamps
  expect_tensor(y.slice(-1, -100, 2), {2, 2}, {0, 1, 6, 7});    // start clamps
  EXPECT_EQ(y.slice(1, 4, 2).shape(), (Shape{2, 0}));           // empty
  EXPECT_EQ(y.slice(1, 7, 9).shape(), (Shape{2, 0}));
  Tensor s = y.slice(1, 1, 6, 2);
  s.set({1, 2}, 50);
  EXPECT_EQ(y.at({1, 5}), 50);
  EXPECT_TRUE(
      contains(error_message([&] { y.slice(1, 0, 2, 0); }), "slice: step must be positive"));
  EXPECT_TRUE(contains(error_message([&] { y.slice(-3, 0, 1); }), "slice"));
}

TEST(Views, SelectSqueezeUnsqueeze) {
  Tensor x = iota({2, 3, 4});
  Tensor s = x.select(1, -1);  // x[:, 2, :]
  expect_tensor(s, {2, 4}, {8, 9, 10, 11, 20, 21, 22, 23});
  s.set({1, 0}, -3);
  EXPECT_EQ(x.at({1, 2, 0}), -3);
  EXPECT_TRUE(contains(error_message([&] { x.select(1, 3); }), "select: index 3"));
  EXPECT_TRUE(contains(error_message([&] { x.select(1, -4); }), "select"));

  Tensor u = x.unsqueeze(-1);
  EXPECT_EQ(u.shape(), (Shape{2, 3, 4, 1}));
  EXPECT_EQ(x.unsqueeze(0).shape(), (Shape{1, 2, 3, 4}));
  Tensor mid = x.unsqueeze(1);
  EXPECT_EQ(mid.shape(), (Shape{2, 1, 3, 4}));
  EXPECT_TRUE(mid.is_contiguous());
  mid.set({0, 0, 1, 1}, 55);
  EXPECT_EQ(x.at({0, 1, 1}), 55);
  Tensor sq = mid.squeeze(1);
  EXPECT_EQ(sq.shape(), x.shape());
  EXPECT_EQ(sq.storage(), x.storage());
  EXPECT_EQ(elements(sq), elements(x));
  EXPECT_EQ(scalar_tensor(3).unsqueeze(0).shape(), Shape{1});
  std::string msg = error_message([&] { x.squeeze(1); });
  EXPECT_TRUE(contains(msg, "squeeze") && contains(msg, "(2, 3, 4)")) << msg;
  EXPECT_TRUE(contains(error_message([&] { x.unsqueeze(5); }), "unsqueeze"));
}

TEST(Views, ExpandRepeatsWithStrideZero) {
  Tensor col = iota({3, 1});
  Tensor e = col.expand({2, 3, 4});
  EXPECT_EQ(e.strides(), (Strides{0, 1, 0}));
  EXPECT_EQ(e.storage(), col.storage());
  EXPECT_FALSE(e.is_contiguous());
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 4; ++j) EXPECT_EQ(element(e, {b, i, j}), i);
  col.set({1, 0}, 9);
  EXPECT_EQ(element(e, {1, 1, 3}), 9);
  Tensor c = e.contiguous();
  EXPECT_NE(c.storage(), col.storage());
  EXPECT_EQ(c.strides(), (Strides{12, 4, 1}));
  EXPECT_EQ(c.at({1, 1, 2}), 9);
  EXPECT_EQ(scalar_tensor(2).expand({2, 2}).strides(), (Strides{0, 0}));
  EXPECT_EQ(col.expand({3, 2}).strides(), (Strides{1, 0}));
  std::string msg = error_message([&] { col.expand({2, 4}); });  // 3 cannot become 2
  EXPECT_TRUE(contains(msg, "expand") && contains(msg, "(3, 1)")) << msg;
  EXPECT_TRUE(contains(error_message([&] { col.expand({4}); }), "expand"));
}

TEST(Views, ReshapeOfExpanded) {
  Tensor row = iota({1, 4});
  Tensor e = row.expand({3, 4});
  Tensor v = e.reshape({3, 2, 2});  // splits the last axis: still a view, stride 0 kept
  EXPECT_EQ(v.storage(), row.storage());
  EXPECT_EQ(v.strides(), (Strides{0, 2, 1}));
  Tensor flat = e.reshape({12});  // merging a stride-0 axis needs a copy
  EXPECT_NE(flat.storage(), row.storage());
  expect_tensor(flat, {12}, {0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3});
}

TEST(Views, ContiguousOfEachView) {
  Tensor x = iota({3, 4});
  std::vector<Tensor> views = {x.transpose(0, 1), x.narrow(1, 1, 2), x.slice(0, 0, 3, 2),
                               x.select(1, 2), x.unsqueeze(1).expand({3, 2, 4})};
  for (const Tensor& v : views) {
    EXPECT_FALSE(v.is_contiguous()) << shape_str(v.shape());
    Tensor c = v.contiguous();
    EXPECT_TRUE(c.is_contiguous());
    EXPECT_NE(c.storage(), x.storage());
    EXPECT_EQ(c.strides(), contiguous_strides(v.shape()));
    EXPECT_EQ(c.shape(), v.shape());
    EXPECT_EQ(c.to_vector(), elements(v));
  }
  EXPECT_EQ(x.contiguous().storage(), x.storage());               // already contiguous
  EXPECT_EQ(x.select(0, 1).contiguous().storage(), x.storage());  // a whole row
}

TEST(Views, IsContiguousIgnoresSizeOneStrides) {
  Tensor x = iota({4});
  EXPECT_TRUE(make_view(x, {1, 4}, {99, 1}, 0).is_contiguous());
  EXPECT_TRUE(make_view(x, {4, 1}, {1, 7}, 0).is_contiguous());
  EXPECT_FALSE(make_view(x, {2, 2}, {1, 2}, 0).is_contiguous());
  EXPECT_TRUE(scalar_tensor(1).is_contiguous());
}

TEST(Views, CloneIsIndependent) {
  Tensor x = iota({2, 3});
  Tensor c = x.transpose(0, 1).clone();
  EXPECT_NE(c.storage(), x.storage());
  EXPECT_TRUE(c.is_contiguous());
  expect_tensor(c, {3, 2}, {0, 3, 1, 4, 2, 5});
  c.set({0, 0}, 100);
  x.set({1, 2}, -100);
  EXPECT_EQ(x.at({0, 0}), 0);
  EXPECT_EQ(c.at({2, 1}), 5);
  Tensor handle = x;  // copying the handle shares data
  handle.set({0, 1}, 8);
  EXPECT_EQ(x.at({0, 1}), 8);
}

TEST(Views, ToConvertsDtype) {
  Tensor x = from_vector({0.1, -2.7, 2.7, 1e10}, DType::Float64);
  Tensor f = x.to(DType::Float32);
  EXPECT_EQ(f.dtype(), DType::Float32);
  EXPECT_EQ(f.at({0}), static_cast<double>(0.1f));
  EXPECT_EQ(f.at({3}), static_cast<double>(1e10f));
  Tensor i = x.narrow(0, 0, 3).to(DType::Int64);
  expect_tensor(i, {3}, {0, -2, 2});  // truncation toward zero
  expect_tensor(i.to(DType::Float64), {3}, {0, -2, 2});
  EXPECT_EQ(x.to(DType::Float64).storage(), x.storage());  // same dtype: no copy
  Tensor t = iota({2, 3}).transpose(0, 1).to(DType::Float32);
  expect_tensor(t, {3, 2}, {0, 3, 1, 4, 2, 5});
}

TEST(Views, CopyBroadcastsAndConverts) {
  Tensor base = zeros({4, 3}, DType::Float32);
  Tensor dst = base.transpose(0, 1);  // (3, 4), non-contiguous
  Tensor row = from_vector({1.5, 2.5, 3.5, 4.5}, {1, 4}, DType::Float64);
  dst.copy_(row);  // broadcast over 3 rows, float64 -> float32
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j) EXPECT_EQ(base.at({j, i}), 1.5 + j);

  Tensor y = zeros({3, 5}, DType::Float64);
  y.narrow(1, 1, 3).copy_(from_vector({7, 8, 9}, {3, 1}, DType::Float32));
  expect_tensor(y, {3, 5}, {0, 7, 7, 7, 0, 0, 8, 8, 8, 0, 0, 9, 9, 9, 0});
  y.copy_(scalar_tensor(-1, DType::Int64));
  expect_tensor(y, {3, 5}, std::vector<double>(15, -1));

  Tensor ints = zeros({2}, DType::Int64);
  ints.copy_(from_vector({3.9, -3.9}, DType::Float64));
  expect_tensor(ints, {2}, {3, -3});

  std::string msg = error_message([&] { y.copy_(zeros({2, 5})); });
  EXPECT_TRUE(contains(msg, "copy_") && contains(msg, "(2, 5)") && contains(msg, "(3, 5)")) << msg;
  EXPECT_TRUE(contains(error_message([&] { y.copy_(zeros({3, 5, 1})); }), "copy_"));
  EXPECT_TRUE(contains(error_message([&] { Tensor().copy_(y); }), "copy_"));
}

TEST(Views, FillThroughAView) {
  Tensor x = zeros({3, 4}, DType::Float64);
  x.slice(1, 0, 4, 2).fill_(2);
  x.select(0, 2).fill_(5);
  expect_tensor(x, {3, 4}, {2, 0, 2, 0, 2, 0, 2, 0, 5, 5, 5, 5});
}

// Passing an undefined Tensor is a user error: it throws, never dereferences
// the null storage.
TEST(Views, UndefinedTensorThrows) {
  EXPECT_TRUE(contains(error_message([] { Tensor().fill_(1); }), "undefined"));
  EXPECT_TRUE(contains(error_message([] { Tensor().to_vector(); }), "undefined"));
  EXPECT_TRUE(contains(error_message([] { Tensor().item(); }), "undefined"));
  EXPECT_TRUE(contains(error_message([] { sum(Tensor()); }), "undefined"));
  EXPECT_TRUE(contains(error_message([] { all_finite(Tensor()); }), "undefined"));
}

}  // namespace
}  // namespace gradflow
