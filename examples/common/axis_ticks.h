// Tick placement, tick labels and the data-to-pixel mapping behind examples/common/svg_plot.h.
//
// Kept apart from the drawing code because this is the arithmetic worth testing on its own:
// "nice" 1-2-5 steps on linear axes, decades on log axes, and labels that never show
// floating-point noise such as 0.30000000000000004.
//
//   linear_ticks(0, 1)    -> 0.0 0.2 0.4 0.6 0.8 1.0
//   log_ticks(3, 2000)    -> 10 100 1000, plus unlabelled minor ticks at 4..9, 20..90, ...
//   log_ticks(1e-6, 1e-2) -> 10^-6 ... 10^-2 (label "10", superscript exponent "-6")
#pragma once

#include <string>
#include <vector>

namespace gradflow::plot {

// Every member has an initializer, even if only {}, so designated initializers may leave any
// of them out without tripping -Wmissing-field-initializers (the same holds in svg_plot.h).
struct Tick {
  double value = 0;
  // Text before any superscript: "0.25", "1e-05", "10", "2×10". Empty for an unlabelled tick.
  std::string label{};
  // Superscript drawn after `label`, e.g. "-5" for 10^-5; empty for everything but log decades
  // outside 0.001..10000, where a power of ten reads better than a string of zeros.
  std::string exponent{};
  // Decades and labelled ticks get a long tick mark; the rest (log axes only) a short one.
  bool major = true;
};

// Ticks at every multiple of the smallest 1-2-5 step (1, 2, 5, 10, 20, ...) that leaves at most
// max_ticks of them inside [lo, hi]. Labels have as many decimals as the step needs, switching
// to 1.5e+06 / 2e-05 notation outside 0.001..1e6. Throws Error unless lo < hi are finite and
// max_ticks >= 2.
std::vector<Tick> linear_ticks(double lo, double hi, int max_ticks = 8);

// Ticks for a log axis over [lo, hi]: labelled decades (every k-th one when there are more than
// max_labels), labelled 2× and 5× ticks when the range spans about two decades or less and the
// labels fit the budget, unlabelled minor ticks at 2..9 × 10^k when the range spans at most six
// decades. A range under two decades with fewer than three such labels (say 60..150) gets
// linear_ticks instead. Throws Error unless 0 < lo < hi are finite and max_labels >= 2.
std::vector<Tick> log_ticks(double lo, double hi, int max_labels = 8);

// A tick's label as plain text, "10^-5" for a superscript; for tests and logs.
std::string tick_text(const Tick& tick);

// Maps data values on one axis to pixels. pixel_lo is where `lo` lands; it may exceed pixel_hi,
// as on a y axis, where SVG's coordinates grow downward.
struct Scale {
  double lo = 0, hi = 1;
  bool log = false;
  double pixel_lo = 0, pixel_hi = 1;

  // Position of v between lo (0) and hi (1), measured in log10 space on a log axis; outside
  // [0, 1] for values out of range, NaN for v <= 0 on a log axis. REQUIRES: lo < hi (0 < lo on
  // a log axis).
  double fraction(double v) const;
  double to_pixel(double v) const;
};

// Compact, locale-independent text for an SVG coordinate: two decimals with trailing zeros
// dropped ("12.5", "3", "-0.25"), never "-0".
std::string format_number(double v);

}  // namespace gradflow::plot
