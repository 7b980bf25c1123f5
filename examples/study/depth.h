// The depth part's pieces that its three files share (parts.h, "depth",
// declares the part itself):
//   depth.cpp         the options and the runs
//   depth_claims.cpp  C14 and C15, and C15's finding
//   depth_report.cpp  the table, the CSV file, the figures and the section
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "examples/study/parts.h"

namespace gradflow::study {

// The rows of the deepest stack's first and last layer of (mode, placement).
std::pair<const DepthRow*, const DepthRow*> ends_of(const std::vector<DepthRow>& depth,
                                                    const std::string& mode,
                                                    const std::string& placement);
// last / first of two estimates over the same draws, its standard error by
// the delta method (ignoring their covariance).
Interval ratio_of(const Interval& last, const Interval& first);

// C15 on 1/sqrt(d_k)'s deepest stacks: its criteria (95% t-intervals over
// draws), the rows they read and the verdict, which the finding words.
struct RankCollapse {
  bool collapses = false;       // attention alone: above 0.9 after the last layer
  bool slowed = false;          // whole blocks, both placements: below 0.5 after the last layer
  bool rises_pre = false;       // whole pre-LN blocks: the paired rise from layer 1 above 0
  bool rises_post = false;      // the same for post-LN
  bool flatter_sooner = false;  // after one layer of attention alone, 1/d_k above unscaled
  const DepthRow *pre_first = nullptr, *pre_last = nullptr;
  const DepthRow *post_first = nullptr, *post_last = nullptr;
  Verdict verdict;
};
// REQUIRES: both placements of 1/sqrt(d_k) have a stack of two or more layers.
RankCollapse rank_collapse(const std::vector<DepthRow>& depth);
// C14 (Xiong et al. 2020) and C15 (rank collapse), on 1/sqrt(d_k)'s stacks.
std::vector<Verdict> depth_claims(const std::vector<DepthRow>& depth);

}  // namespace gradflow::study
