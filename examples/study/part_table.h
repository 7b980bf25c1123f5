// The study's parts as one table. The driver (scaling_study.cpp) plans,
// runs and reports every part by looping over parts(): the memory check
// adds up the runs each plans, the report takes the section each returns,
// and the files a new study clears are the ones the parts list. So adding a
// part is its own files and one row here (docs/study.md, "Adding a part").
#pragma once

#include <any>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "examples/study/length.h"
#include "examples/study/parts.h"
#include "examples/study/qk_rate.h"
#include "examples/study/study_time.h"

namespace gradflow::study {

// One study: every part's options (made from the Settings; the command line
// may then change them) and, as each part runs, its results. A part that did
// not run leaves its results empty, and a section that reads them judges
// without them (Part::reads).
struct StudyRun {
  explicit StudyRun(const Settings& settings);

  Settings settings;
  InitOptions init_options;
  std::vector<InitRow> init;
  TrainOptions train_options;
  TrainResult train;
  SgdOptions sgd_options;
  std::vector<FinalRow> sgd;
  DepthOptions depth_options;
  std::vector<DepthRow> depth;
  LrOptions lr_options;
  std::vector<FinalRow> lr;
  WidthOptions width_options;
  std::vector<WidthRow> width;
  DepthTrainOptions depth_train_options;
  DepthTrainResult depth_train;
  LengthOptions length_options;
  LengthResult length;
  QkRateOptions qk_rate_options;  // its rows are more["qk-rate"]
  // The results of a part added without a member here (add_part), by its name.
  std::map<std::string, std::any> more{};
};

struct Part {
  std::string name{};      // as --parts takes it
  char letter = '\0';      // the earlier layout's alias ('\0': none)
  bool in_default = true;  // in the default run; else with --full, or named in --parts
  std::string summary{};   // what it measures, one line
  // The training runs it will make, for the memory check before anything
  // runs; null for a part that trains nothing.
  std::function<std::vector<RunSpec>(const StudyRun&)> plan{};
  // Its jobs as its progress counts them, and each one's cost in units of
  // the calibration workload (study_time.h), for the plan and estimate the
  // study prints before it starts and its one progress line; null: nothing
  // to count (the study then counts the part as no work).
  std::function<PartCost(const StudyRun&)> cost{};
  std::function<void(StudyRun&)> run{};               // measures, into the StudyRun
  std::function<Section(const StudyRun&)> section{};  // its share of the report
  std::vector<std::string> reads{};                   // the parts whose results its section reads
  // The flags of the command line it reads, of those a part may read
  // (part_flags(): --modes, --seeds, ...): a flag no chosen part reads is
  // reported unused (study_flags.cpp).
  std::vector<std::string> flags{};
  std::vector<std::string> files{};  // every file its section may write
};

// Every part, in the order a reader meets them (and they run).
const std::vector<Part>& parts();
// Appends a row, for a part of your own without editing the table (the
// worked example's test does); before the study starts.
void add_part(const Part& row);
// The part named `name` or by its letter; nullptr for none.
const Part* find_part(const std::string& name);
// Fails when `section` writes a file its part's row does not list, so
// study_files() (study.h), which a new study clears, is always complete.
void check_section_files(const Section& section);
// "init, train, ..." (every part), for help and errors.
std::string part_names();
// The flags a part's row may list, those of Settings and the train part's
// options: --tasks, --d-ks, --recall-pairs, --recall-keys, --modes, --seeds,
// --steps.
const std::vector<std::string>& part_flags();
// The parts that read `flag`, in table order ("" for none): for help.
std::string parts_reading(const std::string& flag);

}  // namespace gradflow::study
