#include "examples/toolkit/plot/plot_layout.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <utility>

namespace gradflow::plot {
namespace {

// Average advance of a DejaVu Sans glyph in em: digits are 0.64, lowercase letters about 0.6.
constexpr double kEm = 0.62;
constexpr double kSample = 32;        // A legend entry's sample line (24 px) and the gap after it.
constexpr double kLegendPad = 8;      // Inside the legend box, around the entries.
constexpr double kLegendGap = 14;     // Between the plot area and a legend to its right.
constexpr double kEntryGap = 20;      // Between entries sharing a row of a legend below the plot.
constexpr double kRightShare = 0.35;  // Widest legend kept to the right of the plot, of the width.
// Slack for points exactly on a fixed limit, whose fraction may round to 1 + 1e-16.
constexpr double kInside = 1e-9;

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

// The axis's own ticks, in range, labelled as %g writes them: 16, 0.25, 1e+06.
std::vector<Tick> chosen_ticks(Range r, const Axis& axis) {
  std::vector<double> values;
  for (const double v : axis.ticks)
    if (v >= r.lo && v <= r.hi) values.push_back(v);
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  std::vector<Tick> ticks;
  for (const double v : values) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", v);
    ticks.push_back({.value = v, .label = text});
  }
  return ticks;
}

// The axis's own ticks if it has them; else the most ticks (at most 8) whose labels keep clear
// of each other along `pixels`.
std::vector<Tick> fitting_ticks(Range r, const Axis& axis, double pixels, bool horizontal) {
  if (!axis.ticks.empty()) return chosen_ticks(r, axis);
  const bool log = axis.log;
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

// One line if it fits `width`, else two, broken at the last space that lets the first fit
// (or the first space, if none does).
std::vector<std::string> title_lines(const std::string& title, double width) {
  if (title.empty()) return {};
  if (text_width(title, kTitleFont) <= width) return {title};
  std::size_t cut = std::string::npos;
  for (std::size_t at = title.find(' '); at != std::string::npos; at = title.find(' ', at + 1)) {
    if (cut != std::string::npos && text_width(title.substr(0, at), kTitleFont) > width) break;
    cut = at;
  }
  if (cut == std::string::npos) return {title};
  return {title.substr(0, cut), title.substr(cut + 1)};
}

// A series has a legend entry when it has a label and something to draw: an
// empty one (a mode a run left out) keeps its colour without a dead entry.
bool in_legend(const Series& s) { return !s.label.empty() && !s.x.empty(); }

// Entries flow left to right in rows as wide as `width`, the box centred in it. Sets the
// entries' positions relative to the box's top edge; the caller adds the box's y.
void flow_legend(const std::vector<Series>& series, double width, Layout& l) {
  const double room = width - 2 * kEdge - 2 * kLegendPad;
  double x = 0, widest_row = 0;
  int row = 0;
  for (std::size_t i = 0; i < series.size(); ++i) {
    if (!in_legend(series[i])) continue;
    std::string text = shorten(series[i].label, room - kSample);
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
  l.legend_x = (width - l.legend_width) / 2;
  for (LegendEntry& e : l.legend) {
    e.x += l.legend_x + kLegendPad;
    e.y += kLegendPad;
  }
}

// Calls take(x, y) for every drawable point of f, and for both ends of every drawable spread
// (at the point's x), so the axis ranges cover bands and error bars too.
template <class Take>
void for_each_point(const Figure& f, Take take) {
  for (const Series& s : f.series) {
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      if (!drawable(s.x[i], f.x.log)) continue;
      if (drawable(s.y[i], f.y.log)) take(s.x[i], s.y[i]);
      if (spread_drawable(s, i, f.x.log, f.y.log)) {
        take(s.x[i], s.lo[i]);
        take(s.x[i], s.hi[i]);
      }
    }
  }
}

Range x_range(const Figure& f) {
  std::vector<double> xs;
  for_each_point(f, [&](double x, double) { xs.push_back(x); });
  return resolve_range(xs, f.x);
}

// The y values inside x range xr, so fixing x limits zooms in.
std::vector<double> y_values(const Figure& f, Range xr) {
  std::vector<double> ys;
  for_each_point(f, [&](double x, double y) {
    if (x >= xr.lo && x <= xr.hi) ys.push_back(y);
  });
  return ys;
}

}  // namespace

std::string_view series_colour(const Series& s, int index) {
  if (!s.color.empty()) return s.color;
  return s.reference ? kReferenceColor : palette_color(index);
}

double text_width(std::string_view text, double font) {
  return static_cast<double>(glyphs(text)) * kEm * font;
}

bool drawable(double v, bool log) { return std::isfinite(v) && (!log || v > 0); }

bool spread_drawable(const Series& s, std::size_t i, bool x_log, bool y_log) {
  return i < s.lo.size() && i < s.hi.size() && drawable(s.x[i], x_log) &&
         drawable(s.lo[i], y_log) && drawable(s.hi[i], y_log);
}

bool uses_error_bars(const Series& s) {
  return s.markers && !s.lo.empty() && s.x.size() <= kErrorBarMaxPoints;
}

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
  const Range xr = x_range(f);
  const Range yr = resolve_range(y_values(f, xr), f.y);

