// Elementwise ops against a plain loop over the broadcast output, on
// contiguous, transposed, sliced, expanded and broadcast operands.
#include "tensor/elementwise.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <utility>

#include "tensor/creation.h"
#include "tests/tensor/testing.h"

namespace gradflow {
namespace {

using testing::broadcast_index;
using testing::contains;
using testing::element;
using testing::elements;
using testing::error_message;
using testing::expect_tensor;
using testing::for_each_index;
using testing::Index;

using Fn1 = std::function<double(double)>;
using Fn2 = std::function<double(double, double)>;

// Half-integers plus 1/4: never zero, and equal values recur (ties for comparisons).
Tensor coarse(const Shape& shape, DType dtype, int64_t seed) {
  std::vector<double> v(numel_of(shape));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = std::round(4 * std::sin(0.7 * static_cast<double>((i + 1) * seed))) / 2 + 0.25;
  return from_vector(v, shape, dtype);
}

// f over the broadcast of a and b, computed in double then rounded to the
// dtype (exact for + - * / of floats: double holds the float result exactly).
std::vector<double> naive_binary(const Tensor& a, const Tensor& b, const Shape& out, Fn2 f) {
  std::vector<double> expected;
  for_each_index(out, [&](const Index& i) {
    double r =
        f(element(a, broadcast_index(i, a.shape())), element(b, broadcast_index(i, b.shape())));
    expected.push_back(a.dtype() == DType::Float32 ? static_cast<float>(r) : r);
  });
  return expected;
}

struct Case {
  std::string name;
  Tensor a, b;
  Shape out;
};

// The operand layouts every binary op is checked on.
std::vector<Case> binary_cases(DType dt) {
  return {
      {"contiguous", coarse({3, 4}, dt, 1), coarse({3, 4}, dt, 2), {3, 4}},
      {"transposed", coarse({4, 3}, dt, 1).transpose(0, 1), coarse({3, 4}, dt, 2), {3, 4}},
      {"both transposed",
       coarse({4, 3}, dt, 3).transpose(0, 1),
       coarse({4, 3}, dt, 2).transpose(1, 0),
       {3, 4}},
      {"sliced",
       coarse({5, 8}, dt, 1).slice(0, 1, 4).slice(1, 0, 8, 2),
       coarse({3, 6}, dt, 2).narrow(1, 2, 4),
       {3, 4}},
      {"[3,4]+[1,4]", coarse({3, 4}, dt, 1), coarse({1, 4}, dt, 2), {3, 4}},
      {"[4,1]*[1,4]", coarse({4, 1}, dt, 1), coarse({1, 4}, dt, 2), {4, 4}},
      {"scalar*[2]", coarse({}, dt, 5), coarse({2}, dt, 2), {2}},
      {"[2]*scalar", coarse({2}, dt, 2), coarse({}, dt, 5), {2}},
      {"[B,1,T,H]*[B,1,T,1]",
       coarse({2, 1, 3, 4}, dt, 1),
       coarse({2, 1, 3, 1}, dt, 2),
       {2, 1, 3, 4}},
      {"rank [4] with [3,1]", coarse({4}, dt, 1), coarse({3, 1}, dt, 3), {3, 4}},
      {"expanded",
       coarse({1, 4}, dt, 1).expand({3, 4}),
       coarse({4, 3}, dt, 2).transpose(0, 1),
       {3, 4}},
      {"empty", coarse({0, 4}, dt, 1), coarse({1, 4}, dt, 2), {0, 4}},
  };
}

struct BinaryOp {
  std::string name;
  std::function<Tensor(const Tensor&, const Tensor&)> op;
  Fn2 f;
};

TEST(Elementwise, BinaryOpsOnEveryLayout) {
  std::vector<BinaryOp> ops = {
      {"add", [](auto& a, auto& b) { return add(a, b); }, [](double x, double y) { return x + y; }},
      {"sub", [](auto& a, auto& b) { return sub(a, b); }, [](double x, double y) { return x - y; }},
      {"mul", [](auto& a, auto& b) { return mul(a, b); }, [](double x, double y) { return x * y; }},
      {"div", [](auto& a, auto& b) { return div(a, b); }, [](double x, double y) { return x / y; }},
      {"eq", [](auto& a, auto& b) { return eq(a, b); },
       [](double x, double y) { return x == y ? 1.0 : 0.0; }},
      {"ne", [](auto& a, auto& b) { return ne(a, b); },
       [](double x, double y) { return x != y ? 1.0 : 0.0; }},
      {"lt", [](auto& a, auto& b) { return lt(a, b); },
       [](double x, double y) { return x < y ? 1.0 : 0.0; }},
      {"le", [](auto& a, auto& b) { return le(a, b); },
       [](double x, double y) { return x <= y ? 1.0 : 0.0; }},
      {"gt", [](auto& a, auto& b) { return gt(a, b); },
       [](double x, double y) { return x > y ? 1.0 : 0.0; }},
      {"ge", [](auto& a, auto& b) { return ge(a, b); },
       [](double x, double y) { return x >= y ? 1.0 : 0.0; }},
  };
  for (DType dt : {DType::Float64, DType::Float32}) {
    for (const Case& c : binary_cases(dt)) {
      for (const BinaryOp& op : ops) {
        SCOPED_TRACE(op.name + " on " + c.name + " " + std::string(dtype_name(dt)));
        Tensor r = op.op(c.a, c.b);
        EXPECT_EQ(r.dtype(), dt);
        EXPECT_TRUE(r.is_contiguous());
        EXPECT_NE(r.storage(), c.a.storage());
        expect_tensor(r, c.out, naive_binary(c.a, c.b, c.out, op.f));
      }
    }
  }
}

TEST(Elementwise, ComparisonsSeeTies) {
  Tensor a = from_vector({1, 2, 3}, DType::Float64), b = from_vector({2, 2, 2}, DType::Float64);
  expect_tensor(eq(a, b), {3}, {0, 1, 0});
  expect_tensor(le(a, b), {3}, {1, 1, 0});
  expect_tensor(ge(a, b), {3}, {0, 1, 1});
  expect_tensor(gt(a, 2), {3}, {0, 0, 1});
  expect_tensor(lt(a, 2), {3}, {1, 0, 0});
}

TEST(Elementwise, ScalarFormsAndOperators) {
  for (DType dt : {DType::Float64, DType::Float32}) {
    Tensor a = coarse({4, 3}, dt, 1).transpose(0, 1);  // non-contiguous
    auto expect_map = [&](const Tensor& r, Fn1 f) {
      std::vector<double> e;
      for (double x : elements(a))
        e.push_back(dt == DType::Float32 ? static_cast<float>(f(x)) : f(x));
      expect_tensor(r, {3, 4}, e);
    };
    expect_map(add(a, 1.5), [](double x) { return x + 1.5; });
    expect_map(a + 1.5, [](double x) { return x + 1.5; });
    expect_map(sub(a, 0.75), [](double x) { return x - 0.75; });
    expect_map(a - 0.75, [](double x) { return x - 0.75; });
    expect_map(sub(2, a), [](double x) { return 2 - x; });
    expect_map(mul(a, -3), [](double x) { return -3 * x; });
    expect_map(a * -3, [](double x) { return -3 * x; });
    expect_map(-3 * a, [](double x) { return -3 * x; });
    expect_map(div(a, 4), [](double x) { return x / 4; });
    expect_map(a / 4, [](double x) { return x / 4; });
    expect_map(div(1, a), [](double x) { return 1 / x; });
    expect_map(-a, [](double x) { return -x; });
    expect_map(gt(a, 0.25), [](double x) { return x > 0.25 ? 1.0 : 0.0; });
    expect_map(lt(a, 0.25), [](double x) { return x < 0.25 ? 1.0 : 0.0; });
    Tensor b = coarse({3, 4}, dt, 2);
    expect_tensor(a + b, {3, 4}, naive_binary(a, b, {3, 4}, std::plus<>{}));
    expect_tensor(a - b, {3, 4}, naive_binary(a, b, {3, 4}, std::minus<>{}));
    expect_tensor(a * b, {3, 4}, naive_binary(a, b, {3, 4}, std::multiplies<>{}));
    expect_tensor(a / b, {3, 4}, naive_binary(a, b, {3, 4}, std::divides<>{}));
  }
}

struct UnaryOp {
  std::string name;
  std::function<Tensor(const Tensor&)> op;
  Fn1 f;
  bool positive_only;
};

TEST(Elementwise, UnaryOpsOnEveryLayout) {
  std::vector<UnaryOp> ops = {
      {"neg", [](auto& a) { return neg(a); }, [](double x) { return -x; }, false},
      {"exp", [](auto& a) { return exp(a); }, [](double x) { return std::exp(x); }, false},
      {"log", [](auto& a) { return log(a); }, [](double x) { return std::log(x); }, true},
      {"sqrt", [](auto& a) { return sqrt(a); }, [](double x) { return std::sqrt(x); }, true},
      {"tanh", [](auto& a) { return tanh(a); }, [](double x) { return std::tanh(x); }, false},
      {"pow2", [](auto& a) { return pow(a, 2); }, [](double x) { return x * x; }, false},
      {"pow3", [](auto& a) { return pow(a, 3); }, [](double x) { return x * x * x; }, false},
      {"pow-1", [](auto& a) { return pow(a, -1); }, [](double x) { return 1 / x; }, false},
      {"pow0.5", [](auto& a) { return pow(a, 0.5); }, [](double x) { return std::sqrt(x); }, true},
      {"relu", [](auto& a) { return relu(a); }, [](double x) { return x > 0 ? x : 0.0; }, false},
      {"gelu", [](auto& a) { return gelu(a); },
       [](double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }, false},
      {"abs", [](auto& a) { return abs(a); }, [](double x) { return x < 0 ? -x : x; }, false},
  };
  for (DType dt : {DType::Float64, DType::Float32}) {
    double tol = dt == DType::Float64 ? 1e-14 : 1e-6;
    for (const UnaryOp& op : ops) {
      double shift = op.positive_only ? 3 : 0;  // coarse values are above -2.75
      std::vector<Tensor> inputs = {
          add(coarse({3, 4}, dt, 1), shift),
          add(coarse({4, 3}, dt, 2), shift).transpose(0, 1),
          add(coarse({5, 8}, dt, 3), shift).slice(0, 1, 4).slice(1, 1, 8, 2),
          add(coarse({1, 4}, dt, 4), shift).expand({3, 4}),
          add(coarse({}, dt, 5), shift),
          coarse({0, 3}, dt, 1)};
      for (const Tensor& x : inputs) {
        SCOPED_TRACE(op.name + " on " + shape_str(x.shape()) + " strides " +
                     shape_str(x.strides()) + " " + std::string(dtype_name(dt)));
        std::vector<double> expected;
        for (double v : elements(x)) expected.push_back(op.f(v));
        Tensor r = op.op(x);
        EXPECT_EQ(r.dtype(), dt);
        EXPECT_TRUE(r.is_contiguous());
        expect_tensor(r, x.shape(), expected, tol);
      }
    }
  }
}

TEST(Elementwise, GeluHandValues) {
  // 0.5 x (1 + erf(x / sqrt 2)), values from an independent erf.
  Tensor x = from_vector({-3, -1, -0.5, 0, 0.5, 1, 2, 3}, DType::Float64);
  std::vector<double> expected = {
      -0.00404969409489031, -0.15865525393145707, -0.15426876936299344, 0.0,
      0.34573123063700656,  0.8413447460685429,   1.9544997361036416,   2.99595030590511};
  expect_tensor(gelu(x), {8}, expected, 1e-15);
  expect_tensor(gelu(x.to(DType::Float32)), {8}, expected, 2e-7);
}

// gelu_backward_with_value is gelu_backward and gelu from one pass: the same
// values to rounding (g++ may fuse the multiply-adds differently in the one
// loop than in the two), on contiguous, strided and expanded operands.
TEST(Elementwise, GeluBackwardWithValueMatchesGeluAndGeluBackward) {
  // |got - want| <= rel * scale: rel is about 2 ulp of a float, 1e-15 in double.
  auto expect_close = [](const Tensor& got, const Tensor& want, const std::vector<double>& scale) {
    ASSERT_EQ(got.shape(), want.shape());
    EXPECT_EQ(got.dtype(), want.dtype());
    EXPECT_TRUE(got.is_contiguous());
    const double rel = got.dtype() == DType::Float32 ? 2.4e-7 : 1e-15;
    const std::vector<double> g = elements(got), w = elements(want);
    for (size_t i = 0; i < g.size(); ++i)
      EXPECT_LE(std::abs(g[i] - w[i]), rel * scale[i]) << "at flat index " << i;
  };
  for (DType dt : {DType::Float64, DType::Float32}) {
    // x from -6 to 6 in steps of 1/16: through 0, both tails, and across
    // fast::erf's seams at x = sqrt 2 and 3.95 sqrt 2 (and their negatives).
    const Tensor x = arange(-6, 6, 0.0625, dt).reshape({12, 16});
    const Tensor xt = arange(-6, 6, 0.0625, dt).reshape({16, 12}).transpose(0, 1);
    const Tensor g = coarse({12, 16}, dt, 3);
    const Tensor g_sliced = coarse({12, 32}, dt, 4).slice(1, 0, 32, 2);
    const Tensor x_expanded = arange(-4, 4, 0.5, dt).reshape({1, 16}).expand({12, 16});
    const std::vector<std::pair<Tensor, Tensor>> cases = {
        {g, x},
        {g, xt},
        {g_sliced, x},
        {g_sliced, xt},
        {g, x_expanded},
        {coarse({}, dt, 5), coarse({}, dt, 6)},
        {coarse({0, 3}, dt, 1), coarse({0, 3}, dt, 2)}};
    for (const auto& [grad, xs] : cases) {
      SCOPED_TRACE("grad strides " + shape_str(grad.strides()) + ", x strides " +
                   shape_str(xs.strides()) + " " + std::string(dtype_name(dt)));
      const Tensor dx = gelu_backward(grad, xs), value = gelu(xs);
      const GeluBackward r = gelu_backward_with_value(grad, xs);
      // grad_x is grad (Phi(x) + x phi(x)), whose two terms cancel near
      // x = -0.75: rounding is relative to grad there, not to the result.
      std::vector<double> dx_scale, value_scale;
      for (double v : elements(value)) value_scale.push_back(std::abs(v));
      const std::vector<double> gs = elements(grad), dxs = elements(dx);
      for (size_t i = 0; i < gs.size(); ++i) dx_scale.push_back(std::abs(dxs[i]) + std::abs(gs[i]));
      expect_close(r.grad_x, dx, dx_scale);
      expect_close(r.value, value, value_scale);
    }
  }
  // Handed the only handle to grad, the kernel writes grad_x over it; a grad
  // someone else still holds is left alone.
  for (DType dt : {DType::Float64, DType::Float32}) {
    const Tensor x = arange(-3, 3, 0.125, dt).reshape({4, 12});
    const Tensor held = coarse({4, 12}, dt, 7), kept = held.clone();
    const GeluBackward copied = gelu_backward_with_value(held, x);
    EXPECT_NE(copied.grad_x.storage(), held.storage());
    EXPECT_EQ(held.to_vector(), kept.to_vector());
    Tensor given = held.clone();
    const Storage* buffer = given.storage().get();
    const GeluBackward reused = gelu_backward_with_value(std::move(given), x);
    EXPECT_EQ(reused.grad_x.storage().get(), buffer);
    EXPECT_EQ(reused.grad_x.to_vector(), copied.grad_x.to_vector());
    EXPECT_EQ(reused.value.to_vector(), copied.value.to_vector());
  }
  const Tensor a = zeros({3, 4}), b = zeros({4, 3});
  const std::string msg = error_message([&] { gelu_backward_with_value(a, b); });
  EXPECT_TRUE(contains(msg, "gelu_backward_with_value") && contains(msg, "(3, 4)") &&
              contains(msg, "(4, 3)"))
      << msg;
  const Tensor row = zeros({1, 4});  // would broadcast, but this kernel does not
  EXPECT_TRUE(contains(error_message([&] { gelu_backward_with_value(a, row); }),
                       "gelu_backward_with_value: grad of shape (3, 4)"));
  EXPECT_TRUE(contains(error_message([&] { gelu_backward_with_value(a, a.to(DType::Float64)); }),
                       "gelu_backward_with_value: dtypes differ"));
}

TEST(Elementwise, DtypeAndShapeErrors) {
  Tensor f32 = zeros({3, 4}), f64 = zeros({3, 4}, DType::Float64);
  EXPECT_EQ(error_message([&] { add(f32, f64); }), "add: dtypes differ: float32 and float64");
  EXPECT_EQ(error_message([&] { mul(f64, f32); }), "mul: dtypes differ: float64 and float32");
  EXPECT_TRUE(contains(error_message([&] { lt(f32, f64); }), "lt: dtypes differ"));
  std::string msg = error_message([&] { sub(f32, zeros({2, 4})); });
  EXPECT_TRUE(contains(msg, "sub") && contains(msg, "(3, 4)") && contains(msg, "(2, 4)")) << msg;
  msg = error_message([&] { div(zeros({2, 3, 4}), zeros({5, 1})); });
  EXPECT_TRUE(contains(msg, "div") && contains(msg, "(2, 3, 4)") && contains(msg, "(5, 1)")) << msg;
  Tensor ints = zeros({2}, DType::Int64);
  EXPECT_EQ(error_message([&] { exp(ints); }), "exp: expected a floating dtype, got int64");
  EXPECT_TRUE(contains(error_message([&] { add(ints, ints); }), "add"));
  EXPECT_TRUE(contains(error_message([&] { add(Tensor(), f32); }), "add: undefined tensor"));
  EXPECT_TRUE(contains(error_message([&] { relu(Tensor()); }), "relu"));
}

TEST(Elementwise, WhereSelectsWithBroadcast) {
  for (DType dt : {DType::Float64, DType::Float32}) {
    Tensor a = coarse({4, 3}, dt, 1).transpose(0, 1);  // (3, 4)
    Tensor b = coarse({1, 4}, dt, 2);
    for (DType cdt : {DType::Float64, DType::Int64, DType::Float32}) {
      Tensor cond = from_vector({1, 0, -2}, {3, 1}, cdt);  // any non-zero is true
      std::vector<double> expected;
      for_each_index({3, 4}, [&](const Index& i) {
        expected.push_back(i[0] != 1 ? element(a, i) : element(b, {0, i[1]}));
      });
      expect_tensor(where(cond, a, b), {3, 4}, expected);
    }
    Tensor mask = gt(a, b);
    expect_tensor(where(mask, a, b), {3, 4},
                  naive_binary(a, b, {3, 4}, [](double x, double y) { return std::max(x, y); }));
  }
  EXPECT_TRUE(
      contains(error_message([] { where(ones({2}), zeros({2}), zeros({2}, DType::Float64)); }),
               "where: dtypes differ"));
  EXPECT_TRUE(contains(error_message([] { where(ones({3}), zeros({2}), zeros({2})); }), "where"));
}

TEST(Elementwise, MaskedFill) {
  Tensor x = from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, DType::Float64);
  Tensor row_mask = from_indices({0, 1, 1}, {1, 3});
  expect_tensor(masked_fill(x, row_mask, -1e9), {2, 3}, {1, -1e9, -1e9, 4, -1e9, -1e9});
  Tensor causal = from_vector({0, 1, 0, 0, 0, 0}, {2, 3});
  expect_tensor(masked_fill(x.to(DType::Float32), causal, -INFINITY), {2, 3},
                {1, -INFINITY, 3, 4, 5, 6});
  expect_tensor(masked_fill(x.transpose(0, 1), from_vector({1, 0}, DType::Float64), 0), {3, 2},
                {0, 4, 0, 5, 0, 6});
  std::string msg = error_message([&] { masked_fill(x, zeros({2, 2, 3}), 0); });
  EXPECT_TRUE(contains(msg, "masked_fill") && contains(msg, "(2, 2, 3)") && contains(msg, "(2, 3)"))
      << msg;
}

TEST(Elementwise, AllFinite) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = INFINITY;
  EXPECT_TRUE(all_finite(from_vector({1, -1e300, 1e300, 0}, DType::Float64)));
  EXPECT_TRUE(all_finite(from_vector({3.0e38, -3.0e38})));
  EXPECT_FALSE(all_finite(from_vector({1, nan, 2}, DType::Float64)));
  EXPECT_FALSE(all_finite(from_vector({1, 2, inf})));
  EXPECT_FALSE(all_finite(from_vector({-inf, 2}, DType::Float64)));
  EXPECT_TRUE(all_finite(zeros({0, 3})));
  EXPECT_TRUE(all_finite(scalar_tensor(7)));
  EXPECT_FALSE(all_finite(scalar_tensor(nan)));
  // Only the view's elements count: the NaN at [1, 2] is outside the first.
  Tensor m = from_vector({1, 2, 3, 4, 5, nan}, {2, 3}, DType::Float64);
  EXPECT_TRUE(all_finite(m.narrow(1, 0, 2)));
  EXPECT_FALSE(all_finite(m.transpose(0, 1)));
  EXPECT_FALSE(all_finite(m.select(0, 1)));
  EXPECT_TRUE(contains(error_message([] { all_finite(zeros({1}, DType::Int64)); }), "all_finite"));
}

