// One progress line for the whole study (overall_progress.h).
#include "examples/study/overall_progress.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <numeric>

namespace gradflow::study {

namespace {
// The calibration's seconds per unit count as this share of the study's work
// done at that speed, so the first few jobs, costlier or cheaper than their
// model, do not swing the ETA.
constexpr double kPriorShare = 0.02;

bool is_terminal(std::ostream& out) {
  const char* term = std::getenv("TERM");
  if (term == nullptr || std::string(term) == "dumb") return false;
  if (&out == &std::cerr) return ::isatty(2) != 0;
  if (&out == &std::cout) return ::isatty(1) != 0;
  return false;
}
}  // namespace

OverallProgress::OverallProgress(std::vector<NamedCost> parts, double unit_seconds, int threads,
                                 std::ostream& out, OverallProgressOptions options)
    : parts_(std::move(parts)),
      threads_(std::max(1, threads)),
      out_(out),
      options_(std::move(options)),
      finished_parts_(parts_.size(), false) {
  for (const NamedCost& p : parts_) total_units_ += p.cost.units();
  estimate_ = estimate_seconds(total_units_, unit_seconds, threads_);
  prior_seconds_per_unit_ = total_units_ > 0 ? estimate_ / total_units_ : 0;
  tty_ = options_.tty.value_or(is_terminal(out_));
  start_ = now();
}

OverallProgress::~OverallProgress() {
  if (drawn_ && tty_) out_ << "\n" << std::flush;
}

double OverallProgress::now() const {
  if (options_.clock) return options_.clock();
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void OverallProgress::start_part(size_t index) {
  for (size_t i = 0; i < index && i < parts_.size(); ++i) finished_parts_[i] = true;
  current_ = std::min(index, parts_.size());
  earlier_jobs_ = done_ = 0;
  started_ = false;
}

void OverallProgress::update(size_t done, size_t total) {
  if (current_ >= parts_.size()) return;
  PartCost& cost = parts_[current_].cost;
  if (done == 0) {  // a run_jobs call starts: after an earlier one, its jobs count on
    if (started_) earlier_jobs_ += done_;
    done_ = 0;
    started_ = true;
    if (earlier_jobs_ + total != cost.jobs.size()) {
      // The plan's count was off (a part the table models loosely): the
      // same work, spread evenly over the jobs it does run.
      const double units = cost.units() - cost.before_jobs;
      const size_t n = earlier_jobs_ + total;
      cost.jobs.assign(n, n > 0 ? units / static_cast<double>(n) : 0.0);
      total_units_ = 0;
      for (const NamedCost& p : parts_) total_units_ += p.cost.units();
    }
    draw(now(), false);
    return;
  }
  done_ = done;
  draw(now(), done == total && current_ + 1 == parts_.size());
}

size_t OverallProgress::jobs() const {
  size_t n = 0;
  for (const NamedCost& p : parts_) n += p.cost.jobs.size();
  return n;
}

size_t OverallProgress::jobs_done() const {
  size_t n = earlier_jobs_ + done_;
  for (size_t i = 0; i < parts_.size(); ++i)
    if (finished_parts_[i]) n += parts_[i].cost.jobs.size();
  return n;
}

double OverallProgress::units_done() const {
  double units = 0;
  for (size_t i = 0; i < parts_.size(); ++i)
    if (finished_parts_[i]) units += parts_[i].cost.units();
  if (current_ >= parts_.size() || !started_) return units;
  const PartCost& cost = parts_[current_].cost;
  const size_t k = std::min(earlier_jobs_ + done_, cost.jobs.size());
  units += cost.before_jobs;
  units += std::accumulate(cost.jobs.begin(), cost.jobs.begin() + static_cast<ptrdiff_t>(k), 0.0);
  // The jobs under way, one per thread, are about half done on average.
  const size_t running = std::min(cost.jobs.size(), k + static_cast<size_t>(threads_));
  for (size_t j = k; j < running; ++j) units += 0.5 * cost.jobs[j];
  return units;
}

double OverallProgress::eta(double now) const {
  const double elapsed = std::max(0.0, now - start_);
  const double done = units_done(), prior = kPriorShare * total_units_;
  if (done + prior <= 0) return estimate_ - elapsed;
  const double per_unit = (elapsed + prior_seconds_per_unit_ * prior) / (done + prior);
  return std::max(0.0, total_units_ - done) * per_unit;
}

std::string OverallProgress::line(double now) const {
  const double share = total_units_ > 0 ? std::min(1.0, units_done() / total_units_) : 1.0;
  char work[32];
  std::snprintf(work, sizeof work, "%.0f%%", std::floor(100 * share));
  std::string out = "job " + std::to_string(jobs_done()) + "/" + std::to_string(jobs()) +
                    "  work " + work + "  elapsed " + cli::format_duration(now - start_) +
                    "  eta " + cli::format_duration(eta(now));
  if (current_ < parts_.size()) out += "  " + parts_[current_].part;
  return out;
}

void OverallProgress::draw(double now, bool force) {
  if (finished_) return;
  const double share = total_units_ > 0 ? units_done() / total_units_ : 1.0;
  if (tty_) {
    if (!force && now - last_output_ < 0.1) return;
    // Short enough for 80 columns ("job 9999/9999 ... depth-train" is 70).
    out_ << "\r" << line(now) << "\033[K" << std::flush;
    drawn_ = true;
  } else {
    if (!force && now - last_output_ < options_.plain_interval && share < next_milestone_) return;
    out_ << line(now) << "\n" << std::flush;
    while (next_milestone_ <= share) next_milestone_ += 0.1;
  }
  last_output_ = now;
}

void OverallProgress::finish() {
  if (finished_) return;
  for (size_t i = 0; i < parts_.size(); ++i) finished_parts_[i] = true;
  current_ = parts_.size();
  earlier_jobs_ = done_ = 0;
  const double t = now();
  if (tty_ && drawn_) out_ << "\r\033[K";
  out_ << "done: " << jobs_done() << " of " << jobs() << " jobs in "
       << cli::format_duration(t - start_) << " (estimated " << cli::format_duration(estimate_)
       << " before the start)\n"
       << std::flush;
  drawn_ = false;
  finished_ = true;
}

}  // namespace gradflow::study