  Layout l;
  const double width = f.width, height = f.height;
  l.title_lines = title_lines(f.title, width - 2 * kEdge);
  l.top = f.title.empty() ? 14 : 40 + kTitleRow * static_cast<double>(l.title_lines.size() - 1);
  // The legend goes right of the plot while it is narrow and short enough to end above the
  // figure's bottom; others would squeeze the plot (in small grid panels especially) or run
  // off it, so they go in rows beneath it instead.
  double widest = 0, entries = 0;
  for (const Series& s : f.series) {
    if (!in_legend(s)) continue;
    widest = std::max(widest, text_width(s.label, kLegendFont));
    ++entries;
  }
  const bool has_legend = widest > 0;
  const bool right_legend = has_legend &&
                            kSample + widest + 2 * kLegendPad <= kRightShare * width &&
                            l.top + entries * kLegendRow + 2 * kLegendPad <= height - kEdge;
  if (has_legend && !right_legend) flow_legend(f.series, width, l);

  const double below_axis = kEdge + (right_legend ? 0 : l.legend_height + 4);
  l.x_label_y = height - below_axis - 4;
  l.bottom =
      height - below_axis - (f.x.label.empty() ? 0 : kLabelFont + 8) - kTickLength - kTickFont - 8;
  l.bottom = std::max(l.bottom, l.top + 1);  // Tiny figures get cramped, but stay valid.
  l.y_ticks = fitting_ticks(yr, f.y, l.bottom - l.top, false);
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
  l.x_ticks = fitting_ticks(xr, f.x, l.right - l.left, true);
  l.x = Scale{xr.lo, xr.hi, f.x.log, l.left, l.right};
  l.y = Scale{yr.lo, yr.hi, f.y.log, l.bottom, l.top};