TEST(Elementwise, AddInPlace) {
  Tensor base = from_vector({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {4, 3}, DType::Float64);
  Tensor dst = base.transpose(0, 1);  // (3, 4): dst[i, j] = 3 j + i
  add_(dst, from_vector({10, 20, 30}, {3, 1}, DType::Float64));
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 4; ++j) EXPECT_EQ(base.at({j, i}), 3 * j + i + 10 * (i + 1));

  Tensor acc = zeros({2, 3});
  Tensor g = coarse({2, 3}, DType::Float32, 1);
  add_(acc, g);
  add_(acc, g);
  std::vector<double> twice;
  for (double v : elements(g)) twice.push_back(2 * v);
  expect_tensor(acc, {2, 3}, twice);
  add_(acc, scalar_tensor(1));
  for (double& v : twice) v += 1;
  expect_tensor(acc, {2, 3}, twice);

  Tensor row = zeros({1, 3});
  std::string msg = error_message([&] { add_(row, zeros({2, 3})); });
  EXPECT_TRUE(contains(msg, "add_") && contains(msg, "(2, 3)") && contains(msg, "(1, 3)")) << msg;
  EXPECT_TRUE(contains(error_message([&] {
                         add_(acc, zeros({2, 3}, DType::Float64));
                       }),
                       "add_: dtypes differ"));
}

}  // namespace
}  // namespace gradflow
