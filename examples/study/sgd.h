// The sgd part's pieces that its three files share (parts.h, "sgd", declares
// the part itself):
//   sgd.cpp         the options and the runs: the selection, each (mode, d_k)'s
//                   chosen rate and the comparison
//   sgd_claim.cpp   the comparison seeds' runs and their figures, C13's numbers
//                   and its verdict
//   sgd_report.cpp  the finding, the tables, the figure and the section
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "examples/study/parts.h"

namespace gradflow::study {

// The chosen rate of (mode, d_k) in `best`; null when it has none.
const SgdBest* find_best(const std::vector<SgdBest>& best, const std::string& mode, int64_t d_k);

// The comparison seeds' runs of (mode, d_k) at lr, clipped or not, by seed.
std::vector<const FinalRow*> compared_runs(const std::vector<SgdRow>& rows, const std::string& mode,
                                           int64_t d_k, double lr, bool clipped);

// A figure of one run, and over runs: its mean and 95% t-interval over the
// runs where it is finite, and how many of them diverged.
using Value = double (*)(const FinalRow&);
Interval over_runs(const std::vector<const FinalRow*>& runs, Value value);
int64_t diverged(const std::vector<const FinalRow*>& runs);
// log10 of the W_Q / W_V gradient ratio: it spreads over decades (NaN when
// not positive).
double log_ratio(const FinalRow& r);
double accuracy(const FinalRow& r);  // NaN for a diverged run
double clipped(const FinalRow& r);
double qk_share(const FinalRow& r);

// A fraction as whole percent, "69%"; "-" for none.
std::string percent(double fraction);

// Everything C13, its finding and the no-clip paragraph read.
struct C13Numbers {
  SgdBest none_256, ref_256, none_16, ref_16;  // the chosen rates (when complete)
  // Clipped runs, none - inv_sqrt_dk paired by seed, d_k 256 unless said.
  Interval ratio_common, ratio_chosen, gap_256, gap_16;
  Interval gap_growth;  // gap_256 - gap_16 seed by seed
  Interval share_gap;   // W_Q and W_K's share of the squared gradient norm
  // Each arm at its chosen rate, d_k 256: clipped, then unclipped.
  Interval clipped_none, clipped_ref, share_none, share_ref, accuracy_none, accuracy_ref;
  Interval free_accuracy_none, free_accuracy_ref;
  Interval free_gap_256, free_ratio;           // the criteria's comparisons unclipped
  Interval free_change_none, free_change_ref;  // capped loss unclipped - clipped, per arm
  int64_t free_diverged_none = 0, free_diverged_ref = 0, free_runs = 0;
  bool complete = false;  // both arms chosen at both d_k
};
C13Numbers c13_numbers(const std::vector<SgdRow>& rows);
// What clipping did at d_k 256: how often it fired and whose W_Q/W_K held
// the larger share of the gradient.
std::string premise_text(const C13Numbers& c);
// The no-clip variant at d_k 256, for the reviewer.
std::string no_clip_text(const C13Numbers& c);

}  // namespace gradflow::study
