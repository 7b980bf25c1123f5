// Writing the study's results: CSV files, SVG plots and report.md, all into
// one directory, each file written atomically.
#pragma once

#include <string>
#include <vector>

#include "examples/common/csv_log.h"
#include "examples/common/svg_plot.h"
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
  LrSweepOptions lr_sweep;
  WidthSweepOptions width;
  DepthTrainOptions depth_training;
  double seconds_c = 0, seconds_e = 0, seconds_f = 0;
};

struct FullResults;

// Everything below: the CSV files, the plots and report.md.
void write_report(const std::string& dir, const RunInfo& info, const std::vector<InitRow>& init,
                  const PartBResult& training, const std::vector<DepthRow>& depth,
                  const FullResults& full);

// init_metrics.csv, depth_metrics.csv, and with training train_metrics.csv,
// train_layers.csv and final_metrics.csv.
void write_csvs(const std::string& dir, const std::vector<InitRow>& init,
                const PartBResult& training, const std::vector<DepthRow>& depth);

// lr_sweep.csv, width_sweep.csv and depth_train.csv, for the parts that ran.
void write_full_csvs(const std::string& dir, const FullResults& full);

struct PlotFile {
  std::string file, caption;
};
// report.md's sections for Parts C, E and F.
std::string full_report_sections(const RunInfo& info, const FullResults& full);

// The plots of Parts C, E and F.
std::vector<PlotFile> write_full_plots(const std::string& dir, const FullResults& full);
// The SVG plots of the parts that ran.
std::vector<PlotFile> write_plots(const std::string& dir, const std::vector<InitRow>& init,
                                  const PartBResult& training, const std::vector<DepthRow>& depth);

// Shared by the writers above.
using CsvRow = std::vector<cli::CsvCell>;
// A CSV document in memory, written in one atomic step (csv_files.cpp).
void write_csv(const std::string& path, const std::vector<std::string>& columns,
               const std::vector<CsvRow>& rows);
// v as a CSV cell; NaN and infinities as an empty cell (csv_files.cpp).
cli::CsvCell csv_number(double v);
// A figure of the study's plots (plots.cpp): 540 px high, so the panels of a
// grid keep a readable aspect.
plot::Figure figure(const std::string& title, const std::string& x, bool log_x,
                    const std::string& y, bool log_y);

}  // namespace gradflow::study
