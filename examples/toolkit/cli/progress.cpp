#include "examples/toolkit/cli/progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "tensor/error.h"

namespace gradflow::cli {
namespace {

constexpr size_t kBarWidth = 20, kMinBarWidth = 10;
constexpr double kMinRateSeconds = 0.5;             // a rate over less time reads as noise
constexpr std::string_view kFieldSeparator = "  ";  // between fields of the caller's text
constexpr const char* kClearToEnd = "\x1b[K";       // erase what a longer previous line left

double steady_seconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// Control characters would break the one-line layout, and ESC would smuggle
// escape codes into plain logs.
std::string sanitize(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  return out;
}

// Cut to `width` bytes without splitting a UTF-8 sequence in the caller's text.
std::string fit(std::string line, size_t width) {
  if (line.size() <= width) return line;
  size_t cut = width;
  while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;
  line.resize(cut);
  return line;
}

// The first k/10 boundary (ceil(total * k / 10), k = 1..10) above `step`;
// computed without total * k so huge totals cannot overflow.
int64_t milestone_after(int64_t step, int64_t total) {
  for (int64_t k = 1; k <= 10; ++k) {
    int64_t boundary = total / 10 * k + (total % 10 * k + 9) / 10;
    if (boundary > step) return boundary;
  }
  return total + 1;
}

int fd_of(const std::ostream& out) {
  if (&out == &std::cout) return STDOUT_FILENO;
  if (&out == &std::cerr || &out == &std::clog) return STDERR_FILENO;
  return -1;
}

}  // namespace

std::string format_duration(double seconds) {
  // Beyond ~285 million years the cast below would overflow; no ETA is that useful.
  if (!std::isfinite(seconds) || seconds < 0 || seconds > 9e15) return "--";
  auto t = static_cast<long long>(seconds);
  char buf[48];
  if (t < 60) {
    std::snprintf(buf, sizeof buf, "%llds", t);
  } else if (t < 3600) {
    std::snprintf(buf, sizeof buf, "%lldm%02llds", t / 60, t % 60);
  } else if (t < 86400) {
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", t / 3600, t % 3600 / 60);
  } else {
    std::snprintf(buf, sizeof buf, "%lldd%02lldh", t / 86400, t % 86400 / 3600);
  }
  return buf;
}

Progress::Progress(int64_t total) : Progress(total, std::cerr) {}

Progress::Progress(int64_t total, std::ostream& out, ProgressOptions options)
    : total_(total), out_(out), options_(std::move(options)) {
  if (total_ < 1) fail("progress: total steps must be >= 1, got ", total_);
  if (options_.start_step < 0 || options_.start_step > total_)
    fail("progress: start step ", options_.start_step, " outside [0, ", total_, "]");
  if (options_.unit.empty()) fail("progress: the unit must not be empty");
  if (options_.units.empty()) options_.units = options_.unit + "s";
  options_.unit = sanitize(options_.unit);
  options_.units = sanitize(options_.units);
  if (!options_.clock) options_.clock = steady_seconds;
  fd_ = fd_of(out_);
  if (options_.tty) {
    tty_ = *options_.tty;
  } else {
    const char* term = std::getenv("TERM");
    tty_ = fd_ >= 0 && isatty(fd_) && !(term != nullptr && std::strcmp(term, "dumb") == 0);
  }
  start_time_ = last_output_ = options_.clock();
  step_ = options_.start_step;
  next_milestone_ = milestone_after(step_, total_);
}

Progress::~Progress() {
  if (!drawn_ || finished_) return;
  try {
    out_ << '\n' << std::flush;
  } catch (...) {  // a destructor must not throw, and there is no one to tell
  }
}

size_t Progress::width() const {
  // Asked at every redraw so a resized window never wraps the line, which
  // would defeat '\r' and scroll a new copy of the bar each time.
  int columns = options_.columns;
  winsize ws{};
  if (columns <= 0 && fd_ >= 0 && ioctl(fd_, TIOCGWINSZ, &ws) == 0) columns = ws.ws_col;
  if (columns <= 0) {
    const char* env = std::getenv("COLUMNS");
    columns = env != nullptr ? std::atoi(env) : 0;
  }
  if (columns <= 0) columns = 80;
  return static_cast<size_t>(std::max(columns - 1, 10));  // the last column may wrap
}

double Progress::rate(int64_t step, double now) const {
  const double elapsed = now - start_time_;
  const int64_t done = step - options_.start_step;
  return elapsed >= kMinRateSeconds && done > 0 ? static_cast<double>(done) / elapsed : NAN;
}

std::string Progress::rate_text(double per_second) const {
  if (!(per_second > 0) || !std::isfinite(per_second)) return "-- " + options_.units + "/s";
  char buf[48];
  // Slow units read better as seconds per unit than as "0.02 steps/s".
  if (per_second < 1) {
    std::snprintf(buf, sizeof buf, "%.1f s/", 1 / per_second);
    return buf + options_.unit;
  }
  std::snprintf(buf, sizeof buf, per_second >= 100 ? "%.0f " : "%.1f ", per_second);
  return buf + options_.units + "/s";
}

std::string Progress::stats(int64_t step, double now, Stats form) const {
  const double elapsed = now - start_time_, per_second = rate(step, now);
  const double eta = step == total_ ? 0.0 : static_cast<double>(total_ - step) / per_second;
  // Rounded down, so "100%" only ever means done; double so huge totals cannot overflow.
  auto percent =
      static_cast<int64_t>(100.0 * static_cast<double>(step) / static_cast<double>(total_));
  if (step < total_) percent = std::min<int64_t>(percent, 99);
  std::string out =
      std::to_string(step) + "/" + std::to_string(total_) + " " + std::to_string(percent) + "%  ";
  if (form != Stats::kShortest) out += rate_text(per_second) + "  ";
  if (form == Stats::kPlain) out += "elapsed " + format_duration(elapsed) + "  ";
  if (form == Stats::kCompact) out += format_duration(elapsed) + " ";
  return out + "eta " + format_duration(eta);
}

std::string Progress::bar_line(double now) const {
  // The caller's first field (the loss) matters more than the bar, and the
  // bar more than the other fields (an evaluation's, also printed as a note
  // of their own) and than the elapsed time and the rate: on a narrow
  // terminal the bar shrinks to its minimum, then the last fields go, then
  // the elapsed time, then the rate; only if the first field does not fit
  // beside the smallest bar even so does the bar go and the line get cut.
  const size_t w = width(), brackets = 3;  // "[", "] "
  auto with = [](std::string s, std::string_view text) {
    if (!text.empty()) s.append(kFieldSeparator).append(text);
    return s;
  };
  for (Stats form : {Stats::kCompact, Stats::kShort, Stats::kShortest}) {
    const std::string stats_text = stats(step_, now, form);
    std::string_view text = text_;
    while (brackets + kMinBarWidth + with(stats_text, text).size() > w) {
      const size_t last = text.rfind(kFieldSeparator);
      if (last == std::string_view::npos) break;
      text = text.substr(0, last);
    }
    const std::string s = with(stats_text, text);
    if (brackets + kMinBarWidth + s.size() > w) continue;
    const size_t bar = std::min(kBarWidth, w - s.size() - brackets);
    auto filled = static_cast<size_t>(static_cast<double>(bar) * static_cast<double>(step_) /
                                      static_cast<double>(total_));
    // Built with append: g++ 12 at -O3 warns falsely (-Wrestrict) on a chain of
    // string operator+ here.
    std::string line = "[";
    line.append(filled, '#').append(bar - filled, '-').append("] ").append(s);
    return line;
  }
  return fit(with(stats(step_, now, Stats::kCompact), text_), w);
}

void Progress::draw(double now) {
  out_ << '\r' << bar_line(now) << kClearToEnd << std::flush;
  drawn_ = true;
  last_output_ = now;
}

void Progress::print_plain(double now) {
  out_ << options_.unit << ' ' << stats(step_, now, Stats::kPlain)
       << (text_.empty() ? "" : kFieldSeparator) << text_ << '\n'
       << std::flush;
  last_output_ = now;
  next_milestone_ = milestone_after(step_, total_);
}

void Progress::update(int64_t step, std::string_view text) {
  if (finished_) return;
  step_ = std::clamp<int64_t>(step, 0, total_);
  text_ = sanitize(text);
  double now = options_.clock();
  if (tty_) {
    if (!drawn_ || step_ == total_ || now - last_output_ >= options_.redraw_interval) draw(now);
  } else if (step_ >= next_milestone_ || now - last_output_ >= options_.plain_interval) {
    // The last 10% boundary is total itself, so the final step always prints.
    print_plain(now);
  }
}

void Progress::note(std::string_view line) {
  if (tty_ && drawn_) {
    out_ << '\r' << kClearToEnd << sanitize(line) << '\n';
    if (!finished_) draw(options_.clock());
  } else {
    out_ << sanitize(line) << '\n';
  }
  out_ << std::flush;
}

void Progress::finish(std::string_view text) {
  end_line("done " + std::to_string(step_) + "/" + std::to_string(total_) + " in ", text);
}

void Progress::stop(std::string_view how, std::string_view text) {
  end_line(
      std::string(how) + " at " + std::to_string(step_) + "/" + std::to_string(total_) + " after ",
      text);
}

void Progress::end_line(const std::string& head, std::string_view text) {
  if (finished_) return;
  finished_ = true;
  if (!text.empty()) text_ = sanitize(text);
  const double now = options_.clock();
  std::string line = head + format_duration(now - start_time_) + "  " + rate_text(rate(step_, now));
  if (!text_.empty()) line += std::string(kFieldSeparator) + text_;
  if (tty_) {
    // Whole, not cut to the width: this line is never redrawn, so wrapping
    // does no harm, and a cut could turn "accuracy 0.9998" into "accuracy 0.9".
    out_ << '\r' << line << kClearToEnd << '\n';
  } else {
    out_ << line << '\n';
  }
  out_ << std::flush;
  drawn_ = false;
}

}  // namespace gradflow::cli
