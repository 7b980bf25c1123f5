// Training progress for the example programs.
//
// On a terminal one line is redrawn in place (at most ~10 times a second),
// the bar shrinking or going if the window is too narrow for the text:
//   [######--------------] 500/1500 33%  12.3 steps/s  40s eta 1m21s  loss 1.234
// Anywhere else (a log file, a pipe, CI) a plain line without '\r' or escape
// codes is printed every 10 seconds or every 10% of the run, whichever comes
// first, and always at the last step, so logs stay readable and small:
//   step 500/1500 33%  12.3 steps/s  elapsed 40s  eta 1m21s  loss 1.234
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
  // REQUIRES: total >= 1 and 0 <= options.start_step <= total (else throws
  // gradflow::Error).
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

  bool is_tty() const { return tty_; }

 private:
  // "500/1500 33%  12.3 steps/s  elapsed 40s  eta 1m21s  TEXT"; compact
  // drops "elapsed" to leave the terminal's width for the bar and the text.
  std::string stats(int64_t step, double now, bool compact) const;
  std::string bar_line(double now) const;
  size_t width() const;
  void draw(double now);
  void print_plain(double now);

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
