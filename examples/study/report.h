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
  double seconds = 0;                                  // wall time of the whole run
  double seconds_a = 0, seconds_b = 0, seconds_d = 0;  // of each part
  PartAOptions part_a;
  PartBOptions part_b;
  DepthOptions depth;
};

// Everything below: the CSV files, the plots and report.md.
void write_report(const std::string& dir, const RunInfo& info, const std::vector<InitRow>& init,
                  const PartBResult& training, const std::vector<DepthRow>& depth);

// init_metrics.csv, depth_metrics.csv, and with training train_metrics.csv,
// train_layers.csv and final_metrics.csv.
void write_csvs(const std::string& dir, const std::vector<InitRow>& init,
                const PartBResult& training, const std::vector<DepthRow>& depth);

struct PlotFile {
  std::string file, caption;
};
// The SVG plots of the parts that ran.
std::vector<PlotFile> write_plots(const std::string& dir, const std::vector<InitRow>& init,
                                  const PartBResult& training, const std::vector<DepthRow>& depth);

}  // namespace gradflow::study
