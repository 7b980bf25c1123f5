// Constants, ranges, host data, random fills, element access and printing.
#include "tensor/creation.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <set>

#include "tests/tensor/testing.h"

namespace gradflow {
namespace {

using testing::contains;
using testing::elements;
using testing::error_message;
using testing::expect_tensor;

TEST(Creation, ZerosOnesFull) {
  Tensor z = zeros({2, 3});
  EXPECT_EQ(z.dtype(), DType::Float32);
  expect_tensor(z, {2, 3}, std::vector<double>(6, 0.0));
  expect_tensor(ones({4}, DType::Float64), {4}, {1, 1, 1, 1});
  Tensor f = full({3, 1, 2}, -2.5, DType::Float64);
  EXPECT_EQ(f.dtype(), DType::Float64);
  expect_tensor(f, {3, 1, 2}, std::vector<double>(6, -2.5));
  Tensor fi = full({2}, 7.9, DType::Int64);
  EXPECT_EQ(fi.dtype(), DType::Int64);
  expect_tensor(fi, {2}, {7, 7});  // converted like static_cast: toward zero
  EXPECT_TRUE(z.is_contiguous());
}

TEST(Creation, LikeScalarAndEmptyShapes) {
  Tensor base = full({2, 2}, 3, DType::Float64);
  Tensor zl = zeros_like(base), ol = ones_like(base);
  EXPECT_EQ(zl.dtype(), DType::Float64);
  expect_tensor(zl, {2, 2}, {0, 0, 0, 0});
  expect_tensor(ol, {2, 2}, {1, 1, 1, 1});
  EXPECT_NE(zl.storage(), base.storage());

  Tensor s = scalar_tensor(4.25);
  EXPECT_EQ(s.ndim(), 0);
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.item(), 4.25);

