#include "examples/toolkit/plot/axis_ticks.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <system_error>

#include "tensor/error.h"

namespace gradflow::plot {
namespace {

// m × 10^e as close as a double gets: dividing an integer by an exact power of ten is correctly
// rounded, while multiplying by the inexact 10^-e is what turns 3 × 0.1 into 0.30000000000000004.
double scaled(double m, int e) { return e >= 0 ? m * std::pow(10.0, e) : m / std::pow(10.0, -e); }

// std::to_chars rather than printf: it ignores the C locale, so no "0,5" under de_DE.
std::string to_text(double v, std::chars_format format, int precision) {
  char buf[512];  // Fixed notation of a double can need 309 digits before the point.
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, format, precision);
  return ec == std::errc() ? std::string(buf, end) : std::string("?");
}

// The most decimals the mantissas of one axis share; see step_ticks.
constexpr int kMaxSharedDecimals = 6;

// Decimal digits of a non-negative integer held in a double.
int digits(double n) {
  int count = 1;
  for (; n >= 10; n /= 10) ++count;
  return count;
}

// "m×10" with superscript e for m × 10^e, just "10" (or "-10") when m is ±1: the one
// scientific style of every axis, linear or log, so a report never shows 1e-05 beside 10⁻⁵.
void set_power(Tick& tick, const std::string& m, int e) {
  tick.label = m == "1" ? "10" : m == "-1" ? "-10" : m + "×10";
  tick.exponent = std::to_string(e);
}

// The tick's value as m × 10^e with its own e, and at most `decimals` decimals in m.
void set_own_power(Tick& tick, int decimals) {
  const std::string s =
      to_text(tick.value, std::chars_format::scientific, decimals);  // "-1.50e+06"
  const std::size_t at = s.find('e');
  if (tick.value == 0 || at == std::string::npos) {
    tick.label = tick.value == 0 ? "0" : s;
    return;
  }
  std::string m = s.substr(0, at);
  if (m.find('.') != std::string::npos) {
    while (m.back() == '0') m.pop_back();
    if (m.back() == '.') m.pop_back();
  }
  int e = 0;
  std::from_chars(s.data() + at + (s[at + 1] == '+' ? 2 : 1), s.data() + s.size(), e);
  set_power(tick, m, e);
}

// Ticks k × m × 10^e for k in [first, last].
std::vector<Tick> step_ticks(double first, double last, int m, int e) {
  const int top_exponent = e + digits(std::max(std::fabs(first), std::fabs(last)) * m) - 1;
  const bool scientific = top_exponent >= 6 || top_exponent < -3;
  std::vector<Tick> ticks;
  for (auto k = static_cast<std::int64_t>(first); k <= static_cast<std::int64_t>(last); ++k) {
    const double units = static_cast<double>(k) * m;  // Exact: |k| stays far below 2^53.
    Tick tick{.value = scaled(units, e)};
    if (k == 0) {
      tick.label = scientific ? "0" : to_text(0.0, std::chars_format::fixed, std::max(0, -e));
    } else if (scientific) {
      // All with the largest tick's power of ten, so the mantissas share their decimals:
      // 0.5×10^6, 1.0×10^6, 1.5×10^6. A range too narrow for its distance from zero (1e9 +
      // 1e-6) would need a string of zeros that way, so there each tick gets its own power
      // and just the significant digits of the integer k × m, which recover it exactly.
      const int decimals = top_exponent - e;
      if (decimals <= kMaxSharedDecimals) {
        set_power(tick, to_text(scaled(units, -decimals), std::chars_format::fixed, decimals),
                  top_exponent);
      } else {
        set_own_power(tick, digits(std::fabs(units)) - 1);
      }
    } else {
      tick.label = to_text(tick.value, std::chars_format::fixed, std::max(0, -e));
    }
    ticks.push_back(std::move(tick));
  }
  return ticks;
}

}  // namespace

