// The qk-rate part (--full): how should W_Q and W_K's learning rate scale
// with d_k? Vaswani et al.'s variance argument says only the starting scale
// of q.k matters; muP (Yang et al. 2022) says W_Q's and W_K's updates must
// also shrink as d_k grows. Here d_k grows with the width, as in real
// models (4 heads of d_k = d_model / 4), and unscaled attention is trained
// with its starting logit std set to sigma0 and W_Q and W_K learning at
// m times the rate of the rest. The best m at each width (by loss AUC)
// against d_k gives the exponent alpha of m*(d_k) ~ d_k^alpha: about 0
// says the start is all the scale fixes, about -1/4 (per matrix) says the
// update must shrink too. Claims judged here: C28, C29 and C30
// (docs/study.md, "qk-rate: the Q/K learning rate across d_k").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "examples/study/study.h"

namespace gradflow::study {

struct QkRateOptions {
  std::vector<std::string> tasks = {"recall", "charlm"};
  std::vector<int64_t> d_models = {64, 128, 256, 512};  // d_k = d_model / 4
  std::vector<double> sigmas = {0.3, 1, 3};             // the unscaled q.k's std at the start
  // m = 4^power. A pilot (base seed 1000, d_model 64 and 128, 3 seeds) put
  // recall's best m at 4^-2.2 at d_k 16 and at the grid's end, 4^-3, at 32:
  // the grid reaches 4^-6 so that d_k 128's m* is inside it.
  std::vector<int> powers = {-6, -5, -4, -3, -2, -1, 0, 1};
  // Trained at m = 1 as they are built, for comparison.
  std::vector<std::string> references = {"inv_sqrt_dk", "inv_dk", "qk_norm"};
  // Seeds of sigma0 = 1's grid (what alpha is fitted on); of the other
  // sigma0s' cells and of the references (no claim rests on them alone);
  // and, from the width `few_seeds_from` up, where a run costs 16 to 64
  // times one at d_model 64, only sigma0 = 1's grid and the first reference,
  // on `few_seeds` seeds (docs/study.md says what this trims).
  int64_t seeds = 10, other_seeds = 3, few_seeds = 3, few_seeds_from = 512;
  int64_t recall_steps = 300, charlm_steps = 200, batch = 32;
};

QkRateOptions qk_rate_options(const Settings& settings);

// One run's measures.
struct QkRateRow {
  std::string task{}, arm{};  // arm: "none" (its sigma0 and m below) or a reference mode
  int64_t d_model = 0, d_k = 0, seed = 0;
  double sigma0 = 0;  // the start asked for (0: as built, a reference)
  int power = 0;      // m = 4^power
  FinalRow run{};     // loss AUC, steps to solve, q.k std at the start and the end, ...
  // The key layer's mean |change of a scaled logit| per update over the
  // first 50 steps (the measured logit step), and its mean attention weight
  // on the correct key over the last 20% of the steps run (recall; NaN for
  // charlm). q.k's std at the start and the end are the FinalRow's.
  double logit_step = 0, correct_key_weight = 0;
  bool solved = false;  // recall: held-out accuracy reached 99% within the budget
};

std::vector<RunSpec> qk_rate_runs(const Settings& settings, const QkRateOptions& options);
std::vector<QkRateRow> run_qk_rate(const Settings& settings, const QkRateOptions& options);

// ---- what the claims read (qk_rate_claims.cpp) ----------------------------------
// The best multiplier's log4 at one width, from sigma0 = 1's cells: the
// vertex of the parabola through the lowest mean loss AUC and its two
// neighbours on the grid (at an end of the grid: that end, `at_edge`).
struct BestPower {
  double power = 0;
  bool at_edge = false;
};
BestPower best_power(const std::vector<int>& powers, const std::vector<double>& mean_auc);
// alpha: the least-squares slope of log m* against log d_k, in
// m*(d_k) ~ d_k^alpha.
double fitted_alpha(const std::vector<double>& d_ks, const std::vector<double>& best_powers);
// alpha on a task, with its percentile-bootstrap interval over seeds
// (resampled within each width) at `confidence`; n is the runs' seeds at the
// smallest width. Also each width's m* (log4) from all its seeds.
struct AlphaFit {
  Interval alpha = no_interval();
  std::vector<double> d_ks{}, best_powers{};
  std::vector<bool> at_edge{};
};
AlphaFit fit_alpha(const std::vector<QkRateRow>& rows, const std::string& task, double confidence,
                   uint64_t seed);
// The failure boundary at one width (recall): among the unscaled runs at or
// above the best cell's logit step, the logit step that best separates
// solved runs (below) from unsolved ones (above), the geometric midpoint of
// its two neighbours; NaN when no run above it failed.
double failure_boundary(const std::vector<QkRateRow>& rows, int64_t d_model);
// The largest boundary over the smallest across the widths, with its
// percentile-bootstrap interval over seeds at `confidence`.
Interval boundary_ratio(const std::vector<QkRateRow>& rows, double confidence, uint64_t seed);

Verdict qk_rate_alpha_claim(const std::vector<QkRateRow>& rows, uint64_t seed);  // C28, C29
Verdict qk_rate_muP_claim(const std::vector<QkRateRow>& rows, uint64_t seed);
Verdict qk_rate_boundary_claim(const std::vector<QkRateRow>& rows, uint64_t seed);  // C30
Section qk_rate_section(const QkRateOptions& options, const std::vector<QkRateRow>& rows,
                        uint64_t seed);

}  // namespace gradflow::study