  Tensor e = zeros({2, 0, 3});
  EXPECT_EQ(e.numel(), 0);
  EXPECT_TRUE(e.to_vector().empty());
  EXPECT_TRUE(contains(error_message([] { Tensor::empty({2, -1}); }), "empty"));
}

TEST(Creation, ArangeIntegerAndFractionalSteps) {
  expect_tensor(arange(5), {5}, {0, 1, 2, 3, 4});
  expect_tensor(arange(2, 6, 1, DType::Float64), {4}, {2, 3, 4, 5});
  expect_tensor(arange(1, 2.5, 0.5, DType::Float64), {3}, {1, 1.5, 2});
  // ceil((2.6 - 1) / 0.5) = 4: the last element 2.5 is below the end.
  expect_tensor(arange(1, 2.6, 0.5, DType::Float64), {4}, {1, 1.5, 2, 2.5});
  Tensor tenth = arange(0, 1, 0.1, DType::Float64);
  ASSERT_EQ(tenth.shape(), Shape{10});
  for (int i = 0; i < 10; ++i) EXPECT_NEAR(tenth.at({i}), 0.1 * i, 1e-15);
  expect_tensor(arange(-3, 3, 2, DType::Int64), {3}, {-3, -1, 1});
}

TEST(Creation, ArangeNegativeStepAndEmptyRanges) {
  expect_tensor(arange(5, 0, -1.5, DType::Float64), {4}, {5, 3.5, 2, 0.5});
  expect_tensor(arange(3, -1, -1, DType::Float64), {4}, {3, 2, 1, 0});
  EXPECT_EQ(arange(3, 1).shape(), Shape{0});      // end before start
  EXPECT_EQ(arange(3, 3).shape(), Shape{0});      // start == end
  EXPECT_EQ(arange(0, 4, -1).shape(), Shape{0});  // step points away from end
  EXPECT_EQ(arange(0).shape(), Shape{0});
  std::string msg = error_message([] { arange(0, 1, 0); });
  EXPECT_TRUE(contains(msg, "arange")) << msg;
  EXPECT_TRUE(contains(error_message([] { arange(0, INFINITY); }), "arange"));
}

TEST(Creation, FromVectorAndIndices) {
  Tensor t = from_vector({1, 2, 3, 4, 5, 6}, {2, 3}, DType::Float64);
  EXPECT_EQ(t.at({1, 0}), 4);
  EXPECT_EQ(t.at({0, 2}), 3);
  Tensor f = from_vector({0.1});
  EXPECT_EQ(f.shape(), Shape{1});
  EXPECT_EQ(f.item(), static_cast<double>(0.1f));  // rounded to float32
  std::string msg = error_message([] { from_vector({1, 2, 3, 4, 5}, {2, 3}); });
  EXPECT_EQ(msg, "from_vector: 5 values do not fill shape (2, 3)");
  EXPECT_TRUE(contains(error_message([] { from_vector({1, 2}, {3}); }), "from_vector"));

  Tensor idx = from_indices({4, -1, 9}, {3});
  EXPECT_EQ(idx.dtype(), DType::Int64);
  EXPECT_EQ(idx.data<int64_t>()[1], -1);
  EXPECT_TRUE(contains(error_message([] { from_indices({1, 2}, {3}); }), "from_indices"));
}

TEST(Creation, ElementAccessAndErrors) {
  Tensor t = zeros({2, 3}, DType::Float64);
  t.set({1, -1}, 5);
  EXPECT_EQ(t.at({1, 2}), 5);
  EXPECT_EQ(t.data<double>()[5], 5);
  EXPECT_TRUE(contains(error_message([&] { t.at({2, 0}); }), "at: index 2"));
  EXPECT_TRUE(contains(error_message([&] { t.set({0}, 1); }), "set"));
  EXPECT_TRUE(contains(error_message([&] { t.item(); }), "item"));
  EXPECT_TRUE(contains(error_message([&] { t.data<float>(); }), "data"));
  EXPECT_EQ(t.size(-1), 3);
  EXPECT_TRUE(contains(error_message([&] { t.size(2); }), "size"));
}

TEST(Creation, ToString) {
  Tensor m = from_vector({1, 2, 3, 4}, {2, 2});
  EXPECT_EQ(m.to_string(), "tensor([[1, 2],\n       [3, 4]], shape=(2, 2), dtype=float32)");
  EXPECT_EQ(Tensor().to_string(), "Tensor(undefined)");
  // A 0-d tensor prints its one value once.
  EXPECT_EQ(scalar_tensor(2.5).to_string(), "tensor(2.5, shape=(), dtype=float32)");
}

// ---- random -----------------------------------------------------------------

TEST(Random, SameSeedSameTensorsDifferentSeedsDiffer) {
  Generator g1(42), g2(42), g3(43);
  for (DType dt : {DType::Float32, DType::Float64}) {
    Tensor a = rand({64}, g1, dt), b = rand({64}, g2, dt), c = rand({64}, g3, dt);
    EXPECT_EQ(elements(a), elements(b));
    EXPECT_NE(elements(a), elements(c));
    Tensor na = randn({3, 5}, g1, dt), nb = randn({3, 5}, g2, dt), nc = randn({3, 5}, g3, dt);
    EXPECT_EQ(elements(na), elements(nb));
    EXPECT_NE(elements(na), elements(nc));
  }
  EXPECT_EQ(elements(randint(0, 1000, {50}, g1)), elements(randint(0, 1000, {50}, g2)));
  EXPECT_NE(elements(randint(0, 1000, {50}, g1)), elements(randint(0, 1000, {50}, g3)));
  // Successive draws from one generator differ.
  EXPECT_NE(elements(rand({8}, g1)), elements(rand({8}, g1)));
}

TEST(Random, DrawsAreOneRowMajorStream) {
  // The same stream fills any shape, so [6] and [2, 3] hold the same numbers,
  // and float32 is the float64 draw rounded.
  Generator g1(7), g2(7), g3(7);
  std::vector<double> flat = elements(randn({6}, g1, DType::Float64));
  EXPECT_EQ(elements(randn({2, 3}, g2, DType::Float64)), flat);
  std::vector<double> f32 = elements(randn({6}, g3, DType::Float32));
  for (size_t i = 0; i < 6; ++i)
    EXPECT_EQ(f32[i], static_cast<double>(static_cast<float>(flat[i])));
  // An odd count uses the first of the last pair: [5] is a prefix of [6].
  Generator g4(7);
  std::vector<double> five = elements(randn({5}, g4, DType::Float64));
  EXPECT_EQ(five, std::vector<double>(flat.begin(), flat.begin() + 5));
}

TEST(Random, RandnMomentsOn100kDraws) {
  Generator gen(123);
  const int n = 100000;
  std::vector<double> v = elements(randn({n}, gen, DType::Float64));
  double s = 0, s2 = 0, s4 = 0;
  int beyond3 = 0;
  for (double x : v) {
    s += x;
    s2 += x * x;
    s4 += x * x * x * x;
    beyond3 += std::abs(x) > 3;
  }
  double mean = s / n, var = s2 / n - mean * mean;
  // Standard errors: mean 1/sqrt(n) = 0.0032, variance sqrt(2/n) = 0.0045.
  EXPECT_NEAR(mean, 0.0, 0.015);
  EXPECT_NEAR(std::sqrt(var), 1.0, 0.015);
  EXPECT_NEAR(s4 / n, 3.0, 0.1);  // a Gaussian's fourth moment
  EXPECT_NEAR(beyond3 / static_cast<double>(n), 0.0027, 0.0008);

  std::vector<double> w = elements(randn({20000}, gen, DType::Float64, 5, 2));
  double ws = 0, ws2 = 0;
  for (double x : w) ws += x, ws2 += x * x;
  double wmean = ws / 20000;
  EXPECT_NEAR(wmean, 5.0, 0.05);
  EXPECT_NEAR(std::sqrt(ws2 / 20000 - wmean * wmean), 2.0, 0.05);
}

TEST(Random, RandRangeAndMean) {
  Generator gen(5);
  std::vector<double> v = elements(rand({20000}, gen, DType::Float64, -2, 3));
  double s = 0, lo = 1e9, hi = -1e9;
  for (double x : v) s += x, lo = std::min(lo, x), hi = std::max(hi, x);
  EXPECT_GE(lo, -2.0);
  EXPECT_LT(hi, 3.0);
  EXPECT_LT(lo, -1.99);
  EXPECT_GT(hi, 2.99);
  EXPECT_NEAR(s / 20000, 0.5, 0.05);  // sd of the mean: 5/sqrt(12 n) = 0.01
}

TEST(Random, RandintRangeAndCoverage) {
  Generator gen(9);
  Tensor t = randint(-3, 4, {5000}, gen);
  EXPECT_EQ(t.dtype(), DType::Int64);
  std::set<int64_t> seen;
  const int64_t* p = t.data<int64_t>();
  int64_t count_zero = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    EXPECT_GE(p[i], -3);
    EXPECT_LT(p[i], 4);
    seen.insert(p[i]);
    count_zero += p[i] == 0;
  }
  EXPECT_EQ(seen.size(), 7u);
  EXPECT_NEAR(count_zero / 5000.0, 1.0 / 7, 0.03);
  expect_tensor(randint(6, 7, {3}, gen), {3}, {6, 6, 6});
  std::string msg = error_message([&] { randint(2, 2, {1}, gen); });
  EXPECT_TRUE(contains(msg, "randint")) << msg;
  EXPECT_TRUE(contains(error_message([&] { rand({2}, gen, DType::Int64); }), "rand"));
}