std::vector<Tick> linear_ticks(double lo, double hi, int max_ticks) {
  if (!(std::isfinite(lo) && std::isfinite(hi) && lo < hi)) {
    fail("linear_ticks: need finite lo < hi, got [", lo, ", ", hi, "]");
  }
  if (max_ticks < 2) fail("linear_ticks: max_ticks must be at least 2, got ", max_ticks);
  // hi/n - lo/n rather than (hi - lo)/n, which overflows for limits near ±DBL_MAX.
  const double raw = hi / max_ticks - lo / max_ticks;
  const int e_raw = static_cast<int>(std::floor(std::log10(raw)));
  // Steps below `raw` can still fit when the range ends just short of a multiple, so start one
  // decade lower; two decades higher always fits.
  for (int e = e_raw - 1; e <= e_raw + 2; ++e) {
    for (int m : {1, 2, 5}) {
      const double step = scaled(m, e);
      if (!(step > 0 && std::isfinite(step))) continue;  // Denormal or overflowing ranges.
      const double first = std::ceil(lo / step), last = std::floor(hi / step);
      if (last - first + 1 <= max_ticks) return step_ticks(first, last, m, e);
    }
  }
  // Only reachable at the edges of the double range; the ends still make a usable axis.
  std::vector<Tick> ends = {Tick{.value = lo}, Tick{.value = hi}};
  for (Tick& t : ends) set_own_power(t, 2);
  return ends;
}

std::vector<Tick> log_ticks(double lo, double hi, int max_labels) {
  if (!(std::isfinite(lo) && std::isfinite(hi) && 0 < lo && lo < hi)) {
    fail("log_ticks: need finite 0 < lo < hi, got [", lo, ", ", hi, "]");
  }
  if (max_labels < 2) fail("log_ticks: max_labels must be at least 2, got ", max_labels);
  const double a = std::log10(lo), b = std::log10(hi);
  // Slack for log10 rounding, so an axis limit set exactly at 10^k still gets its tick.
  constexpr double kSlack = 1e-9;
  const auto inside = [&](int m, int e) {
    const double at = std::log10(m) + e;
    return at >= a - kSlack && at <= b + kSlack;
  };
  const int e0 = static_cast<int>(std::ceil(a - kSlack));
  const int e1 = static_cast<int>(std::floor(b + kSlack));
  const int decades = std::max(0, e1 - e0 + 1);
  const int stride = std::max(1, (decades + max_labels - 1) / max_labels);

  // 2× and 5× labels only help when few decades are visible, and only if the budget allows.
  int minor_labels = 0;
  for (int e = e0 - 1; e <= e1; ++e) minor_labels += inside(2, e) + inside(5, e);
  const bool label_minors = b - a <= 2.2 && stride == 1 && decades + minor_labels <= max_labels;
  const bool draw_minors = b - a <= 6;

  struct Mark {
    int m, e;
    bool labelled;
  };
  std::vector<Mark> marks;
  int labelled = 0;
  for (int e = e0 - 1; e <= e1; ++e) {
    for (int m = 1; m <= 9; ++m) {
      if (!inside(m, e)) continue;
      // Aligned to multiples of the stride so 10^0 stays labelled when it is visible.
      const bool label =
          m == 1 ? ((e % stride) + stride) % stride == 0 : label_minors && (m == 2 || m == 5);
      if (!label && m != 1 && !draw_minors) continue;
      marks.push_back({m, e, label});
      labelled += label;
    }
  }
  if (labelled < 3 && b - a < 2) {
    // Too little of a decade to label by powers of ten; plain steps read better.
    return linear_ticks(lo, hi, max_labels);
  }

  std::vector<Tick> ticks;
  for (const Mark& mark : marks) {
    Tick tick{.value = scaled(mark.m, mark.e), .major = mark.m == 1 || mark.labelled};
    if (mark.labelled) {
      tick.label = mark.m == 1 ? "10" : std::to_string(mark.m) + "×10";
      tick.exponent = std::to_string(mark.e);
    }
    ticks.push_back(std::move(tick));
  }
  return ticks;
}

std::string tick_text(const Tick& tick) {
  return tick.exponent.empty() ? tick.label : tick.label + "^" + tick.exponent;
}

double Scale::fraction(double v) const {
  if (log) {
    if (!(v > 0)) return std::nan("");
    return (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
  }
  return (v - lo) / (hi - lo);
}

double Scale::to_pixel(double v) const { return pixel_lo + fraction(v) * (pixel_hi - pixel_lo); }

std::string format_number(double v) {
  std::string s = to_text(v, std::chars_format::fixed, 2);
  const std::size_t point = s.find('.');
  if (point != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s == "-0" ? "0" : s;
}

}  // namespace gradflow::plot