  if (right_legend) {
    l.legend_x = l.right + kLegendGap;
    l.legend_y = l.top;
    for (std::size_t i = 0; i < f.series.size(); ++i) {
      if (!in_legend(f.series[i])) continue;
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

bool clip_segment(Point p, Point q, double& t0, double& t1) {
  t0 = 0;
  t1 = 1;
  for (const auto& [a, b] : {std::pair{p.x, q.x}, std::pair{p.y, q.y}}) {
    const double d = b - a;
    const double lo = -kInside - a, hi = 1 + kInside - a;  // Room to move along d.
    if (d == 0) {
      if (lo > 0 || hi < 0) return false;
      continue;
    }
    const double ta = lo / d, tb = hi / d;
    t0 = std::max(t0, std::min(ta, tb));
    t1 = std::min(t1, std::max(ta, tb));
  }
  return t0 <= t1;
}

std::vector<Point> clip_polygon(const std::vector<Point>& polygon) {
  // One side of the square at a time: keep what lies inside it, plus where edges cross it.
  std::vector<Point> in = polygon, out;
  for (int side = 0; side < 4; ++side) {
    const bool vertical = side < 2, upper = side % 2 == 1;
    // Signed distance inside the side; >= 0 keeps the point.
    const auto inside = [&](Point p) {
      const double v = vertical ? p.x : p.y;
      return upper ? 1 + kInside - v : v + kInside;
    };
    out.clear();
    for (std::size_t i = 0; i < in.size(); ++i) {
      const Point a = in[i], b = in[(i + 1) % in.size()];
      const double da = inside(a), db = inside(b);
      if (da >= 0) out.push_back(a);
      if ((da >= 0) != (db >= 0)) {
        const double t = da / (da - db);
        out.push_back({a.x + t * (b.x - a.x), a.y + t * (b.y - a.y)});
      }
    }
    std::swap(in, out);
  }
  for (Point& p : in) p = {std::clamp(p.x, 0.0, 1.0), std::clamp(p.y, 0.0, 1.0)};
  return in;
}

Range shared_y_range(const std::vector<Figure>& figures) {
  std::vector<double> ys;
  Axis axis{.log = !figures.empty() && figures.front().y.log};
  bool every_min = true, every_max = true;
  for (const Figure& f : figures) {
    for (double y : y_values(f, x_range(f))) {
      // A panel clips at its own fixed limits, so its values count only up to them.
      if (f.y.min) y = std::max(y, *f.y.min);
      if (f.y.max) y = std::min(y, *f.y.max);
      ys.push_back(y);
    }
    every_min = every_min && f.y.min.has_value();
    every_max = every_max && f.y.max.has_value();
    if (f.y.min) axis.min = std::min(axis.min.value_or(*f.y.min), *f.y.min);
    if (f.y.max) axis.max = std::max(axis.max.value_or(*f.y.max), *f.y.max);
  }
  if (!every_min) axis.min.reset();
  if (!every_max) axis.max.reset();
  return resolve_range(ys, axis);
}

GridLayout make_grid_layout(const std::vector<Figure>& figures, int columns,
                            const GridOptions& options) {
  GridLayout g;
  for (const Figure& f : figures) {
    g.cell_width = std::max(g.cell_width, static_cast<double>(f.width));
    g.cell_height = std::max(g.cell_height, static_cast<double>(f.height));
  }
  const int n = static_cast<int>(figures.size());
  g.columns = std::max(1, std::min(columns, n));
  g.rows = (n + columns - 1) / columns;
  g.width = g.columns * g.cell_width;
  g.height = g.rows * g.cell_height;
  // Shown display_width wide, the grid shrinks by width / display_width; drawing it that much
  // larger keeps the text at its nominal size on screen.
  if (options.display_width > 0) g.scale = std::max(1.0, g.width / options.display_width);

  Range shared{};
  if (options.share_y) shared = shared_y_range(figures);
  for (const Figure& f : figures) {
    Figure& p = g.panels.emplace_back(f);
    p.width = std::max(1, static_cast<int>(std::lround(f.width / g.scale)));
    p.height = std::max(1, static_cast<int>(std::lround(f.height / g.scale)));
    if (options.share_y) {
      p.y.min = shared.lo;
      p.y.max = shared.hi;
    }
    if (!options.legend_once) continue;
    for (std::size_t i = 0; i < p.series.size(); ++i) {
      Series& s = p.series[i];
      const bool known = std::any_of(g.legend_series.begin(), g.legend_series.end(),
                                     [&](const Series& e) { return e.label == s.label; });
      // Its data only tells the legend the spread's kind, and that it has any.
      if (in_legend(s) && !known) {
        Series& entry = g.legend_series.emplace_back(s);
        entry.color = series_colour(s, static_cast<int>(i));
      }
      if (s.name.empty()) s.name = s.label;
      s.label.clear();
    }
  }
  std::stable_partition(g.legend_series.begin(), g.legend_series.end(),
                        [](const Series& s) { return !s.reference; });
  if (options.legend_once) flow_legend(g.legend_series, g.width / g.scale, g.legend);
  if (!g.legend.legend.empty()) {
    g.legend_top = g.height;
    g.height += (g.legend.legend_height + kEdge) * g.scale;
  }
  return g;
}

}  // namespace gradflow::plot
