// nn::training_step (nn/optim/training_step.h): the schedule's lr at the optimizer's count, the
// clip and the norm it measured, each non-finite policy, by hand on SGD where a step is lr * g.
#include "nn/optim/training_step.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "tensor/ops.h"
#include "tests/tensor/testing.h"

namespace gradflow::nn {
namespace {

using testing::error_of;

constexpr double kInf = std::numeric_limits<double>::infinity();

Variable param(const std::vector<double>& values) {
  return Variable(from_vector(values, DType::Float64), /*requires_grad=*/true);
}

void give_grad(Variable p, const std::vector<double>& g) {
  p.set_grad(from_vector(g, DType::Float64));
}

std::vector<double> values(const Variable& p) { return p.data().to_vector(); }

TEST(TrainingStep, SetsTheScheduleLrAtTheOptimizersCountThenSteps) {
  // linear_warmup(0.1, 4): 0.1 * n / 4 on updates n = 1 to 4, then 0.1 (0.1 * 0.75 is not the
  // double nearest 0.075).
  Variable p = param({1.0});
  SGD sgd({p}, /*lr=*/7.0);  // the constructor's lr is overwritten by the schedule's
  const LrSchedule schedule = LrSchedule::linear_warmup(0.1, 4);
  double expected = 1.0;
  for (double lr : {0.025, 0.05, 0.1 * 0.75, 0.1, 0.1}) {
    give_grad(p, {1.0});
    const StepReport r = training_step(sgd, schedule, /*loss=*/1.0);
    EXPECT_EQ(r.lr, lr);
    EXPECT_EQ(sgd.lr(), lr);
    EXPECT_EQ(r.grad_norm, 1.0);
    EXPECT_TRUE(r.updated);
    EXPECT_FALSE(r.non_finite || r.stop);
    expected -= lr;
    EXPECT_DOUBLE_EQ(values(p)[0], expected);
  }
  EXPECT_EQ(sgd.step_count(), 5);
}

TEST(TrainingStep, ClipsToTheBoundAndReportsTheNormBeforeIt) {
  // Gradient (3, 4): norm 5, clipped to 1 as (3, 4) / (5 + 1e-6); the step is lr 0.1 times that.
  Variable p = param({1.0, -2.0});
  SGD sgd({p}, 0.1);
  give_grad(p, {3.0, 4.0});
  const StepReport r = training_step(sgd, LrSchedule::constant(0.1), 2.5, {.clip = 1.0});
  EXPECT_EQ(r.grad_norm, 5.0);
  EXPECT_DOUBLE_EQ(values(p)[0], 1.0 - 0.1 * 3.0 / (5 + 1e-6));
  EXPECT_DOUBLE_EQ(values(p)[1], -2.0 - 0.1 * 4.0 / (5 + 1e-6));
  // clip 0: the norm is measured and the gradient used as it is.
  give_grad(p, {3.0, 4.0});
  const double before = values(p)[0];
  EXPECT_EQ(training_step(sgd, LrSchedule::constant(0.1), 2.5).grad_norm, 5.0);
  EXPECT_DOUBLE_EQ(values(p)[0], before - 0.1 * 3.0);
}

TEST(TrainingStep, ANonFiniteLossUpdatesNothingAndStopsUnderTwoOfThePolicies) {
  for (NonFinitePolicy policy :
       {NonFinitePolicy::kSkip, NonFinitePolicy::kSkipAndStop, NonFinitePolicy::kDiverge}) {
    for (double loss : {std::nan(""), kInf}) {
      Variable p = param({1.0});
      SGD sgd({p}, 0.1, /*momentum=*/0.9);
      give_grad(p, {2.0});
      const StepReport r =
          training_step(sgd, LrSchedule::constant(0.1), loss, {.clip = 1, .non_finite = policy});
      EXPECT_TRUE(r.non_finite);
      EXPECT_FALSE(r.updated);
      EXPECT_EQ(r.stop, policy != NonFinitePolicy::kSkip);
      EXPECT_TRUE(std::isnan(r.grad_norm));  // not measured
      EXPECT_EQ(r.lr, 0.1);
      EXPECT_EQ(values(p)[0], 1.0);
      EXPECT_EQ(sgd.step_count(), 0);
      EXPECT_FALSE(p.grad().defined());  // dropped
    }
  }
}

TEST(TrainingStep, ANonFiniteGradientIsSkippedOrUnderDivergeApplied) {
  for (NonFinitePolicy policy : {NonFinitePolicy::kSkip, NonFinitePolicy::kSkipAndStop}) {
    Variable a = param({1.0}), b = param({2.0});
    SGD sgd({a, b}, 0.1);
    give_grad(a, {3.0});
    give_grad(b, {kInf});
    const StepReport r =
        training_step(sgd, LrSchedule::constant(0.1), 1.0, {.clip = 1, .non_finite = policy});
    EXPECT_EQ(r.grad_norm, kInf);
    EXPECT_TRUE(r.non_finite);
    EXPECT_FALSE(r.updated);
    EXPECT_EQ(r.stop, policy == NonFinitePolicy::kSkipAndStop);
    EXPECT_EQ(values(a)[0], 1.0);  // the finite gradient is not applied either
    EXPECT_EQ(values(b)[0], 2.0);
    EXPECT_FALSE(a.grad().defined());
  }
  // kDiverge: the gradients are applied as clip_grad_norm leaves them, all NaN for a NaN norm.
  Variable a = param({1.0}), b = param({2.0});
  SGD sgd({a, b}, 0.1);
  give_grad(a, {3.0});
  give_grad(b, {std::nan("")});
  const StepReport r = training_step(sgd, LrSchedule::constant(0.1), 1.0,
                                     {.clip = 1, .non_finite = NonFinitePolicy::kDiverge});
  EXPECT_TRUE(std::isnan(r.grad_norm));
  EXPECT_TRUE(r.non_finite && r.updated);
  EXPECT_FALSE(r.stop);
  EXPECT_TRUE(std::isnan(values(a)[0]));
  EXPECT_TRUE(std::isnan(values(b)[0]));
  EXPECT_EQ(sgd.step_count(), 1);
}

TEST(TrainingStep, RefusesANegativeOrNonFiniteClip) {
  Variable p = param({1.0});
  SGD sgd({p}, 0.1);
  give_grad(p, {1.0});
  EXPECT_EQ(error_of([&] { training_step(sgd, LrSchedule::constant(0.1), 1.0, {.clip = -1}); }),
            "training_step: clip must be finite and >= 0 (0: no clipping), got -1");
  EXPECT_THROW(training_step(sgd, LrSchedule::constant(0.1), 1.0, {.clip = kInf}), Error);
  EXPECT_EQ(values(p)[0], 1.0);
}

}  // namespace
}  // namespace gradflow::nn