// A range wider than INT64_MAX: high - low must be computed unsigned (it
// once overflowed int64, undefined behaviour that UBSan aborts on).
TEST(Random, RandintRangeWiderThanInt64Max) {
  Generator gen(3);
  const int64_t lo = -(int64_t{1} << 62) * 2, hi = (int64_t{1} << 62);  // width 3 * 2^62
  Tensor t = randint(lo, hi, {1000}, gen);
  for (double v : elements(t)) {
    EXPECT_GE(v, static_cast<double>(lo));
    EXPECT_LT(v, static_cast<double>(hi));
  }
}

TEST(Random, GeneratorStateSaveRestore) {
  Generator gen(2024);
  rand({10}, gen);  // advance somewhere arbitrary
  std::array<uint64_t, 4> saved = gen.state();
  std::vector<double> first = elements(randn({33}, gen, DType::Float64));
  uint64_t next_first = gen.next_u64();
  gen.set_state(saved);
  EXPECT_EQ(elements(randn({33}, gen, DType::Float64)), first);
  EXPECT_EQ(gen.next_u64(), next_first);

  Generator other(1);  // a different generator given the saved state agrees too
  other.set_state(saved);
  EXPECT_EQ(elements(randn({33}, other, DType::Float64)), first);

  gen.manual_seed(2024);
  Generator fresh(2024);
  EXPECT_EQ(gen.state(), fresh.state());
  for (int i = 0; i < 100; ++i) {
    double u = fresh.uniform();
    EXPECT_GE(u, 0.0);
    EXPECT_LT(u, 1.0);
    int64_t b = fresh.below(3);
    EXPECT_TRUE(b >= 0 && b < 3);
  }
}

