// The study's plan, estimate and one progress line (examples/study/study_time.h,
// overall_progress.h), on a clock the test sets.
#include <gtest/gtest.h>

#include <sstream>

#include "examples/study/overall_progress.h"
#include "examples/study/part_table.h"

namespace gradflow::study {
namespace {

PartCost jobs_of(const std::string& unit, std::vector<double> jobs) {
  return PartCost{.unit = unit, .jobs = std::move(jobs)};
}

TEST(StudyTime, ThePlanNamesEachPartsJobs) {
  const std::vector<NamedCost> parts = {{"init", jobs_of("draw set", {2, 1})},
                                        {"train", jobs_of("run", {1})}};
  EXPECT_EQ(plan_line(parts), "plan: init 2 draw sets, train 1 run (3 jobs)");
  // 4 units of 1.5 s over 1 thread; the machine has at least one core.
  EXPECT_EQ(estimate_line(parts, 1.5, 1),
            "estimate: about 6s on 1 thread here (6 s of one thread at this machine's speed now; "
            "the calibration run took "
            "1.500 s)");
}

TEST(StudyTime, EveryDefaultPartHasACostAndEveryJobOne) {
  const StudyRun study(Settings{});
  // The table's own parts (a test may add one of its own without a cost).
  for (const char* name :
       {"init", "train", "sgd", "depth", "lr", "width", "depth-train", "length"}) {
    ASSERT_NE(find_part(name), nullptr) << name;
    const Part& p = *find_part(name);
    ASSERT_TRUE(p.cost) << p.name;
    const PartCost cost = p.cost(study);
    EXPECT_FALSE(cost.jobs.empty()) << p.name;
    for (double units : cost.jobs) EXPECT_GT(units, 0) << p.name;
    if (p.plan) {
      EXPECT_EQ(cost.jobs.size(), p.plan(study).size()) << p.name;
    }
  }
}

struct FakeClock {
  double now = 0;
  cli::Clock clock() {
    return [this] { return now; };
  }
};

// A part whose first job is 8 times its others: a count of jobs would say
// 16 s are left after the first took 8; the work says about 2.
TEST(OverallProgress, ItsEtaIsInWorkNotJobs) {
  FakeClock t;
  std::ostringstream out;
  OverallProgress progress({{"a", jobs_of("run", {8, 1, 1})}}, 1.0, 1, out,
                           {.tty = false, .clock = t.clock()});
  progress.start_part(0);
  progress.update(0, 3);
  t.now = 8;
  progress.update(1, 3);
  EXPECT_GT(progress.eta(t.now), 1.0);
  EXPECT_LT(progress.eta(t.now), 3.0);
  EXPECT_EQ(progress.line(t.now), "job 1/3  work 85%  elapsed 8s  eta 1s  a");
}

// Before any job ends the ETA is the calibration's estimate, less the time gone.
TEST(OverallProgress, ItStartsFromTheEstimate) {
  FakeClock t;
  std::ostringstream out;
  OverallProgress progress({{"a", jobs_of("run", {50, 50})}}, 0.5, 1, out,
                           {.tty = false, .clock = t.clock()});
  EXPECT_DOUBLE_EQ(progress.eta(0), 50);
  progress.start_part(0);
  progress.update(0, 2);
  t.now = 10;
  // Two units of the calibration's weight and 25 of the running job's half.
  EXPECT_NEAR(progress.eta(t.now), 75 * (10 + 0.5 * 2) / (25 + 2), 1e-9);
}

// Every job of every part counts once: across parts, across a part's
// several run_jobs calls, and when a part runs other than its plan said.
TEST(OverallProgress, ItCountsEveryJobOnce) {
  FakeClock t;
  std::ostringstream out;
  OverallProgress progress({{"a", jobs_of("run", {1, 1})},
                            {"b", jobs_of("stack", {1, 1, 1})},
                            {"c", jobs_of("run", {2, 2})}},
                           1.0, 2, out, {.tty = false, .clock = t.clock(), .plain_interval = 0});
  EXPECT_EQ(progress.jobs(), 7u);
  progress.start_part(0);
  progress.update(0, 2);
  progress.update(1, 2);
  progress.update(2, 2);
  EXPECT_EQ(progress.jobs_done(), 2u);
  progress.start_part(1);  // two calls: 1 job, then 2
  progress.update(0, 1);
  progress.update(1, 1);
  progress.update(0, 2);
  progress.update(2, 2);
  EXPECT_EQ(progress.jobs_done(), 5u);
  progress.start_part(2);  // planned 2, runs 4: the same work over 4
  progress.update(0, 4);
  EXPECT_EQ(progress.jobs(), 9u);
  for (size_t i = 1; i <= 4; ++i) progress.update(i, 4);
  EXPECT_EQ(progress.jobs_done(), 9u);
  EXPECT_NE(out.str().find("job 9/9  work 100%"), std::string::npos) << out.str();
  progress.finish();
  EXPECT_NE(out.str().find("\ndone: 9 of 9 jobs in 0s (estimated "), std::string::npos)
      << out.str();
}

}  // namespace
}  // namespace gradflow::study
