#include "examples/common/plot_layout.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace gradflow::plot {
namespace {

// Average advance of a DejaVu Sans glyph in em: digits are 0.64, lowercase letters about 0.6.
constexpr double kEm = 0.62;
constexpr double kSample = 32;        // A legend entry's sample line (24 px) and the gap after it.
constexpr double kLegendPad = 8;      // Inside the legend box, around the entries.
constexpr double kLegendGap = 14;     // Between the plot area and a legend to its right.
constexpr double kEntryGap = 20;      // Between entries sharing a row of a legend below the plot.
constexpr double kRightShare = 0.35;  // Widest legend kept to the right of the plot, of the width.

// Characters, not bytes: UTF-8 continuation bytes (10xxxxxx) take no width of their own.
std::size_t glyphs(std::string_view s) {
  return static_cast<std::size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

// The label cut to fit `width` pixels of legend text, the cut marked with an ellipsis.
std::string shorten(const std::string& s, double width) {
  const auto max = static_cast<std::size_t>(std::max(4.0, width / (kEm * kLegendFont)));
  if (glyphs(s) <= max) return s;
  std::size_t kept = 0, cut = 0;
  for (; cut < s.size(); ++cut) {  // Stops at the first byte of character number `max`.
    if ((s[cut] & 0xC0) != 0x80 && kept++ == max - 1) break;
  }
  return s.substr(0, cut) + "…";
}

double tick_width(const Tick& t) {
  return text_width(t.label, kTickFont) + text_width(t.exponent, kExponentFont);
}

// The most ticks (at most 8) whose labels keep clear of each other along `pixels`.
std::vector<Tick> fitting_ticks(Range r, bool log, double pixels, bool horizontal) {
  const Scale scale{r.lo, r.hi, log, 0, pixels};
  for (int max = 8;; --max) {
    std::vector<Tick> ticks = log ? log_ticks(r.lo, r.hi, max) : linear_ticks(r.lo, r.hi, max);
    if (max == 2) return ticks;
    bool clear = true;
    const Tick* previous = nullptr;
    for (const Tick& t : ticks) {
      if (t.label.empty()) continue;
      if (previous) {
        const double needed =
            horizontal ? (tick_width(*previous) + tick_width(t)) / 2 + 10 : kTickFont + 5;
        clear = clear && scale.to_pixel(t.value) - scale.to_pixel(previous->value) >= needed;
      }
      previous = &t;
    }
    if (clear) return ticks;
  }
}

// Entries flow left to right in rows as wide as the figure, the box centred beneath the plot.
// Sets the entries' positions relative to the box's top edge; make_layout adds the box's y.
void flow_legend(const Figure& f, Layout& l) {
  const double room = f.width - 2 * kEdge - 2 * kLegendPad;
  double x = 0, widest_row = 0;
  int row = 0;
  for (std::size_t i = 0; i < f.series.size(); ++i) {
    if (f.series[i].label.empty()) continue;
    std::string text = shorten(f.series[i].label, room - kSample);
    const double width = kSample + text_width(text, kLegendFont);
    if (x > 0 && x + width > room) {
      ++row;
      x = 0;
    }
    l.legend.push_back({static_cast<int>(i), std::move(text), x, (row + 0.5) * kLegendRow});
    widest_row = std::max(widest_row, x + width);
    x += width + kEntryGap;
  }
  l.legend_width = widest_row + 2 * kLegendPad;
  l.legend_height = (row + 1) * kLegendRow + 2 * kLegendPad;
  l.legend_x = (f.width - l.legend_width) / 2;
  for (LegendEntry& e : l.legend) {
    e.x += l.legend_x + kLegendPad;
    e.y += kLegendPad;
  }
}

}  // namespace

double text_width(std::string_view text, double font) {
  return static_cast<double>(glyphs(text)) * kEm * font;
}

bool drawable(double v, bool log) { return std::isfinite(v) && (!log || v > 0); }

Range resolve_range(const std::vector<double>& values, const Axis& axis) {
  const auto to_space = [&](double v) { return axis.log ? std::log10(v) : v; };
  double a = 0, b = 1;  // In log10 space on a log axis, so no data means 1..10 there.
  if (!values.empty()) {
    const auto [lo, hi] = std::minmax_element(values.begin(), values.end());
    a = to_space(*lo);
    b = to_space(*hi);
  }
  if (b > a) {
    const double margin = 0.04 * (b - a);  // Keeps lines and markers off the frame.
    a -= margin;
    b += margin;
  } else {
    const double half = axis.log ? 0.5 : (a == 0 ? 1 : 0.1 * std::fabs(a));
    a -= half;
    b += half;
  }
  if (axis.min) a = to_space(*axis.min);
  if (axis.max) b = to_space(*axis.max);
  if (!(b > a)) {  // One fixed limit lies beyond all the data: keep it, move the other.
    const double width = axis.log ? 1 : std::max(1.0, 0.1 * std::fabs(axis.min ? a : b));
    if (axis.min) {
      b = a + width;
    } else {
      a = b - width;
    }
  }
  const Range r = axis.log ? Range{std::pow(10.0, a), std::pow(10.0, b)} : Range{a, b};
  const bool usable = std::isfinite(r.lo) && std::isfinite(r.hi) && r.lo < r.hi &&
                      std::isfinite(r.hi - r.lo) && (!axis.log || r.lo > 0);
  // Falling back is only needed for data near the limits of a double, e.g. ±1e308 together.
  return usable ? r : (axis.log ? Range{1, 10} : Range{0, 1});
}

Layout make_layout(const Figure& f) {
  std::vector<double> xs;
  for (const Series& s : f.series) {
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      if (drawable(s.x[i], f.x.log) && drawable(s.y[i], f.y.log)) xs.push_back(s.x[i]);
    }
  }
  const Range xr = resolve_range(xs, f.x);
  // The y range follows only the points inside the x range, so fixing x limits zooms in.
  std::vector<double> ys;
  for (const Series& s : f.series) {
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      if (drawable(s.x[i], f.x.log) && drawable(s.y[i], f.y.log) && s.x[i] >= xr.lo &&
          s.x[i] <= xr.hi) {
        ys.push_back(s.y[i]);
      }
    }
  }
  const Range yr = resolve_range(ys, f.y);

  Layout l;
  const double width = f.width, height = f.height;
  // The legend goes right of the plot while it is narrow; wider ones would squeeze the plot
  // (in small grid panels especially), so they go in rows beneath it instead.
  double widest = 0;
  for (const Series& s : f.series) widest = std::max(widest, text_width(s.label, kLegendFont));
  const bool has_legend = widest > 0;
  const bool right_legend = has_legend && kSample + widest + 2 * kLegendPad <= kRightShare * width;
  if (has_legend && !right_legend) flow_legend(f, l);

  const double below_axis = kEdge + (right_legend ? 0 : l.legend_height + 4);
  l.x_label_y = height - below_axis - 4;
  l.top = f.title.empty() ? 14 : 40;
  l.bottom =
      height - below_axis - (f.x.label.empty() ? 0 : kLabelFont + 8) - kTickLength - kTickFont - 8;
  l.bottom = std::max(l.bottom, l.top + 1);  // Tiny figures get cramped, but stay valid.
  l.y_ticks = fitting_ticks(yr, f.y.log, l.bottom - l.top, false);
  double widest_tick = 0;
  for (const Tick& t : l.y_ticks) widest_tick = std::max(widest_tick, tick_width(t));
  l.left = kEdge + (f.y.label.empty() ? 0 : kLabelFont + 8) + widest_tick + kTickLength + 4;

  if (right_legend) {
    l.legend_width = kSample + widest + 2 * kLegendPad;
    l.right = width - kEdge - l.legend_width - kLegendGap;
  } else {
    l.right = width - 3 * kEdge;  // Room for half of the last x tick label.
  }
  l.right = std::max(l.right, l.left + 1);
  l.x_ticks = fitting_ticks(xr, f.x.log, l.right - l.left, true);
  l.x = Scale{xr.lo, xr.hi, f.x.log, l.left, l.right};
  l.y = Scale{yr.lo, yr.hi, f.y.log, l.bottom, l.top};

  if (right_legend) {
    l.legend_x = l.right + kLegendGap;
    l.legend_y = l.top;
    for (std::size_t i = 0; i < f.series.size(); ++i) {
      if (f.series[i].label.empty()) continue;
      const double row = static_cast<double>(l.legend.size()) + 0.5;
      l.legend.push_back({static_cast<int>(i), f.series[i].label, l.legend_x + kLegendPad,
                          l.top + kLegendPad + row * kLegendRow});
    }
    l.legend_height = static_cast<double>(l.legend.size()) * kLegendRow + 2 * kLegendPad;
  } else if (has_legend) {
    l.legend_y = height - kEdge - l.legend_height;
    for (LegendEntry& e : l.legend) e.y += l.legend_y;
  }
  return l;
}

}  // namespace gradflow::plot
