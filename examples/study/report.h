// Writing the study's results: CSV files, SVG plots and report.md, all
// into one directory, each file written atomically.
#pragma once

#include <string>
#include <vector>

#include "examples/study/study.h"

namespace gradflow::study {

struct RunInfo {
  std::string command;  // the exact command line
  uint64_t seed = 0;
  int threads = 0;
  bool full = false;
  double seconds = 0;  // wall time of the whole run
  PartAOptions part_a;
  PartBOptions part_b;
  std::vector<double> sweep_lrs;  // Part C, empty when not run
};

// One claim's verdict, derived from the numbers only.
struct Verdict {
  std::string id, claim, figures, verdict, why;
};

std::vector<Verdict> judge_claims(const std::vector<InitRow>& init, const PartBResult& training);

// Writes init_metrics.csv, train_metrics.csv, train_layers.csv,
// final_metrics.csv, [lr_sweep.csv], the SVG plots and report.md into dir.
void write_report(const std::string& dir, const RunInfo& info, const std::vector<InitRow>& init,
                  const PartBResult& training, const PartBResult& sweep);

}  // namespace gradflow::study
