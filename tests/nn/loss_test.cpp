// Losses: the fused cross_entropy against its composed reference (values and
// logits gradients) for every option, gradient checks in float64, exactness
// at logits of +-1e8, all-ignored batches, argument errors; mse_loss.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "nn/loss.h"
#include "tests/nn/nn_check.h"

namespace gradflow::nn {
namespace {
using namespace gradflow::testing;

struct CeCase {
  const char* name;
  Shape logits;
  int64_t ignore_index;
  double smoothing;
  std::vector<int64_t> ignored_rows;  // flat rows whose target is set to ignore_index
};

const std::vector<CeCase> kCases = {
    {"plain", {6, 5}, -100, 0.0, {}},
    {"ignore_index", {6, 5}, -100, 0.0, {1, 4}},
    {"ignore_index 2 (a class id)", {6, 5}, 2, 0.0, {0, 3}},
    {"label_smoothing", {6, 5}, -100, 0.1, {}},
    {"smoothing and ignore", {6, 5}, -100, 0.1, {2}},
    {"3-D (B, T, V)", {2, 3, 5}, -100, 0.0, {}},
    {"3-D with both", {2, 3, 5}, 0, 0.1, {1, 5}},
};

Tensor targets_for(const CeCase& c, Generator& gen) {
  Shape shape(c.logits.begin(), c.logits.end() - 1);
  Tensor t = randint(0, c.logits.back(), shape, gen);
  std::vector<int64_t> flat(t.data<int64_t>(), t.data<int64_t>() + t.numel());
  for (int64_t& v : flat)  // keep real targets off the ignore id
    if (v == c.ignore_index) v = (v + 1) % c.logits.back();
  for (int64_t r : c.ignored_rows) flat[r] = c.ignore_index;
  return from_indices(flat, shape);
}

TEST(CrossEntropy, FusedMatchesTheReferenceInValueAndGradient) {
  Generator gen(1);
  for (const CeCase& c : kCases) {
    for (DType dtype : {DType::Float32, DType::Float64}) {
      SCOPED_TRACE(std::string(c.name) + " " + std::string(dtype_name(dtype)));
      const double tol = dtype == DType::Float32 ? 2e-6 : 1e-12;
      Tensor logits = randn(c.logits, gen, dtype, 0, 3), targets = targets_for(c, gen);
      Variable a(logits.clone(), true), b(logits.clone(), true);
      Variable fused = cross_entropy(a, targets, c.ignore_index, c.smoothing);
      Variable ref = cross_entropy_reference(b, targets, c.ignore_index, c.smoothing);
      EXPECT_EQ(fused.shape(), Shape{});
      EXPECT_EQ(fused.dtype(), dtype);
      EXPECT_NEAR(fused.item(), ref.item(), tol * std::max(1.0, std::abs(ref.item())));
      (fused * 2.5).backward();  // an upstream gradient other than 1
      (ref * 2.5).backward();
      expect_near_vec(a.grad(), b.grad().to_vector(), tol);
      for (int64_t r : c.ignored_rows)  // ignored rows get exactly nothing
        expect_all_equal(
            a.grad().reshape({a.numel() / c.logits.back(), c.logits.back()}).select(0, r), 0,
            "ignored row");
    }
  }
}

// Parts of a batch, each divided by the whole batch's counted targets, add
// up to the batch's mean loss and gradient, padding included.
TEST(CrossEntropy, PartsDividedByTheBatchCountAddUpToTheBatch) {
  Generator gen(21);
  Tensor logits = randn({4, 3, 5}, gen, DType::Float64);
  Tensor targets = from_indices({0, 4, -1, 2, -1, -1, 1, 1, 3, 0, 2, -1}, {4, 3});
  const int64_t count = counted_targets(targets, -1);
  EXPECT_EQ(count, 8);
  EXPECT_EQ(counted_targets(targets), 12);  // nothing is -100
  Variable whole_in(logits, true), part_in(logits, true);
  Variable whole = cross_entropy(whole_in, targets, -1, 0.1);
  whole.backward();
  double total = 0;
  for (auto [begin, end] : {std::pair<int64_t, int64_t>{0, 1}, {1, 4}}) {
    Variable part = cross_entropy(narrow(part_in, 0, begin, end - begin),
                                  targets.narrow(0, begin, end - begin), -1, 0.1, count);
    part.backward();
    total += part.item();
  }
  EXPECT_NEAR(total, whole.item(), 1e-14);
  expect_near_vec(part_in.grad(), whole_in.grad().to_vector(), 1e-14);
  EXPECT_THROW(cross_entropy(whole_in, targets, -1, 0.0, -1), Error);
  // The reference divides alike.
  Variable ref_in(logits, true);
  Variable ref =
      cross_entropy_reference(narrow(ref_in, 0, 1, 3), targets.narrow(0, 1, 3), -1, 0.1, count);
  Variable part =
      cross_entropy(narrow(Variable(logits), 0, 1, 3), targets.narrow(0, 1, 3), -1, 0.1, count);
  EXPECT_NEAR(ref.item(), part.item(), 1e-14);
  EXPECT_THROW(cross_entropy_reference(whole_in, targets, -1, 0.0, -1), Error);
}

TEST(CrossEntropy, ValueMatchesTheFormulaByHand) {
  // One row [1, 2, 3], target 0, smoothing 0.2: lse = log(e + e^2 + e^3).
  Variable x(from_vector({1, 2, 3}, {1, 3}, DType::Float64), true);
  const double lse = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  const double nll = lse - 1, uniform = lse - 2;
  Variable loss = cross_entropy(x, from_indices({0}, {1}), -100, 0.2);
  EXPECT_NEAR(loss.item(), 0.8 * nll + 0.2 * uniform, 1e-12);
  loss.backward();
  for (int64_t j = 0; j < 3; ++j)
    EXPECT_NEAR(x.grad().at({0, j}), std::exp(j + 1.0 - lse) - 0.2 / 3 - (j == 0 ? 0.8 : 0), 1e-12);
}

TEST(CrossEntropy, GradcheckInFloat64) {
  Generator gen(2);
  for (const CeCase& c : kCases) {
    SCOPED_TRACE(c.name);
    Tensor targets = targets_for(c, gen);
    auto fn = [&](const Vars& v) {
      return cross_entropy(v[0], targets, c.ignore_index, c.smoothing);
    };
    EXPECT_GRADCHECK(fn, {dense(c.logits)});
    EXPECT_GRADCHECK(fn, {transposed(c.logits)});
    EXPECT_GRADCHECK(fn, {strided(c.logits)});
  }
  // 1-D logits (V) with a 0-d target.
  EXPECT_GRADCHECK([](const Vars& v) { return cross_entropy(v[0], from_indices({2}, {})); },
                   {dense({4})});
}

TEST(CrossEntropyReference, GradcheckInFloat64) {
  Generator gen(3);
  for (const CeCase& c : kCases) {
    SCOPED_TRACE(c.name);
    Tensor targets = targets_for(c, gen);
    EXPECT_GRADCHECK(
        [&](const Vars& v) {
          return cross_entropy_reference(v[0], targets, c.ignore_index, c.smoothing);
        },
        {transposed(c.logits)});
  }
}

TEST(CrossEntropy, HugeLogitsGiveTheExactLoss) {
  for (DType dtype : {DType::Float32, DType::Float64}) {
    SCOPED_TRACE(dtype_name(dtype));
    for (int64_t target : {0, 1}) {
      Variable x(from_vector({1e8, -1e8}, {1, 2}, dtype), true);
      Variable loss = cross_entropy(x, from_indices({target}, {1}));
      EXPECT_EQ(loss.item(), target == 0 ? 0.0 : 2e8);
      loss.backward();
      expect_all_finite(x.grad(), "grad");
      expect_near_vec(x.grad(),
                      target == 0 ? std::vector<double>{0, 0} : std::vector<double>{1, -1}, 0);
      Variable r(from_vector({1e8, -1e8}, {1, 2}, dtype), true);
      EXPECT_EQ(cross_entropy_reference(r, from_indices({target}, {1})).item(), loss.item());
    }
    // Two equal huge logits: log 2, not 0 (m + log s would round log 2 away).
    Variable tie(from_vector({1e8, 1e8, -1e8}, {1, 3}, dtype), true);
    Variable loss = cross_entropy(tie, from_indices({1}, {1}));
    EXPECT_NEAR(loss.item(), std::log(2.0), 1e-6);
    loss.backward();
    expect_near_vec(tie.grad(), {0.5, -0.5, 0}, 1e-6);
    // Smoothing 0.1, target 0: 0.9 * 0 + 0.1 * mean_j(-log p_j) = 0.1 * (0 + 2e8) / 2.
    Variable s(from_vector({1e8, -1e8}, {1, 2}, dtype), true);
    EXPECT_NEAR(cross_entropy(s, from_indices({0}, {1}), -100, 0.1).item(), 1e7, 1.0);
  }
}

TEST(CrossEntropy, NegativeInfinityLogitWithoutSmoothingIsFinite) {
  // A vocabulary entry masked with -inf: p = 0 for it, and with no label
  // smoothing the loss is -log softmax([0, 1])[0] = log(1 + e), as PyTorch gives.
  const double inf = std::numeric_limits<double>::infinity();
  for (DType dtype : {DType::Float32, DType::Float64}) {
    SCOPED_TRACE(dtype_name(dtype));
    Variable x(from_vector({-inf, 0, 1}, {1, 3}, dtype), true);
    Variable loss = cross_entropy(x, from_indices({1}, {1}));
    EXPECT_NEAR(loss.item(), std::log(1 + std::exp(1.0)), 1e-6);
    loss.backward();
    expect_near_vec(x.grad(), {0, -1 / (1 + std::exp(-1.0)), 1 / (1 + std::exp(-1.0))}, 1e-6);
    Variable y(from_vector({-inf, 0, 1}, {1, 3}, dtype), true);
    EXPECT_NEAR(cross_entropy_reference(y, from_indices({1}, {1})).item(),
                std::log(1 + std::exp(1.0)), 1e-6);
  }
}

TEST(CrossEntropy, WideRowsMatchTheReferenceAndANaNLogitGivesANaN) {
  // 67 classes (the study's recall vocabulary): a row's max and sums run in
  // whole vector lanes and a tail, where the cases above fit in the tail.
  Generator gen(7);
  for (DType dtype : {DType::Float32, DType::Float64}) {
    for (double smoothing : {0.0, 0.1}) {
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " smoothing " + std::to_string(smoothing));
      const double tol = dtype == DType::Float32 ? 2e-6 : 1e-12;
      Tensor logits = randn({5, 67}, gen, dtype, 0, 3), targets = randint(0, 67, {5}, gen);
      // A row's largest logit in the tail, large enough that a max which
      // missed it would overflow exp(x - max) to inf.
      logits.select(0, 3).select(0, 66).fill_(1e4);
      Variable a(logits.clone(), true), b(logits.clone(), true);
      Variable fused = cross_entropy(a, targets, -100, smoothing);
      Variable ref = cross_entropy_reference(b, targets, -100, smoothing);
      EXPECT_NEAR(fused.item(), ref.item(), tol * std::max(1.0, std::abs(ref.item())));
      fused.backward();
      ref.backward();
      expect_near_vec(a.grad(), b.grad().to_vector(), tol);
      // A NaN anywhere in a row, first, inside the lanes or in the tail: NaN.
      for (int64_t at : {0, 40, 66}) {
        SCOPED_TRACE("NaN at " + std::to_string(at));
        Tensor bad = logits.clone();
        bad.select(0, 2).select(0, at).fill_(std::numeric_limits<double>::quiet_NaN());
        EXPECT_TRUE(std::isnan(cross_entropy(Variable(bad), targets, -100, smoothing).item()));
      }
    }
  }
}

// A mean of no terms, as PyTorch: the loss is NaN (it was 0) and the gradient 0. A part
// of a batch (divide_by > 0) with every target ignored adds 0 to the batch's loss.
TEST(CrossEntropy, AllTargetsIgnoredGiveANaNLossAndZeroGradAsPyTorch) {
  Variable x(dense({3, 4}), true), y(dense({3, 4}), true);
  Tensor targets = from_indices({-100, -100, -100}, {3});
  Variable loss = cross_entropy(x, targets);
  EXPECT_TRUE(std::isnan(loss.item()));
  loss.backward();
  expect_all_equal(x.grad(), 0, "fused grad");
  Variable ref = cross_entropy_reference(y, targets);
  EXPECT_TRUE(std::isnan(ref.item()));
  ref.backward();
  expect_all_equal(y.grad(), 0, "reference grad");
  EXPECT_EQ(cross_entropy(x, targets, -100, 0.0, 5).item(), 0.0);
}

// The targets are read again by the backward: an edit of them (a batch buffer reused) flipped
// the gradient's sign at the rows it changed. It is refused.
TEST(CrossEntropy, TargetsEditedBeforeTheBackwardAreRefused) {
  Variable x(dense({3, 4}), true);
  Tensor targets = from_indices({0, 1, 2}, {3});
  Variable loss = cross_entropy(x, targets);
  targets.set({1}, 3);
  try {
    loss.backward();
    ADD_FAILURE() << "backward ran on edited targets";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("backward of 'cross_entropy': a tensor it keeps"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(x.grad().defined());
}

TEST(CrossEntropy, RejectsBadTargetsAndShapes) {
  Variable x(dense({4, 3}), true);
  EXPECT_THROW(cross_entropy(x, from_indices({0, 1, 3, 2}, {4})), Error);   // 3 >= V
  EXPECT_THROW(cross_entropy(x, from_indices({0, -1, 1, 2}, {4})), Error);  // negative, not ignored
  EXPECT_NO_THROW(cross_entropy(x, from_indices({0, -100, 1, 2}, {4})));
  EXPECT_THROW(cross_entropy(x, from_indices({0, 1, 2}, {3})), Error);
  EXPECT_THROW(cross_entropy(x, from_indices({0, 1, 2, 0}, {4, 1})), Error);
  EXPECT_THROW(cross_entropy(x, from_indices({0, 1, 2, 0, 1, 2, 0, 1}, {2, 4})), Error);
  EXPECT_THROW(cross_entropy(x, from_vector({0, 1, 2, 0}, DType::Float64)), Error);
  EXPECT_THROW(cross_entropy(x, Tensor()), Error);
  EXPECT_THROW(cross_entropy(Variable(scalar_tensor(1.0)), from_indices({0}, {})), Error);
  EXPECT_THROW(cross_entropy(x, from_indices({0, 1, 2, 0}, {4}), -100, -0.1), Error);
  EXPECT_THROW(cross_entropy(x, from_indices({0, 1, 2, 0}, {4}), -100, 1.5), Error);
  EXPECT_THROW(cross_entropy_reference(x, from_indices({0, 1, 2}, {3})), Error);
  // A failed call records nothing: x has no gradient afterwards.
  EXPECT_FALSE(x.grad().defined());
}

TEST(MseLoss, ValueAndGradcheck) {
  Tensor p = dense({3, 4}), t = dense({3, 4});
  std::vector<double> pv = p.to_vector(), tv = t.to_vector();
  double expected = 0;
  for (size_t i = 0; i < pv.size(); ++i) expected += (pv[i] - tv[i]) * (pv[i] - tv[i]) / 12;
  EXPECT_NEAR(mse_loss(Variable(p), Variable(t)).item(), expected, 1e-12);
  EXPECT_GRADCHECK([](const Vars& v) { return mse_loss(v[0], v[1]); }, {p, t});
  EXPECT_GRADCHECK([](const Vars& v) { return mse_loss(v[0], v[1]); },
                   {transposed({3, 4}), strided({3, 4})});
  EXPECT_THROW(mse_loss(Variable(p), Variable(dense({4, 3}))), Error);
  EXPECT_THROW(mse_loss(Variable(p), Variable(dense({4}))), Error);
}

}  // namespace
}  // namespace gradflow::nn
