// Spearman's rho and Newcombe's interval against hand-computed and
// published values.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "examples/study/stats/stats.h"
#include "tensor/error.h"

namespace gradflow::stats {
namespace {

TEST(StudyCorrelation, SpearmanByHand) {
  // y's ranks with the tie at 7 shared: 1, 2, 3.5, 5, 3.5. Against 1..5:
  // covariance sum 8, squares 10 and 9.5, rho = 8 / sqrt(95) = 0.8207826.
  const std::vector<double> x = {1, 2, 3, 4, 5}, y = {5, 6, 7, 8, 7};
  EXPECT_NEAR(spearman(x, y), 8 / std::sqrt(95.0), 1e-12);
  // Any increasing map of the data leaves rho as it is.
  const std::vector<double> x_cubed = {1, 8, 27, 64, 125};
  EXPECT_NEAR(spearman(x_cubed, y), spearman(x, y), 1e-12);
  EXPECT_NEAR(spearman(x, std::vector<double>{10, 8, 6, 4, 2}), -1, 1e-12);
  EXPECT_TRUE(std::isnan(spearman(x, std::vector<double>{3, 3, 3, 3, 3})));
  EXPECT_THROW(spearman(x, std::vector<double>{1, 2}), Error);
  EXPECT_THROW(spearman(x, std::vector<double>{1, 2, NAN, 4, 5}), Error);
}

TEST(StudyCorrelation, SpearmanIntervalCoversAStrongAssociation) {
  std::vector<double> x, y;
  for (int i = 0; i < 40; ++i) x.push_back(i), y.push_back(i + 10 * std::sin(i));  // noisy rise
  Interval r = spearman_interval(x, y, 2000, 7);
  EXPECT_EQ(r.n, 40);
  EXPECT_NEAR(r.mean, spearman(x, y), 1e-15);
  EXPECT_LT(r.lo, r.mean);
  EXPECT_GT(r.hi, r.mean);
  EXPECT_GT(r.lo, 0.5);  // rho is about 0.8 here
  EXPECT_LE(r.hi, 1.0);
  Interval again = spearman_interval(x, y, 2000, 7);
  EXPECT_EQ(again.lo, r.lo);  // deterministic for a seed
}

TEST(StudyCorrelation, NewcombesPublishedExample) {
  // Newcombe (1998), Statistics in Medicine 17, 873-890, Table II example:
  // 56/70 against 48/80, difference 0.2, method 10 interval (0.0524, 0.3339).
  Interval d = proportion_difference(56, 70, 48, 80);
  EXPECT_NEAR(d.mean, 0.2, 1e-12);
  EXPECT_NEAR(d.lo, 0.0524, 5e-5);
  EXPECT_NEAR(d.hi, 0.3339, 5e-5);
  // At the edges the interval stays within [-1, 1].
  Interval all = proportion_difference(10, 10, 0, 10);
  EXPECT_EQ(all.mean, 1);
  EXPECT_LE(all.hi, 1.0);
  EXPECT_GT(all.lo, 0.5);
  EXPECT_THROW(proportion_difference(3, 2, 1, 2), Error);
  EXPECT_THROW(proportion_difference(0, 0, 1, 2), Error);
}

}  // namespace
}  // namespace gradflow::stats
