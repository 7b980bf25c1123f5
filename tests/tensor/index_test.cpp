// Indexing by Int64 tensors, the scatter-add reverses, and concatenation.
#include "tensor/index.h"

#include <gtest/gtest.h>

#include "tensor/creation.h"
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

// Distinct values of any dtype (large enough to survive the cast to int64).
Tensor values(const Shape& shape, DType dtype, int64_t seed = 1) {
  return from_vector(testing::sample_values(numel_of(shape), 100, seed), shape, dtype);
}

// x's elements with the index along `axis` replaced by idx[i].
std::vector<double> naive_index_select(const Tensor& x, int axis, const std::vector<int64_t>& idx) {
  Shape shape = x.shape();
  shape[axis] = static_cast<int64_t>(idx.size());
  std::vector<double> out;
  for_each_index(shape, [&](const Index& o) {
    Index i = o;
    i[axis] = idx[o[axis]];
    out.push_back(element(x, i));
  });
  return out;
}

TEST(Index, IndexSelectEachAxisWithRepeats) {
  const std::vector<int64_t> idx = {2, 0, 2, 1, 2};
  Tensor index = from_indices(idx, {5});
  for (DType dt : {DType::Float64, DType::Float32, DType::Int64}) {
    std::vector<Tensor> inputs = {values({3, 3, 3}, dt),
                                  values({3, 4, 3}, dt, 2).permute({2, 0, 1}),
                                  values({4, 3, 5}, dt, 3).narrow(0, 1, 3).slice(2, 0, 5, 2)};
    for (const Tensor& x : inputs) {
      for (int axis : {0, 1, 2}) {
        SCOPED_TRACE("axis " + std::to_string(axis) + " strides " + shape_str(x.strides()));
        Tensor r = index_select(x, axis, index);
        EXPECT_EQ(r.dtype(), dt);
        Shape shape = x.shape();
        shape[axis] = 5;
        expect_tensor(r, shape, naive_index_select(x, axis, idx));
        expect_tensor(index_select(x, axis - 3, index), shape, elements(r));  // negative axis
      }
    }
  }
  // Embedding lookup: rows of a contiguous table at an offset.
  Tensor table = sample({6, 4}).narrow(0, 2, 3);
  expect_tensor(index_select(table, 0, from_indices({1, 1, 0}, {3})), {3, 4},
                naive_index_select(table, 0, {1, 1, 0}));
  expect_tensor(index_select(table, 1, from_indices({3}, {1})), {3, 1},
                naive_index_select(table, 1, {3}));
  EXPECT_EQ(index_select(table, 0, from_indices({}, {0})).shape(), (Shape{0, 4}));
  // A strided index tensor.
  Tensor strided = from_indices({0, 9, 2, 9, 1, 9}, {6}).slice(0, 0, 6, 2);
  expect_tensor(index_select(table, 0, strided), {3, 4}, naive_index_select(table, 0, {0, 2, 1}));
}

TEST(Index, IndexSelectErrors) {
  Tensor x = zeros({3, 4});
  EXPECT_EQ(error_message([&] {
              index_select(x, 0, from_indices({1, 5}, {2}));
            }),
            "index_select: index 5 is out of range for axis 0 of size 3");
  EXPECT_TRUE(contains(error_message([&] { index_select(x, 1, from_indices({-1}, {1})); }),
                       "index_select: index -1"));
  EXPECT_TRUE(contains(error_message([&] { index_select(x, 0, from_vector({1})); }),
                       "index_select: indices must be an int64 tensor"));
  EXPECT_TRUE(contains(error_message([&] {
                         index_select(x, 0, from_indices({0, 1}, {1, 2}));
                       }),
                       "index_select: indices must be 1-D"));
  EXPECT_TRUE(contains(error_message([&] { index_select(x, 2, from_indices({0}, {1})); }),
                       "index_select: axis 2"));
}

