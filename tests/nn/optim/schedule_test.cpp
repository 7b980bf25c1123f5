#include "nn/optim/schedule.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <string>

#include "tensor/error.h"
#include "tests/tensor/testing.h"

namespace gradflow::nn {
namespace {

using testing::error_of;

TEST(LrSchedule, ConstantIsConstant) {
  LrSchedule s = LrSchedule::constant(3e-4);
  EXPECT_EQ(s.lr_at(0), 3e-4);
  EXPECT_EQ(s.lr_at(123456789), 3e-4);
  EXPECT_EQ(s.describe(), "constant(lr=0.0003)");
}

// lr 3e-3, W = 5: lr * min(1, n / 5) with n = step + 1, rounded as lr * (n / W): the study's
// warm-up, whose numbers depend on the last bit (3e-3 * 3 / 5 is 0.0018000000000000002).
TEST(LrSchedule, LinearWarmupRisesToLrThenStays) {
  LrSchedule s = LrSchedule::linear_warmup(3e-3, 5);
  EXPECT_EQ(s.lr_at(0), 3e-3 * 0.2);
  EXPECT_EQ(s.lr_at(2), 0.0018);  // 3e-3 * (3 / 5.0)
  EXPECT_NE(s.lr_at(2), 3e-3 * 3 / 5);
  EXPECT_EQ(s.lr_at(4), 3e-3);
  EXPECT_EQ(s.lr_at(1000), 3e-3);
  EXPECT_EQ(LrSchedule::linear_warmup(3e-3, 1).lr_at(0), 3e-3);  // W = 1: no warm-up
  EXPECT_EQ(s.describe(), "linear_warmup(lr=0.003, warmup_steps=5)");
  EXPECT_EQ(error_of([] { LrSchedule::linear_warmup(3e-3, 0); }),
            "linear_warmup: warmup_steps must be >= 1, got 0");
}

// peak 1e-3, warmup W = 10, total N = 110, min 1e-5. With n = step + 1:
//   n <= 10: 1e-3 * n / 10;  10 < n <= 110: min + (peak - min)(1 + cos(pi (n - 10) / 100)) / 2.
TEST(LrSchedule, WarmupCosineAtKeySteps) {
  const double peak = 1e-3, min = 1e-5;
  LrSchedule s = LrSchedule::warmup_cosine(peak, 10, 110, min);
  EXPECT_DOUBLE_EQ(s.lr_at(0), peak / 10);      // the first update is already positive
  EXPECT_DOUBLE_EQ(s.lr_at(4), peak * 5 / 10);  // halfway through warmup
  EXPECT_DOUBLE_EQ(s.lr_at(9), peak);           // update W: the peak
  EXPECT_DOUBLE_EQ(s.lr_at(10), min + (peak - min) * (1 + std::cos(std::numbers::pi / 100)) / 2);
  EXPECT_DOUBLE_EQ(s.lr_at(59), (peak + min) / 2);  // n - W = 50: halfway down
  EXPECT_DOUBLE_EQ(s.lr_at(109), min);              // update N, the last one: the floor
  EXPECT_EQ(s.lr_at(110), min);
  EXPECT_EQ(s.lr_at(1000000), min);
  for (int64_t step = 0; step < 9; ++step) EXPECT_LT(s.lr_at(step), s.lr_at(step + 1)) << step;
  for (int64_t step = 9; step < 109; ++step) EXPECT_GT(s.lr_at(step), s.lr_at(step + 1)) << step;
  EXPECT_EQ(s.describe(), "cosine(peak_lr=0.001, warmup_steps=10, total_steps=110, min_lr=1e-05)");
  // A program prints its numbers its own way.
  EXPECT_EQ(s.describe(+[](double v) { return "<" + std::to_string(v * 1e5) + ">"; }),
            "cosine(peak_lr=<100.000000>, warmup_steps=10, total_steps=110, min_lr=<1.000000>)");
}

TEST(LrSchedule, CosineWithoutWarmupStartsJustBelowThePeak) {
  LrSchedule s = LrSchedule::warmup_cosine(1.0, 0, 4);
  EXPECT_DOUBLE_EQ(s.lr_at(0), (1 + std::cos(std::numbers::pi / 4)) / 2);
  EXPECT_DOUBLE_EQ(s.lr_at(1), 0.5);
  EXPECT_EQ(s.lr_at(3), 0.0);
}

TEST(LrSchedule, WarmupOnlyHoldsThePeakThenDropsToTheFloor) {
  LrSchedule s = LrSchedule::warmup_cosine(1.0, 4, 4, 0.1);
  EXPECT_EQ(s.lr_at(0), 0.25);
  EXPECT_EQ(s.lr_at(3), 1.0);
  EXPECT_EQ(s.lr_at(4), 0.1);
}

// lr = factor * d_model^-0.5 * min(n^-0.5, n * W^-1.5), n = step + 1.
TEST(LrSchedule, NoamAtKeySteps) {
  const double d = 512, w = 4000;
  LrSchedule s = LrSchedule::noam(512, 4000, 2.0);
  EXPECT_DOUBLE_EQ(s.lr_at(0), 2.0 * std::pow(d, -0.5) * 1 * std::pow(w, -1.5));
  EXPECT_GT(s.lr_at(0), 0.0);
  EXPECT_DOUBLE_EQ(s.lr_at(1999), 2.0 * std::pow(d, -0.5) * 2000 * std::pow(w, -1.5));
  const double peak = 2.0 * std::pow(d, -0.5) * std::pow(w, -0.5);  // both branches meet at n = W
  EXPECT_DOUBLE_EQ(s.lr_at(3999), peak);
  EXPECT_LT(s.lr_at(3998), peak);
  EXPECT_LT(s.lr_at(4000), peak);
  EXPECT_DOUBLE_EQ(s.lr_at(15999), 2.0 * std::pow(d, -0.5) * std::pow(16000.0, -0.5));
  EXPECT_EQ(s.describe(), "noam(d_model=512, warmup_steps=4000, factor=2)");
}

TEST(LrSchedule, FromNameBuildsEachSchedule) {
  ScheduleConfig c;
  c.lr = 0.01;
  c.min_lr = 0.001;
  c.warmup_steps = 5;
  c.total_steps = 50;
  c.d_model = 64;
  c.noam_factor = 0.5;
  EXPECT_EQ(LrSchedule::from_name("constant", c).describe(), "constant(lr=0.01)");
  EXPECT_EQ(LrSchedule::from_name("cosine", c).describe(),
            "cosine(peak_lr=0.01, warmup_steps=5, total_steps=50, min_lr=0.001)");
  EXPECT_EQ(LrSchedule::from_name("noam", c).describe(),
            "noam(d_model=64, warmup_steps=5, factor=0.5)");
  EXPECT_EQ(LrSchedule::from_name("cosine", c).lr_at(4),
            LrSchedule::warmup_cosine(0.01, 5, 50, 0.001).lr_at(4));
  EXPECT_EQ(LrSchedule::names(), (std::vector<std::string>{"constant", "cosine", "noam"}));
  for (const std::string& name : LrSchedule::names())
    EXPECT_EQ(LrSchedule::from_name(name, c).describe().rfind(name + "(", 0), 0u) << name;
}

TEST(LrSchedule, UnknownNameThrowsListingTheValidOnes) {
  EXPECT_EQ(error_of([] { LrSchedule::from_name("linear"); }),
            "LrSchedule: unknown schedule \"linear\"; expected one of: constant, cosine, noam");
  EXPECT_THROW(LrSchedule::from_name(""), Error);
  EXPECT_THROW(LrSchedule::from_name("Cosine"), Error);  // names are case-sensitive
}

TEST(LrSchedule, RejectsBadArguments) {
  EXPECT_NE(error_of([] { LrSchedule::constant(-1); }).find("lr must be finite"),
            std::string::npos);
  EXPECT_NE(error_of([] { LrSchedule::warmup_cosine(1e-3, 10, 100, 1e-2); }).find("min_lr"),
            std::string::npos);
  EXPECT_NE(error_of([] { LrSchedule::warmup_cosine(1e-3, 10, 5); }).find("total_steps"),
            std::string::npos);
  EXPECT_THROW(LrSchedule::warmup_cosine(1e-3, -1, 5), Error);
  EXPECT_NE(error_of([] { LrSchedule::noam(64, 0); }).find("warmup_steps must be >= 1"),
            std::string::npos);
  EXPECT_THROW(LrSchedule::noam(0, 10), Error);
  // A cosine built from default flags without --total-steps fails loudly, not with NaN.
  EXPECT_THROW(LrSchedule::from_name("cosine"), Error);
  EXPECT_NE(error_of([] { LrSchedule::constant(1).lr_at(-1); }).find("lr_at: step must be >= 0"),
            std::string::npos);
}

}  // namespace
}  // namespace gradflow::nn
