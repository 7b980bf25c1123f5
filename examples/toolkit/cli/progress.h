// Progress of a long loop (training steps, or the scaling study's runs) for
// the example programs.
//
// On a terminal one line is redrawn in place (at most ~10 times a second):
//   [######--------------] 500/1500 33%  12.3 steps/s  40s eta 1m21s  loss 1.234
// It never wraps. When the window is too narrow the bar shrinks (to 10
// columns), then the caller's text loses its last fields (runs of text
// separated by two spaces, "loss 1.2  val_loss 1.5  acc 0.9": the first is
// kept), then the elapsed time and then the rate go, and only when even the
// first field does not fit beside the smallest bar does the bar go and the
// line get cut. So on 80 columns the bar and the loss show even for a run
// of days.
// Anywhere else (a log file, a pipe, CI) a plain line without '\r' or escape
// codes is printed every 10 seconds or every 10% of the run, whichever comes
// first, and always at the last step, so logs stay readable and small:
//   step 500/1500 33%  12.3 steps/s  elapsed 40s  eta 1m21s  loss 1.234
// The rate (and so the ETA) shows "--" until 0.5 s have passed: over less,
// it would measure little more than the clock (a first update right after
// construction once read "914913 steps/s").
//
// What is counted is named by ProgressOptions::unit: with {.unit = "run"},
//   run 13/126 10%  3.1 s/run  elapsed 40s  eta 5m47s
//
//   cli::Progress progress(steps);
//   for (int64_t step = 1; step <= steps; ++step) {
//     ...
//     progress.update(step, "loss " + std::to_string(loss));
//   }
//   progress.finish();
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>

namespace gradflow::cli {

// Seconds from any fixed origin; only differences are used.
using Clock = std::function<double()>;

// "0s", "59s", "1m23s", "2h05m", "3d04h"; "--" for a negative or non-finite
// duration (an ETA before the rate is known).
std::string format_duration(double seconds);

// Every field has an initializer, so designated initializers such as
// {.start_step = 500} compile cleanly under g++ 12's -Wmissing-field-initializers.
struct ProgressOptions {
  // What is counted, in the singular; the plain line starts with it and the
  // rate names it ("3.1 s/run", "2.5 runs/s"). `units` is its plural, for
  // an irregular one; empty means unit + "s".
  std::string unit = "step";
  std::string units = "";
  // Terminal mode: nullopt detects it (the stream is std::cout or std::cerr,
  // its fd is a tty and TERM is not "dumb"); tests force true or false.
  std::optional<bool> tty = std::nullopt;
  Clock clock = nullptr;         // nullptr: std::chrono::steady_clock
  double redraw_interval = 0.1;  // terminal mode: seconds between redraws
  double plain_interval = 10.0;  // plain mode: seconds between lines
  int64_t start_step = 0;        // a resumed run counts its rate from here
  int columns = 0;               // terminal width; 0 detects (80 if unknown)
};

class Progress {
 public:
  // REQUIRES: total >= 1, 0 <= options.start_step <= total and a non-empty
  // options.unit (else throws gradflow::Error).
  explicit Progress(int64_t total, std::ostream& out, ProgressOptions options = {});
  explicit Progress(int64_t total);  // reports to std::cerr
  // Ends an unfinished terminal line, so an error reported while unwinding
  // starts on a line of its own.
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // `step` counts completed steps, 1..total; `text` is the caller's summary
  // ("loss 1.234 acc 0.98"), kept for finish() and redraws.
  void update(int64_t step, std::string_view text = {});
  // Prints a line of its own (e.g. an evaluation result) without tearing the bar.
  void note(std::string_view line);
  // Prints the final summary line once, with `text` or else the last update's.
  void finish(std::string_view text = {});
  // The final line of a run that ended early, in place of finish()'s "done":
  // "interrupted at 315/1500 after 40s  ..." for `how` "interrupted".
  void stop(std::string_view how, std::string_view text = {});

  bool is_tty() const { return tty_; }

 private:
  // The counts without the caller's text, in ever shorter forms that leave
  // a terminal's width for the bar and the text:
  //   kPlain     "500/1500 33%  12.3 steps/s  elapsed 40s  eta 1m21s"
  //   kCompact   "500/1500 33%  12.3 steps/s  40s eta 1m21s"
  //   kShort     "500/1500 33%  12.3 steps/s  eta 1m21s"
  //   kShortest  "500/1500 33%  eta 1m21s"
  enum class Stats { kPlain, kCompact, kShort, kShortest };
  std::string stats(int64_t step, double now, Stats form) const;
  // "12.3 steps/s", "4.0 s/step", or "-- steps/s" while unknown.
  std::string rate_text(double per_second) const;
  // Units per second since the start, NaN until it means something.
  double rate(int64_t step, double now) const;
  std::string bar_line(double now) const;
  size_t width() const;
  void draw(double now);
  void print_plain(double now);
  // Prints "<head><elapsed>  <rate>  <text>" as the last line, once.
  void end_line(const std::string& head, std::string_view text);

  int64_t total_;
  std::ostream& out_;
  ProgressOptions options_;
  bool tty_ = false;
  int fd_ = -1;  // of std::cout or std::cerr, to ask the terminal's width
  double start_time_ = 0;
  double last_output_ = 0;  // time of the last redraw (tty) or line (plain)
  int64_t step_ = 0;
  int64_t next_milestone_ = 0;  // plain mode: the next 10% boundary
  std::string text_;
  bool drawn_ = false;  // a terminal line is open and needs a newline
  bool finished_ = false;
};

}  // namespace gradflow::cli
