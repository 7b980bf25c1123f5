// backward_in_parallel: the parts of a batch forward and backward at once,
// their leaf gradients added in part order.
#include "autograd/data_parallel.h"

#include <cmath>
#include <limits>

#include "check.h"

namespace gradflow {
namespace {
using namespace testing;

// A small two-layer model on rows of x, with a mean over the rows of a part
// weighted by its share of the batch, as a training step weighs it.
struct Model {
  Variable w1{dense({5, 4}), true}, b1{dense({5}), true}, w2{dense({3, 5}), true};
  Variable loss(const Tensor& x, int64_t rows_in_batch) const {
    Variable h = gelu_linear(linear(Variable(x), w1, b1), w2, Variable());
    return sum(h * h) / static_cast<double>(rows_in_batch);
  }
  std::vector<Variable> params() const { return {w1, b1, w2}; }
};

std::function<Variable(int64_t)> parts_of(const Model& m, const Tensor& x, int64_t parts) {
  return [&m, x, parts](int64_t part) {
    const PartRange r = part_range(x.shape()[0], part, parts);
    return m.loss(x.narrow(0, r.begin, r.end - r.begin), x.shape()[0]);
  };
}

std::vector<std::vector<double>> grads(const Model& m) {
  std::vector<std::vector<double>> out;
  for (const Variable& p : m.params()) out.push_back(p.grad().to_vector());
  return out;
}

TEST(BackwardInParallel, EqualsOneBackwardOverTheWholeBatch) {
  const Tensor x = dense({7, 4});
  Model whole;
  Model parted;
  parted.w1 = Variable(whole.w1.data(), true);
  parted.b1 = Variable(whole.b1.data(), true);
  parted.w2 = Variable(whole.w2.data(), true);
  Variable loss = whole.loss(x, 7);
  loss.backward();
  for (int threads : {1, 2, 3}) {
    ThreadsFor pool(threads);
    for (int64_t parts : {1, 2, 3, 7}) {
      SCOPED_TRACE(std::to_string(parts) + " parts on " + std::to_string(threads) + " threads");
      for (Variable p : parted.params()) p.zero_grad();
      const std::vector<double> losses = backward_in_parallel(parts, parts_of(parted, x, parts));
      ASSERT_EQ(losses.size(), static_cast<size_t>(parts));
      double total = 0;
      for (double l : losses) total += l;
      EXPECT_NEAR(total, loss.item(), 1e-12);
      const auto want = grads(whole), got = grads(parted);
      for (size_t i = 0; i < want.size(); ++i)
        for (size_t j = 0; j < want[i].size(); ++j) EXPECT_NEAR(got[i][j], want[i][j], 1e-12);
    }
  }
}

TEST(BackwardInParallel, TheSameBitsEveryRunAndAddsToExistingGradients) {
  ThreadsFor pool(2);
  const Tensor x = dense({8, 4}).to(DType::Float32);
  Model m;
  for (Variable* p : {&m.w1, &m.b1, &m.w2}) *p = Variable(p->data().to(DType::Float32), true);
  std::vector<std::vector<double>> first;
  for (int run = 0; run < 3; ++run) {
    for (Variable p : m.params()) p.zero_grad();
    backward_in_parallel(2, parts_of(m, x, 2));
    if (run == 0) first = grads(m);
    EXPECT_EQ(grads(m), first);
  }
  // A second call adds to the gradients already there, as backward does.
  backward_in_parallel(2, parts_of(m, x, 2));
  const auto twice = grads(m);
  for (size_t i = 0; i < twice.size(); ++i)
    for (size_t j = 0; j < twice[i].size(); ++j)
      EXPECT_NEAR(twice[i][j], 2 * first[i][j], 1e-5 * (1 + std::abs(first[i][j])));
}

TEST(BackwardInParallel, ANonFinitePartIsNotBackpropagated) {
  Variable w(dense({3}), true);
  const std::vector<double> losses = backward_in_parallel(2, [&](int64_t part) {
    return part == 0 ? sum(w * w) : sum(w * std::numeric_limits<double>::infinity());
  });
  EXPECT_FALSE(std::isfinite(losses[1]));
  std::vector<double> want = (w.data() * 2.0).to_vector();  // the first part's only
  expect_near_vec(w.grad(), want, 1e-12);
}

TEST(BackwardInParallel, AnErrorInAPartIsRethrownAndTouchesNoGradient) {
  ThreadsFor pool(2);
  Variable w(dense({3}), true);
  EXPECT_THROW(backward_in_parallel(2,
                                    [&](int64_t part) {
                                      if (part == 1) fail("part 1 failed");
                                      return sum(w * w);
                                    }),
               Error);
  EXPECT_FALSE(w.grad().defined());
  EXPECT_THROW(backward_in_parallel(2, [&](int64_t) { return w * 2.0; }), Error);  // not a scalar
  EXPECT_THROW(backward_in_parallel(0, [&](int64_t) { return sum(w); }), Error);
}

TEST(BackwardInParallel, PartRangesCoverTheRowsInOrder) {
  for (int64_t n : {1, 7, 64})
    for (int64_t parts = 1; parts <= n; ++parts) {
      int64_t next = 0;
      for (int64_t p = 0; p < parts; ++p) {
        const PartRange r = part_range(n, p, parts);
        EXPECT_EQ(r.begin, next);
        EXPECT_GE(r.end - r.begin, n / parts);
        EXPECT_LE(r.end - r.begin, n / parts + 1);
        next = r.end;
      }
      EXPECT_EQ(next, n);
    }
}

}  // namespace
}  // namespace gradflow
