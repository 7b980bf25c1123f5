// Tick placement, tick labels and the data-to-pixel mapping behind
// examples/toolkit/plot/svg_plot.h.
//
// Kept apart from the drawing code because this is the arithmetic worth testing on its own:
// "nice" 1-2-5 steps on linear axes, decades on log axes, and labels that never show
// floating-point noise such as 0.30000000000000004.
//
// Labels come in two styles only, the same on every axis of a report: plain decimals with the
// same number of decimals along the axis, and powers of ten with a superscript exponent. A log
// axis labels its decades always as powers of ten (10^0, 10^1, ...), a linear axis its ticks as
// plain decimals, switching to powers of ten (2×10^-5, never 2e-05) only for values outside
// 0.001..1e6. The one exception: a log axis too narrow for three power-of-ten labels (60..150)
// is labelled as a linear axis would be.
//
//   linear_ticks(0, 1)    -> 0.0 0.2 0.4 0.6 0.8 1.0
//   linear_ticks(0, 5e-5) -> 0 10^-5 2×10^-5 3×10^-5 4×10^-5 5×10^-5
//   log_ticks(3, 2000)    -> 10^1 10^2 10^3, plus unlabelled minor ticks at 4..9, 20..90, ...
//   log_ticks(1e-6, 1e-2) -> 10^-6 ... 10^-2 (label "10", superscript exponent "-6")
#pragma once

#include <string>
#include <vector>

namespace gradflow::plot {

// Every member has an initializer, even if only {}, so designated initializers may leave any
// of them out without tripping -Wmissing-field-initializers (the same holds in svg_plot.h).
struct Tick {
  double value = 0;
  // Text before any superscript: "0.25", "10", "2×10". Empty for an unlabelled tick.
  std::string label{};
  // Superscript drawn after `label`, e.g. "-5" for 10^-5; empty for plain decimals.
  std::string exponent{};
  // Decades and labelled ticks get a long tick mark; the rest (log axes only) a short one.
  bool major = true;
};

// Ticks at every multiple of the smallest 1-2-5 step (1, 2, 5, 10, 20, ...) that leaves at most
// max_ticks of them inside [lo, hi]. Labels have as many decimals as the step needs, all the
// same number, switching to powers of ten when the largest tick is outside 0.001..1e6: then
// every label has that tick's power and the mantissas share their decimals (0.5×10^6, 1.0×10^6,
// 1.5×10^6), except on ranges too narrow for their distance from zero (1e9 + 0.01), where each
// label gets its own power. Throws Error unless lo < hi are finite and max_ticks >= 2.
std::vector<Tick> linear_ticks(double lo, double hi, int max_ticks = 8);

// Ticks for a log axis over [lo, hi]: decades labelled 10^k (every k-th one when there are more
// than max_labels), 2× and 5× ticks labelled 2×10^k and 5×10^k when the range spans about two
// decades or less and the labels fit the budget, unlabelled minor ticks at 2..9 × 10^k when the
// range spans at most six decades. A range under two decades with fewer than three such labels
// (say 60..150) gets linear_ticks instead. Throws Error unless 0 < lo < hi are finite and
// max_labels >= 2.
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
