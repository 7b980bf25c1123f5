// One progress line for the whole study, across its parts:
//   job 61/404  work 12%  elapsed 31s  eta 3m48s  train
// It counts every job of every part once (the parts' own units: draw sets,
// runs, stacks), and its ETA is in work, not jobs: a part's jobs differ in
// cost by 20x and run costliest first, so a count of jobs says little
// about the time left (the per-part bar it replaces showed "eta 38m37s" at
// run 1 of a part that took 6 minutes). The work is each job's units from
// the part table (study_time.h). Seconds per unit start at the calibration's
// and move to the measured ones as work is done: elapsed over the work
// done, with the calibration's weighed in as 2% of the study's work, so
// the first jobs do not swing it.
//
// On a terminal the line is redrawn in place (at most 10 times a second);
// anywhere else a plain line is printed every 10 seconds or 10% of the
// work, and after the last job. Made on the main thread; run_jobs calls
// the progress functions under its own lock, one at a time.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "examples/study/study_time.h"
#include "examples/toolkit/cli/progress.h"

namespace gradflow::study {

struct OverallProgressOptions {
  std::optional<bool> tty = std::nullopt;  // nullopt: the stream is a terminal
  cli::Clock clock = nullptr;              // nullptr: steady_clock
  double plain_interval = 10.0;            // plain mode: seconds between lines
};

class OverallProgress {
 public:
  // `unit_seconds`: one unit's seconds from the calibration (study_time.h).
  OverallProgress(std::vector<NamedCost> parts, double unit_seconds, int threads, std::ostream& out,
                  OverallProgressOptions options = {});
  // Ends an open terminal line, so an interrupted run's message starts its own.
  ~OverallProgress();
  OverallProgress(const OverallProgress&) = delete;
  OverallProgress& operator=(const OverallProgress&) = delete;

  // The part now running, by its index in `parts`; the ones before it are done.
  void start_part(size_t index);
  // The current part's jobs: done of total, as run_jobs reports them (0
  // first). A total other than planned replaces the plan's count and
  // spreads the part's units evenly over it.
  void update(size_t done, size_t total);
  // "done: 404 of 404 jobs in 2m03s (estimated 2m05s before the start)".
  void finish();

  size_t jobs() const;       // every part's, as planned or as reported
  size_t jobs_done() const;  // finished jobs of every part
  double eta(double now) const;
  std::string line(double now) const;

 private:
  double now() const;
  double units_done() const;
  void draw(double now, bool force);

  std::vector<NamedCost> parts_;
  double prior_seconds_per_unit_ = 0, estimate_ = 0, total_units_ = 0;
  int threads_ = 1;
  std::ostream& out_;
  OverallProgressOptions options_;
  bool tty_ = false, drawn_ = false, finished_ = false;
  double start_ = 0, last_output_ = -1e9, next_milestone_ = 0.1;
  size_t current_ = 0;       // the running part
  size_t earlier_jobs_ = 0;  // the current part's jobs done in earlier run_jobs calls
  size_t done_ = 0;          // the current part's, in its current run_jobs call
  bool started_ = false;     // the current part has reported its first progress
  std::vector<bool> finished_parts_;
};

}  // namespace gradflow::study
