// What a part gives the report (report.cpp): its claims' verdicts, the
// findings a student reads first, its CSV files and figures, what it cannot
// separate; the helpers every part's tables and figures share; and the
// report writer. study.h includes it, so a part includes study.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "examples/study/arms.h"
#include "examples/study/criteria.h"
#include "examples/study/stats/stats.h"
#include "examples/toolkit/cli/csv_log.h"
#include "examples/toolkit/plot/svg_plot.h"

namespace gradflow::study {

using namespace gradflow::stats;

// A claim judged against this run's numbers; each names its criteria and
// their outcomes, so a reader sees exactly what "holds" means.
struct Verdict {
  std::string id{}, claim{};
  std::string why{};       // why it should hold: the argument in plain words
  std::string measured{};  // what this run measured, with 95% intervals
  std::string verdict{};   // holds, partly holds, does not hold, unclear
  std::string reason{};    // each criterion and its outcome
  // An identity of random variables at initialisation (Var(q.k) = d_k, ...),
  // judged by an equivalence test and reported apart from the claims about
  // training; C3 and C4 each have one beside their claim.
  bool identity = false;
  // Each declared criterion's rows (criteria.h): the train part's measured
  // from the runs, the others' as their part reported them. criteria.csv.
  std::vector<CriterionResult> results{};
  std::string checks{};  // the manipulation checks and their outcomes, apart from the reason
};
// "holds" when every one of `parts` criteria passed, "does not hold" when
// none did, else "partly holds".
std::string verdict_of(int passed, int parts);
const char* yes_no(bool b);  // a criterion's outcome in a reason
// Whether a comparison's 95% interval could be computed: two or more paired
// values and finite bounds. A claim whose criteria need an interval is
// "unclear" when one is missing, never judged from a point estimate.
bool has_interval(const Interval& i);

using CsvRow = std::vector<cli::CsvCell>;
struct CsvFile {
  std::string name;  // "init_metrics.csv"
  std::vector<std::string> columns;
  std::vector<CsvRow> rows;
};
struct PlotFile {
  std::string name, svg, caption;
};

// A finding for the report's first section, "What this run shows", which a
// student reads first: one claim's verdict in plain words (findings.cpp,
// finding_from). Its title is the claim's plain statement qualified by the
// verdict, so it says no more than the claim's criteria tested; its text
// gives each criterion's estimates, every number a cell of criteria.csv.
// The verdict's measurements and reasons go in `detail`, which the report
// prints further down for the reviewer.
struct Finding {
  std::string title{};               // "Without a scale, attention at large d_k learns worse ..."
  std::string text{};                // for the student: each criterion's numbers and outcome
  std::string figure{};              // a file of the run: "final_accuracy.svg"
  std::string detail{};              // for the reviewer: the estimates with intervals, the tests, n
  std::string claim_id{};            // the claim it rests on: "C22"
  std::vector<std::string> files{};  // the files its numbers come from: criteria.csv first
};

// One part's share of the report: its claims, its tables
// (markdown, under its own "## " heading), its CSV files and its figures.
struct Section {
  std::string part{};  // "init", ...
  double seconds = 0;
  std::string time_note{};  // more on where the part's time went, for the report's end
  std::vector<Verdict> claims{};
  std::string markdown{};
  std::vector<CsvFile> csvs{};
  std::vector<PlotFile> plots{};
  // What the part cannot separate, one markdown bullet each, when its design is its own (its
  // widths, its seeds); a part that leaves it empty shares the study's list (report.cpp).
  std::vector<std::string> cannot_separate{};
  // The part's deciding numbers as a line for the terminal, printed after the verdict table
  // (scaling_study.cpp); empty for a part whose verdicts say enough there.
  std::string terminal_summary{};
};

// v as a CSV cell; NaN and infinities as an empty cell.
cli::CsvCell csv_number(double v);
// An estimate's "name" and "name_se" cells.
void add_estimate(CsvRow& row, const Interval& e);
// A figure of the study's plots: 540 px high, so the panels of a grid keep a
// readable aspect.
plot::Figure figure(const std::string& title, const std::string& x, bool log_x,
                    const std::string& y, bool log_y);
// A mode's series: its label, its fixed look (mode_look), 1/sqrt(d_k) drawn thick.
plot::Series mode_series(const std::string& mode, bool markers = false);
// An arm's look (Arm::look): the same in every panel and figure.
ModeLook mode_look(const std::string& mode);
// `modes` (in their order) as the panels that show them: one panel when
// they fit (at most plot::kMaxSeries, no colour twice); else the default
// arms first, the rest in further panels, each beside `none` and
// 1/sqrt(d_k) to compare against.
std::vector<std::vector<std::string>> mode_panels(const std::vector<std::string>& modes);
// The title of panel `index` of mode_panels' `count`: nothing for one panel.
std::string panel_suffix(size_t index, size_t count);
// A point with its interval as error bars or a band (a missing bound: the point).
void add_point(plot::Series& s, double x, const Interval& i);
// Where the answer is looked up: reverse's cross-attention, recall's second layer.
std::string key_layer(const std::string& task);

// The report: report.md (a header, every claim in id order with the table
// of verdicts, each section's tables in order, what the study cannot
// separate, the plots, where the time went), and every section's CSV files
// and plots, each file written atomically into `dir`.
struct ReportInfo {
  std::string command;  // the exact command line
  uint64_t seed = 0;
  int threads = 0;
  int64_t training_seeds = 0;  // the train part's, 0 when it did not run
  double seconds = 0;          // wall time of the whole run
};
void write_report(const std::string& dir, const ReportInfo& info,
                  const std::vector<Section>& sections);
// Every section's claims in id order (C1 ... C19), whichever part judged them.
std::vector<Verdict> claims_in_order(const std::vector<Section>& sections);
// Every file name a study can write into its folder (tested against what a
// run of every part writes), so a new study can clear an old one's files.
const std::vector<std::string>& study_files();

}  // namespace gradflow::study
