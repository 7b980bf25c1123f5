// Writing the study's results: CSV files, SVG plots and report.md, all into
// one directory, each file written atomically.
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
  DepthOptions depth;
};

// init_metrics.csv, depth_metrics.csv, and with training train_metrics.csv,
// train_layers.csv and final_metrics.csv.
void write_csvs(const std::string& dir, const std::vector<InitRow>& init,
                const PartBResult& training, const std::vector<DepthRow>& depth);

}  // namespace gradflow::study