TEST(Index, IndexAddAccumulatesRepeats) {
  for (int axis : {0, 1, -1}) {
    Tensor dst = sample({3, 4}, DType::Float64, 1);
    std::vector<double> before = elements(dst);
    const std::vector<int64_t> idx = {1, 0, 1, 1};
    int ax = axis < 0 ? axis + 2 : axis;
    Shape src_shape = dst.shape();
    src_shape[ax] = 4;
    Tensor src = sample(src_shape, DType::Float64, 2);
    index_add_(dst, axis, from_indices(idx, {4}), src);
    std::vector<double> expected = before;
    for_each_index(src_shape, [&](const Index& s) {
      Index d = s;
      d[ax] = idx[s[ax]];
      expected[d[0] * 4 + d[1]] += element(src, s);
    });
    SCOPED_TRACE("axis " + std::to_string(axis));
    expect_tensor(dst, {3, 4}, expected, 1e-15);
  }
  // Hand-checked: three adds into row 0, none into row 2; through a transposed dst.
  Tensor base = zeros({2, 3});
  Tensor dst = base.transpose(0, 1);  // (3, 2)
  index_add_(dst, 0, from_indices({0, 0, 1, 0}, {4}),
             from_vector({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2}));
  expect_tensor(dst, {3, 2}, {1 + 3 + 7, 2 + 4 + 8, 5, 6, 0, 0});
  expect_tensor(base, {2, 3}, {11, 5, 0, 14, 6, 0});

  // Hand-checked, float32 rows into a contiguous dst (the embedding's
  // backward takes a row loop of its own for these).
  Tensor rows = full({3, 2}, 0.5);
  index_add_(rows, 0, from_indices({2, 0, 2}, {3}), from_vector({1, 2, 3, 4, 5, 6}, {3, 2}));
  expect_tensor(rows, {3, 2}, {3.5, 4.5, 0.5, 0.5, 6.5, 8.5});

  Tensor d = zeros({3, 2});
  std::string msg = error_message([&] { index_add_(d, 0, from_indices({0}, {1}), zeros({2, 2})); });
  EXPECT_TRUE(contains(msg, "index_add_") && contains(msg, "(2, 2)") && contains(msg, "(1, 2)"))
      << msg;
  EXPECT_EQ(error_message([&] {
              index_add_(d, 0, from_indices({3}, {1}), zeros({1, 2}));
            }),
            "index_add_: index 3 is out of range for axis 0 of size 3");
}

// out[..., j, ...] = x[..., index[..., j, ...], ...] along axis, by hand.
std::vector<double> naive_gather(const Tensor& x, int axis, const Tensor& index) {
  std::vector<double> out;
  for_each_index(index.shape(), [&](const Index& o) {
    Index i = o;
    i[axis] = static_cast<int64_t>(element(index, o));
    out.push_back(element(x, i));
  });
  return out;
}

TEST(Index, GatherAlongEachAxis) {
  Tensor x = sample({3, 4}, DType::Float64);
  // Index (2, 3) is smaller than x on the other axis, with repeats.
  Tensor i0 = from_indices({2, 0, 2, 1, 1, 0}, {2, 3});
  expect_tensor(gather(x, 0, i0), {2, 3}, naive_gather(x, 0, i0));
  Tensor i1 = from_indices({3, 3, 0, 1, 2, 1}, {2, 3});
  expect_tensor(gather(x, 1, i1), {2, 3}, naive_gather(x, 1, i1));
  expect_tensor(gather(x, -1, i1), {2, 3}, naive_gather(x, 1, i1));
  // Hand-checked: picking target logits, one per row.
  Tensor logits = from_vector({0, 1, 2, 10, 11, 12}, {2, 3}, DType::Float64);
  expect_tensor(gather(logits, 1, from_indices({2, 0}, {2, 1})), {2, 1}, {2, 10});
  // 3-D, non-contiguous x and index, float and int64 values.
  Tensor xt = sample({4, 2, 3}, DType::Float64, 2).permute({1, 2, 0});  // (2, 3, 4)
  const std::vector<int64_t> raw = {0, 3, 1, 2, 2, 0, 3, 1};
  for (int axis : {0, 1, 2}) {
    std::vector<int64_t> v;
    for (int64_t r : raw) v.push_back(r % xt.shape()[axis]);
    Tensor idx = from_indices(v, {2, 2, 2}).transpose(0, 2);
    SCOPED_TRACE("axis " + std::to_string(axis));
    expect_tensor(gather(xt, axis, idx), {2, 2, 2}, naive_gather(xt, axis, idx));
    Tensor xi = values({4, 2, 3}, DType::Int64, 3).permute({1, 2, 0});
    expect_tensor(gather(xi, axis, idx), {2, 2, 2}, naive_gather(xi, axis, idx));
  }
}

TEST(Index, GatherErrors) {
  Tensor x = zeros({3, 4});
  EXPECT_EQ(error_message([&] {
              gather(x, 1, from_indices({0, 4}, {1, 2}));
            }),
            "gather: index 4 is out of range for axis 1 of size 4");
  EXPECT_TRUE(contains(error_message([&] {
                         gather(x, 0, from_indices({-1}, {1, 1}));
                       }),
                       "gather: index -1"));
  EXPECT_TRUE(contains(error_message([&] {
                         gather(x, 0, from_indices({0, 0}, {2}));
                       }),
                       "gather: index of shape (2) must have the rank of (3, 4)"));
  EXPECT_TRUE(contains(error_message([&] {
                         gather(x, 0, from_indices({0, 0, 0, 0, 0}, {1, 5}));
                       }),
                       "gather"));
  EXPECT_TRUE(contains(error_message([&] { gather(x, 0, zeros({1, 1})); }), "int64"));
}

