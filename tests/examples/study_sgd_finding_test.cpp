// The sgd part's claim, C13, recomputed from the sgd_sweep.csv of a small
// scaling_study run: each (mode, d_k)'s rate chosen on the selection seeds,
// the comparison seeds' means and paired intervals at those rates, clipped
// and not, found in report.md and in C13's rows of criteria.csv, which its
// finding quotes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "examples/study/stats/stats.h"
#include "tests/examples/run_program.h"
#include "tests/examples/study_csv.h"

namespace gradflow::testing {
namespace {

using StudySgdFinding = ProgramTest;

struct SweepRun {
  std::string mode;
  int64_t d_k = 0, seed = 0;
  double lr = 0, clip = 0;
  bool selection = false, diverged = false;
  double final_loss = NAN, initial_loss = NAN, accuracy = NAN, ratio = NAN, clipped = NAN,
         share = NAN;
};

std::vector<SweepRun> read_sweep(const std::string& path) {
  const CsvColumns c = read_csv_columns(path);
  std::vector<SweepRun> out;
  for (size_t i = 0; i < c.at("mode").size(); ++i) {
    auto at = [&](const char* name) { return csv_value(c.at(name)[i]); };
    out.push_back({c.at("mode")[i], std::stoll(c.at("d_k")[i]), std::stoll(c.at("seed")[i]),
                   at("lr"), at("clip"), c.at("seed_set")[i] == "selection",
                   c.at("diverged")[i] == "true", at("final_loss"), at("initial_loss"),
                   at("accuracy"), at("grad_ratio_qv"), at("clipped_fraction"),
                   at("qk_grad_share")});
  }
  return out;
}

// The loss a run is judged by: capped at its initial loss, a diverged run's
// that initial loss. The accuracy of a diverged run does not count.
double capped(const SweepRun& r) {
  return r.diverged || !std::isfinite(r.final_loss) ? r.initial_loss
                                                    : std::min(r.final_loss, r.initial_loss);
}
double log_ratio(const SweepRun& r) { return r.ratio > 0 ? std::log10(r.ratio) : NAN; }
double clipped(const SweepRun& r) { return r.clipped; }
double share(const SweepRun& r) { return r.share; }
using Value = double (*)(const SweepRun&);

struct Chosen {
  double lr = NAN, loss = INFINITY;
  size_t seeds = 0;
};
// The rate with the lowest mean capped loss over the selection seeds.
Chosen chosen(const std::vector<SweepRun>& runs, const std::string& mode, int64_t d_k) {
  std::map<double, std::vector<double>> at;
  for (const SweepRun& r : runs)
    if (r.selection && r.mode == mode && r.d_k == d_k) at[r.lr].push_back(capped(r));
  Chosen best;
  for (const auto& [lr, losses] : at) {
    double total = 0;
    for (double l : losses) total += l;
    if (total / static_cast<double>(losses.size()) < best.loss)
      best = {lr, total / static_cast<double>(losses.size()), losses.size()};
  }
  return best;
}

std::vector<const SweepRun*> compared(const std::vector<SweepRun>& runs, const std::string& mode,
                                      int64_t d_k, double lr, bool clip) {
  std::vector<const SweepRun*> out;
  for (const SweepRun& r : runs)
    if (!r.selection && (r.clip > 0) == clip && r.mode == mode && r.d_k == d_k && r.lr == lr)
      out.push_back(&r);
  std::sort(out.begin(), out.end(),
            [](const SweepRun* a, const SweepRun* b) { return a->seed < b->seed; });
  return out;
}

// a - b paired by seed where both are finite.
stats::Interval paired(const std::vector<const SweepRun*>& a, const std::vector<const SweepRun*>& b,
                       Value value) {
  std::vector<double> x, y;
  for (const SweepRun* ra : a)
    for (const SweepRun* rb : b)
      if (ra->seed == rb->seed && std::isfinite(value(*ra)) && std::isfinite(value(*rb)))
        x.push_back(value(*ra)), y.push_back(value(*rb));
  return x.empty() ? stats::no_interval() : stats::paired_difference(x, y);
}

// The mean over the runs where the value is finite, as whole percent.
std::string mean_percent(const std::vector<const SweepRun*>& runs, Value value) {
  double total = 0, n = 0;
  for (const SweepRun* r : runs)
    if (std::isfinite(value(*r))) total += value(*r), ++n;
  return n > 0 ? std::to_string(std::lround(100 * total / n)) + "%" : "-";
}

int64_t diverged(const std::vector<const SweepRun*>& runs) {
  return std::count_if(runs.begin(), runs.end(), [](const SweepRun* r) { return r->diverged; });
}

bool decided(const stats::Interval& i) {
  return i.n >= 2 && std::isfinite(i.lo) && std::isfinite(i.hi);
}

TEST_F(StudySgdFinding, ItsNumbersComeFromSgdSweepCsv) {
  const std::string out = path("study");
  // Two comparison and two selection seeds, 10 steps: every run of the part, small.
  Result r = run(kScalingStudy, {"--parts", "sgd", "--seeds", "2", "--steps", "10", "--out", out});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::vector<SweepRun> runs = read_sweep(out + "/sgd_sweep.csv");
  const std::string report = read(out + "/report.md");
  auto expect_quoted = [&](const std::string& text) {
    EXPECT_NE(report.find(text), std::string::npos) << text;
  };
  const std::string ref = "inv_sqrt_dk";
  const Chosen none_256 = chosen(runs, "none", 256), ref_256 = chosen(runs, ref, 256),
               none_16 = chosen(runs, "none", 16), ref_16 = chosen(runs, ref, 16);
  ASSERT_EQ(none_256.seeds, 2u);
  auto describe = [](const std::string& mode, int64_t d_k, const Chosen& c) {
    return mode + " " + stats::significant(c.lr, 2) + " at d_k " + std::to_string(d_k) +
           " (capped loss " + stats::significant(c.loss) + ")";
  };
  expect_quoted("learning rates chosen on 2 selection seeds: " + describe("none", 256, none_256) +
                ", " + describe(ref, 256, ref_256) + ", " + describe("none", 16, none_16) + ", " +
                describe(ref, 16, ref_16) + ";");

  // The comparison seeds at the chosen rates, clipped and not (d_k 256), and at the common rate.
  const auto n256 = compared(runs, "none", 256, none_256.lr, true),
             r256 = compared(runs, ref, 256, ref_256.lr, true),
             n16 = compared(runs, "none", 16, none_16.lr, true),
             r16 = compared(runs, ref, 16, ref_16.lr, true),
             free_n = compared(runs, "none", 256, none_256.lr, false),
             free_r = compared(runs, ref, 256, ref_256.lr, false);
  ASSERT_EQ(n256.size(), 2u);
  const stats::Interval ratio_common = paired(compared(runs, "none", 256, 0.1, true),
                                              compared(runs, ref, 256, 0.1, true), &log_ratio),
                        ratio_chosen = paired(n256, r256, &log_ratio),
                        gap_256 = paired(n256, r256, &capped), gap_16 = paired(n16, r16, &capped),
                        share_gap = paired(n256, r256, &share),
                        free_gap = paired(free_n, free_r, &capped);
  ASSERT_EQ(r256.size(), n256.size());
  ASSERT_EQ(n16.size(), n256.size());
  ASSERT_EQ(r16.size(), n256.size());
  std::vector<double> large, small;  // the gaps seed by seed (each list sorted by seed)
  for (size_t i = 0; i < n256.size(); ++i)
    large.push_back(capped(*n256[i]) - capped(*r256[i])),
        small.push_back(capped(*n16[i]) - capped(*r16[i]));
  const stats::Interval growth = stats::paired_difference(large, small);
  auto bounds = [](const stats::Interval& i) { return stats::format_bounds(i); };
  const std::string runs_n = std::to_string(free_n.size());
  expect_quoted(
      "log10 W_Q/W_V gradient ratio at d_k 256 " + bounds(ratio_common) + " at the common lr " +
      "0.1, " + bounds(ratio_chosen) + " at the chosen ones; capped loss " + bounds(gap_256) +
      " nats at d_k 256, " + bounds(gap_16) + " at d_k 16, their difference seed by seed " +
      bounds(growth) +
      "; without the clip, at d_k 256 and the same rates: capped loss none - 1/sqrt(d_k) " +
      bounds(free_gap) + " nats; log10 W_Q/W_V ratio difference " +
      bounds(paired(free_n, free_r, &log_ratio)) + "; unclipped - clipped capped loss " +
      bounds(paired(free_n, n256, &capped)) + " for none, " +
      bounds(paired(free_r, r256, &capped)) + " for 1/sqrt(d_k); diverged " +
      std::to_string(diverged(free_n)) + " and " + std::to_string(diverged(free_r)) + " of " +
      runs_n);

  // The verdict and its criteria: criteria.csv's rows for C13 hold the
  // intervals recomputed here, and the outcomes they give.
  ASSERT_TRUE(decided(ratio_common) && decided(ratio_chosen) && decided(gap_256) &&
              decided(growth));
  const bool a = ratio_common.hi<0, b = ratio_chosen.hi<0, c = gap_256.lo> 0.05, d = growth.lo> 0;
  const std::map<std::string, std::pair<stats::Interval, bool>> expected = {
      {"a", {ratio_common, a}}, {"b", {ratio_chosen, b}}, {"c", {gap_256, c}}, {"d", {growth, d}}};
  const CsvColumns criteria = read_quoted_csv_columns(out + "/criteria.csv");
  int rows = 0;
  for (size_t i = 0; i < criteria.at("claim").size(); ++i) {
    if (criteria.at("claim")[i] != "C13") continue;
    ++rows;
    const auto& [interval, passed] = expected.at(criteria.at("criterion")[i]);
    for (const auto& [column, value] : {std::pair{"estimate", interval.mean},
                                        std::pair{"lo", interval.lo}, std::pair{"hi", interval.hi}})
      EXPECT_NEAR(csv_value(criteria.at(column)[i]), value, 1e-9 * (1 + std::abs(value)))
          << criteria.at("criterion")[i] << " " << column;
    EXPECT_EQ(criteria.at("passed")[i], passed ? "true" : "false") << criteria.at("criterion")[i];
  }
  EXPECT_EQ(rows, 4);
  const int passed = a + b + c + d;
  expect_quoted(std::string("C13 ") +
                (passed == 4   ? "holds"
                 : passed == 0 ? "does not hold"
                               : "partly holds") +
                ".");
  // The premise: how often the clip fired, and whose W_Q and W_K held the
  // larger share; numbers beside the verdict, not a criterion.
  const std::string fired_none = mean_percent(n256, &clipped);
  expect_quoted("at d_k 256 the clip fired in " + fired_none + " of none's steps and " +
                mean_percent(r256, &clipped) + " of 1/sqrt(d_k)'s");
  const std::string larger = !decided(share_gap) ? "neither's detectably"
                             : share_gap.lo > 0  ? "none's"
                             : share_gap.hi < 0  ? "1/sqrt(d_k)'s"
                                                 : "neither's detectably";
  expect_quoted("W_Q and W_K held " + mean_percent(n256, &share) +
                " of none's squared gradient norm against " + mean_percent(r256, &share) +
                " (paired difference " + bounds(share_gap) + "): the larger share is " + larger +
                ", so a step was not as large as its gradient in " + fired_none +
                " of none's steps");
}

}  // namespace
}  // namespace gradflow::testing
