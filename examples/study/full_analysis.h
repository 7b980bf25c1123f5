// What the --full parts' runs add up to: learning-rate sensitivity per mode
// (Wortsman et al. 2023), the best learning rate per width (Yang et al.
// 2022), the effect of warm-up per norm placement (Xiong et al. 2020), and
// the claims C8 to C12 judged on them. docs/study.md explains each.
#pragma once

#include <string>
#include <vector>

#include "examples/study/summary.h"
#include "examples/study/verdicts.h"

namespace gradflow::study {

struct FullResults {
  std::vector<FinalRow> sweep;  // Part C
  std::vector<WidthRow> width;  // Part E
  DepthTrainResult depth;       // Part F
};

// A run's final loss for comparisons across learning rates: the final
// held-out loss, capped at the run's initial loss; a diverged run counts
// at its initial loss (as Wortsman et al. do).
double capped_loss(const FinalRow& run);

// Wortsman et al.'s LR sensitivity of one configuration (mode, d_k) and
// seed: the mean over the learning rates of capped_loss - the best
// capped_loss of that configuration and seed. Then over seeds.
struct Sensitivity {
  std::string mode;
  int64_t d_k = 0;
  Interval sensitivity;  // over seeds
  Interval vs_default;   // mode - inv_sqrt_dk, paired by seed (n = 0 for the reference)
  Comparison verdict = Comparison::NoDetectableDifference;  // lower is better, margin below
  double best_lr = 0, best_loss = 0;                        // of the loss averaged over seeds
};
inline constexpr double kSensitivityMargin = 0.05;  // nats
std::vector<Sensitivity> lr_sensitivity(const std::vector<FinalRow>& sweep);

// Per parametrisation and width: the learning rate whose capped loss,
// averaged over seeds, is lowest, and the best per seed.
struct BestLr {
  std::string parametrization;
  int64_t d_model = 0;
  double best_lr = 0, best_loss = 0;
  std::vector<double> per_seed;
  double qk_std_init = 0, qk_std = 0;  // at the best lr, averaged over seeds
};
std::vector<BestLr> best_lr_by_width(const std::vector<WidthRow>& rows);

// How many grid steps the best learning rate moves across widths.
int best_lr_spread(const std::vector<BestLr>& best, const std::string& parametrization,
                   const std::vector<double>& grid);

// The least-squares slope of log(y) against log(x).
double log_log_slope(const std::vector<double>& x, const std::vector<double>& y);

// Final loss without warm-up minus with it, paired by seed, per norm
// placement and mode (higher is worse; margin kSensitivityMargin).
struct WarmupEffect {
  std::string placement, mode;
  Interval no_warmup_minus_warmup;
  Comparison verdict = Comparison::NoDetectableDifference;
};
std::vector<WarmupEffect> warmup_effects(const DepthTrainResult& depth);

// Per norm placement: the gradient norm of the block nearest the output over
// the one nearest the input, at the first step, averaged over runs.
double output_to_input_gradient(const DepthTrainResult& depth, const std::string& placement);

// C8 to C12, from the parts that ran (a claim without its data is left out).
std::vector<Verdict> judge_full_claims(const FullResults& full, const PartBResult& training);

}  // namespace gradflow::study
