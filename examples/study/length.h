// The length part (--full, or --parts length): how attention's scale should
// depend on the number of keys n, as work since 2022 says it should
// (Nakanishi 2025, Scalable-Softmax; Velickovic et al. 2024; Chen, Lin,
// Polyanskiy and Rigollet 2025, critical attention scaling). Three pieces:
//   length_init.cpp      attention against n at initialisation, per mode
//                        (C16, C17)
//   length_train.cpp     train short, test long: recall at 4 pairs, tested at
//                        8, 16 and 32 (C18)
//   length_critical.cpp  the critical factor gamma in gamma log n against
//                        1/(1 - rho) (C19)
//   length.cpp           the options, the run and the report's section
#pragma once

#include <string>
#include <vector>

#include "examples/study/length_probe.h"
#include "examples/study/study.h"

namespace gradflow::study {

// Recall with 32 keys and 16 values, trained at 4 pairs and 4 queries for at
// most 1600 steps (stopping at 99% held out): two layers, an induction
// circuit.
TaskSetup length_task();
// "lookup": the same with each pair one token (RecallTaskConfig::fused_pairs),
// at most 2400 steps, stopping at 98%: a query's answer is one lookup of the
// token with its key, with no previous-token step to build first.
TaskSetup lookup_task();

// A run learned the trained length when its accuracy on the fresh held-out
// set there is at least this: it stopped at 99% (lookup 98%) on its own
// evaluation set, and 1024 fresh answers measure that within about 0.5 to
// 1 point.
inline constexpr double kLengthSolved = 0.97;

struct LengthOptions {
  std::vector<TaskSetup> tasks = {length_task(), lookup_task()};
  int64_t d_k = 16;
  std::vector<std::string> modes = {"inv_sqrt_dk", "log_n", "ssmax"};
  std::vector<int64_t> test_pairs = {8, 16, 32};
  // Many: the modes are compared on the seeds where both learned the trained
  // length, 7 to 16 of 20 per mode at 1600 and 3000 steps; 14 keep the part
  // within 10 minutes on 2 cores.
  int64_t seeds = 14;
  LengthInitOptions init{};
  CriticalOptions critical{};
};
// --seeds and --steps replace the part's own.
LengthOptions length_options(const Settings& settings);

std::vector<RunSpec> length_runs(const Settings& settings, const LengthOptions& options);
struct LengthTrainResult {
  std::vector<FinalRow> finals;     // one per run: how it trained
  std::vector<LengthTestRow> rows;  // one per run and length
};
LengthTrainResult run_length_train(const Settings& settings, const LengthOptions& options);

// The whole part: the measurements at initialisation, the critical factor
// and the training.
struct LengthResult {
  std::vector<LengthInitRow> init;
  std::vector<CriticalRow> critical;
  LengthTrainResult train;
};
LengthResult run_length(const Settings& settings, const LengthOptions& options);

// On `task`, mode a's accuracy (or `field`) minus mode b's at `pairs`,
// paired by seed over the seeds where both solved the trained length
// (t-interval).
Interval length_difference(const std::vector<LengthTestRow>& rows, const std::string& task,
                           const std::string& a, const std::string& b, int64_t pairs,
                           double LengthTestRow::*field = &LengthTestRow::accuracy);
Verdict extrapolation_claim(const std::vector<LengthTestRow>& rows, const LengthOptions& options);

Section length_section(const LengthOptions& options, const LengthResult& result);

}  // namespace gradflow::study