TEST(Random, DefaultGeneratorIsSeedable) {
  manual_seed(77);
  std::vector<double> a = elements(rand({5}));
  manual_seed(77);
  EXPECT_EQ(elements(rand({5})), a);
}

// Inverse of an odd number modulo 2^64 (Newton's iteration doubles the bits).
uint64_t inverse_mod_2_64(uint64_t a) {
  uint64_t x = a;
  for (int i = 0; i < 6; ++i) x *= 2 - a * x;
  return x;
}

// A state whose next draw is next_u64() == ~0, i.e. uniform() == 1 - 2^-53,
// found by inverting xoshiro256**'s output function rotl(s1 * 5, 7) * 9.
std::array<uint64_t, 4> state_drawing_max() {
  uint64_t r = ~uint64_t{0} * inverse_mod_2_64(9);
  uint64_t rotated = (r >> 7) | (r << 57);
  return {1, rotated * inverse_mod_2_64(5), 2, 3};
}

TEST(Random, UniformEndpointIsExcluded) {
  Generator gen;
  gen.set_state(state_drawing_max());
  EXPECT_EQ(gen.next_u64(), ~uint64_t{0});
  gen.set_state(state_drawing_max());
  EXPECT_EQ(gen.uniform(), 1.0 - 0x1.0p-53);
}

// rand promises [low, high). Its largest draw, 1 - 2^-53, rounds up to high
// in float32, and in float64 when low + (high - low) u rounds.
TEST(Random, RandNeverReturnsHigh) {
  Generator gen;
  gen.set_state(state_drawing_max());
  EXPECT_LT(rand({1}, gen, DType::Float32).item(), 1.0);
  gen.set_state(state_drawing_max());
  EXPECT_LT(rand({1}, gen, DType::Float64, 1, 2).item(), 2.0);
}

// A shape whose element count overflows int64 is refused where it is made,
// not left to wrap ((2^32)^2 wrapped to 0, and a set() on it crashed).
TEST(Creation, ShapesThatOverflowAreRefused) {
  const int64_t two32 = int64_t{1} << 32;
  EXPECT_THROW(zeros({two32, two32}), Error);
  EXPECT_THROW(zeros({3037000500, 3037000500}), Error);
  EXPECT_THROW(zeros({1}).expand({two32, two32}), Error);
  EXPECT_THROW(zeros({4}).reshape({two32, two32, -1}), Error);
  EXPECT_EQ(numel_of({two32, 2}), two32 * 2);
  EXPECT_EQ(numel_of({two32, two32, 0}), 0);  // empty, however large the rest
  EXPECT_EQ(zeros({two32, two32, 0}).numel(), 0);
}

}  // namespace
}  // namespace gradflow
