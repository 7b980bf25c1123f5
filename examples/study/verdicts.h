// The claims C1 to C7 judged against this run's numbers. Each verdict names
// its criteria and their outcomes, so a reader sees exactly what "holds"
// means; no verdict is text decided in advance. docs/study.md explains the
// claims and the criteria.
#pragma once

#include <string>
#include <vector>

#include "examples/study/summary.h"

namespace gradflow::study {

struct Verdict {
  std::string id{}, claim{};
  std::string why{};       // why it should hold: the argument in plain words
  std::string measured{};  // what this run measured, with 95% intervals
  std::string verdict{};   // holds, partly holds, does not hold, unclear
  std::string reason{};    // each criterion and its outcome
};

// Criteria stated in advance (docs/study.md).
inline constexpr double kVarianceTolerance = 0.05;  // measured / theory within 1 +- this
inline constexpr double kSaturatedEntropy = 0.2, kSaturatedMaxWeight = 0.8;
inline constexpr double kUniformEntropy = 0.99;  // and max_weight below 2 / n

std::vector<Verdict> judge_claims(const std::vector<InitRow>& init,
                                  const std::vector<SettingSummary>& training);

// "holds" when every one of `parts` criteria passed, "does not hold" when
// none did, else "partly holds".
std::string verdict_of(int passed, int parts);
const char* yes_no(bool b);  // a criterion's outcome in a reason

// "0.886 +- 0.002": a Part A estimate with the half-width of its 95% interval.
std::string format_estimate(const Estimate& e, int digits = 3);

}  // namespace gradflow::study