TEST(Index, ScatterAddAlongEachAxis) {
  for (int axis : {0, 1, -1}) {
    int ax = axis < 0 ? axis + 2 : axis;
    Tensor dst = sample({3, 4}, DType::Float64, 1).transpose(0, 1).contiguous().transpose(0, 1);
    std::vector<double> expected = elements(dst);
    Tensor idx = ax == 0 ? from_indices({2, 2, 0, 2, 1, 2}, {2, 3})
                         : from_indices({3, 3, 3, 0, 1, 3}, {2, 3});
    Tensor src = sample({2, 3}, DType::Float64, 3);
    for_each_index(idx.shape(), [&](const Index& s) {
      Index d = s;
      d[ax] = static_cast<int64_t>(element(idx, s));
      expected[d[0] * 4 + d[1]] += element(src, s);
    });
    scatter_add_(dst, axis, idx, src);
    SCOPED_TRACE("axis " + std::to_string(axis));
    expect_tensor(dst, {3, 4}, expected, 1e-15);
  }
  // Hand-checked: repeated targets add up.
  Tensor d = zeros({2, 3});
  scatter_add_(d, 1, from_indices({1, 1, 1, 0, 2, 0}, {2, 3}),
               from_vector({1, 2, 3, 4, 5, 6}, {2, 3}));
  expect_tensor(d, {2, 3}, {0, 6, 0, 10, 0, 5});

  std::string msg = error_message([&] {
    scatter_add_(d, 1, from_indices({5}, {1, 1}), zeros({1, 1}));
  });
  EXPECT_EQ(msg, "scatter_add_: index 5 is out of range for axis 1 of size 3");
  EXPECT_TRUE(contains(error_message([&] {
                         scatter_add_(d, 1, from_indices({0}, {1, 1}), zeros({1, 2}));
                       }),
                       "scatter_add_"));
  EXPECT_TRUE(
      contains(error_message([&] {
                 scatter_add_(d, 1, from_indices({0}, {1, 1}), zeros({1, 1}, DType::Float64));
               }),
               "scatter_add_"));
}

TEST(Index, CatAlongEachAxis) {
  Tensor a = sample({2, 3, 4}, DType::Float64, 1);
  Tensor b = sample({4, 3, 2}, DType::Float64, 2).permute({2, 1, 0});  // (2, 3, 4), non-contiguous
  for (int axis : {0, 1, 2, -1}) {
    int ax = axis < 0 ? axis + 3 : axis;
    Tensor c = a.narrow(ax, 0, 1);
    Shape out_shape = a.shape();
    out_shape[ax] = 2 * a.shape()[ax] + 1;
    std::vector<double> expected;
    for_each_index(out_shape, [&](const Index& o) {
      Index i = o;
      int64_t n = a.shape()[ax];
      if (o[ax] < n) return expected.push_back(element(a, i));
      i[ax] -= n;
      if (i[ax] < 1) return expected.push_back(element(c, i));
      i[ax] -= 1;
      expected.push_back(element(b, i));
    });
    SCOPED_TRACE("axis " + std::to_string(axis));
    expect_tensor(cat({a, c, b}, axis), out_shape, expected);
  }
  expect_tensor(cat({from_vector({1, 2}), from_vector({3})}, 0), {3}, {1, 2, 3});
  expect_tensor(cat({zeros({0, 2}), ones({1, 2})}, 0), {1, 2}, {1, 1});
  expect_tensor(cat({a}, 1), a.shape(), elements(a));
}

TEST(Index, CatErrors) {
  EXPECT_EQ(error_message([] {
              cat({zeros({2, 3}), zeros({2, 4})}, 0);
            }),
            "cat: shapes (2, 3) and (2, 4) differ outside axis 0");
  EXPECT_TRUE(contains(error_message([] {
                         cat({zeros({2, 3}), zeros({3, 3})}, 1);
                       }),
                       "differ outside axis 1"));
  EXPECT_TRUE(contains(error_message([] {
                         cat({zeros({2, 3}), zeros({2, 3, 1})}, 0);
                       }),
                       "cat: shapes (2, 3) and (2, 3, 1)"));
  EXPECT_TRUE(contains(error_message([] {
                         cat({zeros({2, 3}), zeros({2, 3}, DType::Float64)}, 0);
                       }),
                       "cat: dtypes differ"));
  EXPECT_EQ(error_message([] { cat({}, 0); }), "cat: no tensors given");
  EXPECT_TRUE(contains(error_message([] { cat({zeros({2, 3})}, 2); }), "cat: axis 2"));
}

}  // namespace
}  // namespace gradflow
