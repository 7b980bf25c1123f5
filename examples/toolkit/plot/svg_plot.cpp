#include "examples/toolkit/plot/svg_plot.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <utility>

#include "examples/toolkit/plot/axis_ticks.h"
#include "examples/toolkit/plot/plot_layout.h"
#include "tensor/error.h"

namespace gradflow::plot {
namespace {

// Blue, vermillion, bluish green, reddish purple, orange, sky blue, black.
constexpr std::string_view kPalette[kPaletteSize] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                                     "#E69F00", "#56B4E9", "#000000"};

// Positions are clamped to this many plot widths outside the plot, so an absurd value cannot
// print a 300-digit coordinate or overflow; only segments with such an end point lose accuracy.
constexpr double kFarAway = 1e9;
// Slack for points exactly on a fixed limit, whose fraction may round to 1 + 1e-16.
constexpr double kInside = 1e-9;

// Stroke widths and marker radii; an emphasised series gets the second of each pair.
constexpr double kLine = 1.8, kEmphasisLine = 3.2;
constexpr double kMarker = 3, kEmphasisMarker = 4.2;
constexpr double kBandOpacity = 0.18;
constexpr double kCap = 4;  // Half the width of an error bar's cap.

// Appends the parts in order. Building with append rather than "literal" + std::string also
// avoids GCC 12's false -Wrestrict error on the latter at -O3.
template <class... Parts>
void put(std::string& out, const Parts&... parts) {
  (out.append(std::string_view(parts)), ...);
}

std::string num(double v) { return format_number(v); }

// Shortest text that reads back as exactly v, for a scale factor that two decimals would blur.
std::string exact(double v) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : "1";
}

void check_axis(const Axis& axis, const char* name) {
  for (const auto& limit : {axis.min, axis.max}) {
    if (limit && !drawable(*limit, axis.log)) {
      fail("render_svg: ", name, "-axis limit ", *limit, " must be finite",
           axis.log ? " and positive on a log axis" : "");
    }
  }
  for (const double tick : axis.ticks) {
    if (!drawable(tick, axis.log)) {
      fail("render_svg: ", name, "-axis tick ", tick, " must be finite",
           axis.log ? " and positive on a log axis" : "");
    }
  }
  if (axis.min && axis.max && !(*axis.min < *axis.max)) {
    fail("render_svg: ", name, "-axis min ", *axis.min, " must be below max ", *axis.max);
  }
}

// The colour as a reader sees it, for comparing: lower case, "#abc" as "#aabbcc".
std::string normalised(std::string_view colour) {
  std::string out;
  for (const char c : colour) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (out.size() == 4 && out[0] == '#') out = {'#', out[1], out[1], out[2], out[2], out[3], out[3]};
  return out;
}

// The rule of svg_plot.h: at most kMaxSeries data series, no colour twice, and a colour for
// every series. Series without points draw nothing and are left out.
void check_panel(const Figure& f) {
  int data = 0;
  std::vector<std::pair<std::string, const Series*>> seen;  // Colour, the series showing it.
  for (std::size_t i = 0; i < f.series.size(); ++i) {
    const Series& s = f.series[i];
    if (s.x.empty()) continue;
    if (!s.reference) ++data;
    if (s.color.empty() && !s.reference && i >= static_cast<std::size_t>(kPaletteSize)) {
      fail("render_svg: panel '", f.title, "': series '", s.label, "' at position ", i,
           " is past the palette's ", kPaletteSize, " colours; give it a `color`");
    }
    const std::string colour = normalised(series_colour(s, static_cast<int>(i)));
    for (const auto& [other_colour, other] : seen) {
      if (other_colour == colour) {
        fail("render_svg: panel '", f.title, "' shows '", other->label, "' and '", s.label,
             "' in one colour, ", colour, "; a reader could not tell them apart");
      }
    }
    seen.emplace_back(colour, &s);
  }
  if (data > kMaxSeries) {
    fail("render_svg: panel '", f.title, "' shows ", data, " data series, more than the ",
         kMaxSeries, " a reader can tell apart; split them into panels or leave them to the CSV");
  }
}

// Under legend_once a label has one entry, so its line must look the same in every panel:
// colour and dashes. Markers and the spread's kind may differ (a band over seeds in one panel,
// every seed's own line in another); the entry shows the first panel's.
void check_one_look_per_label(const std::vector<Figure>& figures) {
  struct Look {
    std::string colour;
    bool dashed;
    bool operator==(const Look&) const = default;
  };
  std::vector<std::pair<std::string, Look>> looks;
  for (const Figure& f : figures) {
    for (std::size_t i = 0; i < f.series.size(); ++i) {
      const Series& s = f.series[i];
      if (s.label.empty() || s.x.empty()) continue;
      const Look look{normalised(series_colour(s, static_cast<int>(i))), s.dashed || s.reference};
      const auto it = std::find_if(looks.begin(), looks.end(),
                                   [&](const auto& entry) { return entry.first == s.label; });
      if (it == looks.end()) {
        looks.emplace_back(s.label, look);
      } else if (!(it->second == look)) {
        fail("render_svg_grid: legend_once needs '", s.label,
             "' to look the same in every panel, but panel '", f.title, "' draws it differently");
      }
    }
  }
}

void check_figure(const Figure& f) {
  if (f.width <= 0 || f.height <= 0) {
    fail("render_svg: figure size must be positive, got ", f.width, " x ", f.height);
  }
  check_axis(f.x, "x");
  check_axis(f.y, "y");
  for (const Series& s : f.series) {
    if (s.x.size() != s.y.size()) {
      fail("render_svg: series '", s.label, "' has ", s.x.size(), " x values but ", s.y.size(),
           " y values");
    }
    const bool none = s.lo.empty() && s.hi.empty();
    if (!none && (s.lo.size() != s.x.size() || s.hi.size() != s.x.size())) {
      fail("render_svg: series '", s.label, "' has ", s.x.size(), " x values but ", s.lo.size(),
           " lo and ", s.hi.size(), " hi values (both must be empty or as many as x)");
    }
  }
  check_panel(f);
}

// Ends a marker's <circle>: filled, or a ring for a dashed series, so that modes drawn on the
// same values (a learned scale on the default) show one inside the other.
void put_marker_paint(std::string& out, const Series& s, std::string_view colour) {
  if (s.dashed || s.reference) {
    put(out, "\" fill=\"none\" stroke=\"", colour, "\" stroke-width=\"1.5\"/>\n");
  } else {
    put(out, "\" fill=\"", colour, "\"/>\n");
  }
}

std::string_view dash_pattern(const Series& s) { return s.dashed || s.reference ? "6 4" : ""; }

// Fractions of the plot area to pixels, for a Point as clip_segment and clip_polygon use.
struct Pixels {
  const Layout& l;
  std::string x(double u) const { return num(l.left + u * (l.right - l.left)); }
  std::string y(double v) const { return num(l.bottom - v * (l.bottom - l.top)); }
  Point at(double x, double y) const {  // Data to fractions.
    return {std::clamp(l.x.fraction(x), -kFarAway, kFarAway),
            std::clamp(l.y.fraction(y), -kFarAway, kFarAway)};
  }
};

// What a page's script names a series by (Series::name), empty for an unnamed one.
const std::string& page_name(const Series& s) { return s.name.empty() ? s.label : s.name; }

// ` data-label="..."` naming a series for a page's script, or nothing for an unnamed one.
std::string label_attribute(const Series& s) {
  return page_name(s).empty() ? "" : " data-label=\"" + escape_xml(page_name(s)) + "\"";
}

// A value as a page's script reads it: 6 significant digits, enough for a step number.
std::string data_value(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// "x,y x,y ...": the series' drawable points in data units (a labelled series' only: a page
// names the values it shows on hover by their series).
std::string data_points(const Series& s, const Layout& l) {
  std::string out;
  if (page_name(s).empty()) return out;
  for (std::size_t i = 0; i < s.x.size(); ++i) {
    if (!drawable(s.x[i], l.x.log) || !drawable(s.y[i], l.y.log)) continue;
    put(out, out.empty() ? "" : " ", data_value(s.x[i]), ",", data_value(s.y[i]));
  }
  return out;
}

// ` data-x="lo hi lin" data-x-label="..."` on the plot's frame: the x-axis from data to the
// frame's edges and its name, so a page's script can say which x a pointer is at.
std::string x_axis_attributes(const Layout& l, const Axis& x) {
  if (!std::isfinite(l.x.lo) || !std::isfinite(l.x.hi)) return "";
  return " data-x=\"" + data_value(l.x.lo) + " " + data_value(l.x.hi) +
         (l.x.log ? " log" : " lin") + "\" data-x-label=\"" + escape_xml(x.label) + "\"";
}

bool inside(Point p) {
  return p.x >= -kInside && p.x <= 1 + kInside && p.y >= -kInside && p.y <= 1 + kInside;
}

void draw_series(std::string& out, const Series& s, int index, const Layout& l) {
  if (s.x.empty()) return;  // Past the palette it has no colour, and it would draw nothing.
  const std::string_view colour = series_colour(s, index);
  const Pixels px{l};
  std::string path, dots;
  const auto dot = [&](Point p, double radius) {
    put(dots, "<circle cx=\"", px.x(p.x), "\" cy=\"", px.y(p.y), "\" r=\"", num(radius));
    put_marker_paint(dots, s, colour);
  };
  const double marker = s.emphasis ? kEmphasisMarker : kMarker;

  Point previous{0, 0};
  std::size_t run = 0;    // Drawable points in a row so far, ending at `previous`.
  bool pen_down = false;  // Whether the path currently ends at `previous`.
  const std::size_t n = s.x.size();
  for (std::size_t i = 0; i <= n; ++i) {
    const bool ok = i < n && drawable(s.x[i], l.x.log) && drawable(s.y[i], l.y.log);
    if (!ok) {
      // A lone point would be invisible without a dot.
      if (run == 1 && !s.markers && inside(previous)) dot(previous, marker - 0.5);
      run = 0;
      pen_down = false;
      continue;
    }
    const Point point = px.at(s.x[i], s.y[i]);
    if (s.markers && inside(point)) dot(point, marker);
    double t0, t1;
    if (run > 0 && clip_segment(previous, point, t0, t1)) {
      const auto at = [&](double t) {
        return Point{std::clamp(previous.x + t * (point.x - previous.x), 0.0, 1.0),
                     std::clamp(previous.y + t * (point.y - previous.y), 0.0, 1.0)};
      };
      const Point a = at(t0), b = at(t1);
      if (!(pen_down && t0 == 0)) put(path, "M", px.x(a.x), " ", px.y(a.y));
      put(path, "L", px.x(b.x), " ", px.y(b.y));
      pen_down = t1 == 1;
    } else {
      pen_down = false;
    }
    previous = point;
    ++run;
  }
  // The group says which series it draws and where its points are, for a page's script
  // (page/page_script.cpp): a legend entry of the same label shows or hides it, and a pointer
  // over the plot reads the values.
  put(out, "<g class=\"curve\"", label_attribute(s), " data-points=\"", data_points(s, l), "\">\n");
  if (!path.empty()) {
    put(out, "<path class=\"series\" d=\"", path, "\" fill=\"none\" stroke=\"", colour,
        "\" stroke-width=\"", num(s.emphasis ? kEmphasisLine : kLine),
        "\" stroke-linejoin=\"round\" stroke-linecap=\"round\"");
    const std::string_view dash = dash_pattern(s);
    if (!dash.empty()) put(out, " stroke-dasharray=\"", dash, "\"");
    put(out, "/>\n", dots);
  } else {
    out += dots;
  }
  out += "</g>\n";
}

// Error bars: a vertical line from lo to hi at each point, with a cap at each end the plot
// area does not cut off.
void draw_error_bars(std::string& out, const Series& s, std::string_view colour, const Layout& l) {
  const Pixels px{l};
  std::string d;
  for (std::size_t i = 0; i < s.x.size(); ++i) {
    if (!spread_drawable(s, i, l.x.log, l.y.log)) continue;
    const Point a = px.at(s.x[i], s.lo[i]), b = px.at(s.x[i], s.hi[i]);
    double t0, t1;
    if (!clip_segment(a, b, t0, t1)) continue;
    const double x = std::clamp(a.x, 0.0, 1.0);
    const double y0 = std::clamp(a.y + t0 * (b.y - a.y), 0.0, 1.0);
    const double y1 = std::clamp(a.y + t1 * (b.y - a.y), 0.0, 1.0);
    put(d, "M", px.x(x), " ", px.y(y0), "L", px.x(x), " ", px.y(y1));
    const double centre = l.left + x * (l.right - l.left);
    const std::string from = num(std::max(l.left, centre - kCap));
    const std::string to = num(std::min(l.right, centre + kCap));
    if (t0 == 0) put(d, "M", from, " ", px.y(y0), "L", to, " ", px.y(y0));
    if (t1 == 1) put(d, "M", from, " ", px.y(y1), "L", to, " ", px.y(y1));
  }
  if (d.empty()) return;
  put(out, "<path class=\"error-bars\"", label_attribute(s), " d=\"", d,
      "\" fill=\"none\" stroke=\"", colour, "\" stroke-width=\"1.2\"/>\n");
}

// The spread between lo and hi: error bars or a band (see Series::lo). The band is one polygon
// per run of drawable points, along lo left to right and back along hi, clipped to the plot.
void draw_spread(std::string& out, const Series& s, int index, const Layout& l) {
  if (s.lo.empty()) return;
  const std::string_view colour = series_colour(s, index);
  if (uses_error_bars(s)) {
    draw_error_bars(out, s, colour, l);
    return;
  }
  const Pixels px{l};
  std::string d;
  std::vector<Point> lower, upper;
  for (std::size_t i = 0; i <= s.x.size(); ++i) {
    if (i < s.x.size() && spread_drawable(s, i, l.x.log, l.y.log)) {
      lower.push_back(px.at(s.x[i], s.lo[i]));
      upper.push_back(px.at(s.x[i], s.hi[i]));
      continue;
    }
    if (lower.size() >= 2) {  // A lone point spans no area; its line shows a dot.
      lower.insert(lower.end(), upper.rbegin(), upper.rend());
      const std::vector<Point> polygon = clip_polygon(lower);
      for (std::size_t k = 0; polygon.size() >= 3 && k < polygon.size(); ++k) {
        put(d, k == 0 ? "M" : "L", px.x(polygon[k].x), " ", px.y(polygon[k].y));
      }
      if (polygon.size() >= 3) d += "Z";
    }
    lower.clear();
    upper.clear();
  }
  if (d.empty()) return;
  put(out, "<path class=\"band\"", label_attribute(s), " d=\"", d, "\" fill=\"", colour,
      "\" fill-opacity=\"", num(kBandOpacity), "\" stroke=\"none\"/>\n");
}

// <text> with an optional superscript; `extra` carries anchor, rotation or weight.
void put_text(std::string& out, double x, double y, double size, std::string_view extra,
              std::string_view body, std::string_view exponent = "") {
  put(out, "<text x=\"", num(x), "\" y=\"", num(y), "\" font-size=\"", num(size), "\"", extra, ">",
      escape_xml(body));
  if (!exponent.empty()) {
    put(out, "<tspan dy=\"-5\" font-size=\"", num(kExponentFont), "\">", escape_xml(exponent),
        "</tspan>");
  }
  out += "</text>\n";
}

// Grid lines go into `grid`, drawn beneath the data; ticks and labels into `out`.
void draw_axes(std::string& grid, std::string& out, const Figure& f, const Layout& l) {
  std::string lines, marks;
  for (const Tick& t : l.x_ticks) {
    const double x = l.x.to_pixel(t.value);
    put(marks, "M", num(x), " ", num(l.bottom), "v", num(t.major ? kTickLength : kMinorTickLength));
    if (t.label.empty()) continue;
    put(lines, "M", num(x), " ", num(l.top), "V", num(l.bottom));
    put_text(out, x, l.bottom + kTickLength + kTickFont + 2, kTickFont, " text-anchor=\"middle\"",
             t.label, t.exponent);
  }
  for (const Tick& t : l.y_ticks) {
    const double y = l.y.to_pixel(t.value);
    put(marks, "M", num(l.left), " ", num(y), "h",
        num(-(t.major ? kTickLength : kMinorTickLength)));
    if (t.label.empty()) continue;
    put(lines, "M", num(l.left), " ", num(y), "H", num(l.right));
    // +4 puts the digits' middle, not their baseline, level with the tick.
    put_text(out, l.left - kTickLength - 3, y + 4, kTickFont, " text-anchor=\"end\"", t.label,
             t.exponent);
  }
  if (!lines.empty())
    put(grid, "<path d=\"", lines, "\" stroke=\"#e5e5e5\" stroke-width=\"1\"/>\n");
  if (!marks.empty()) put(out, "<path d=\"", marks, "\" stroke=\"#444\" stroke-width=\"1\"/>\n");

  const double mid_x = (l.left + l.right) / 2, mid_y = (l.top + l.bottom) / 2;
  if (!f.x.label.empty()) {
    put_text(out, mid_x, l.x_label_y, kLabelFont, " text-anchor=\"middle\"", f.x.label);
  }
  if (!f.y.label.empty()) {
    // Rotated text grows away from its baseline towards smaller x, so the baseline sits one
    // font size in from the edge.
    const double x = kEdge + kLabelFont;
    std::string rotate;
    put(rotate, " text-anchor=\"middle\" transform=\"rotate(-90 ", num(x), " ", num(mid_y), ")\"");
    put_text(out, x, mid_y, kLabelFont, rotate, f.y.label);
  }
  for (std::size_t i = 0; i < l.title_lines.size(); ++i) {
    // Centred over the plot area unless that would push a long title off the figure.
    const std::string& line = l.title_lines[i];
    const double half = text_width(line, kTitleFont) / 2;
    const double centre =
        std::clamp(mid_x, kEdge + half, std::max(kEdge + half, f.width - kEdge - half));
    put_text(out, centre, 26 + kTitleRow * static_cast<double>(i), kTitleFont,
             " text-anchor=\"middle\" font-weight=\"bold\"", line);
  }
}

// `series` gives each entry's style, by the entry's position (as its colour is).
void draw_legend(std::string& out, const std::vector<Series>& series, const Layout& l) {
  if (l.legend.empty()) return;
  put(out, "<rect class=\"legend\" x=\"", num(l.legend_x), "\" y=\"", num(l.legend_y),
      "\" width=\"", num(l.legend_width), "\" height=\"", num(l.legend_height),
      "\" fill=\"white\" stroke=\"#bbb\"/>\n");
  for (const LegendEntry& e : l.legend) {
    const Series& s = series[e.series];
    const std::string_view colour = series_colour(s, e.series);
    put(out, "<g class=\"legend-entry\"", label_attribute(s), ">\n");
    // The sample: a swatch of the band or an error bar behind a short line and its marker.
    if (!s.lo.empty() && uses_error_bars(s)) {
      put(out, "<path d=\"M", num(e.x + 12), " ", num(e.y - 6), "v12M", num(e.x + 12 - kCap), " ",
          num(e.y - 6), "h", num(2 * kCap), "M", num(e.x + 12 - kCap), " ", num(e.y + 6), "h",
          num(2 * kCap), "\" stroke=\"", colour, "\" stroke-width=\"1.2\"/>\n");
    } else if (!s.lo.empty()) {
      put(out, "<rect x=\"", num(e.x), "\" y=\"", num(e.y - 6),
          "\" width=\"24\" height=\"12\" fill=\"", colour, "\" fill-opacity=\"", num(kBandOpacity),
          "\"/>\n");
    }
    put(out, "<path d=\"M", num(e.x), " ", num(e.y), "h24\" stroke=\"", colour,
        "\" stroke-width=\"", num(s.emphasis ? kEmphasisLine : kLine),
        "\" stroke-linecap=\"round\"");
    const std::string_view dash = dash_pattern(s);
    if (!dash.empty()) put(out, " stroke-dasharray=\"", dash, "\"");
    out += "/>\n";
    if (s.markers) {
      put(out, "<circle cx=\"", num(e.x + 12), "\" cy=\"", num(e.y), "\" r=\"",
          num(s.emphasis ? kEmphasisMarker : kMarker));
      put_marker_paint(out, s, colour);
    }
    put_text(out, e.x + 32, e.y + 4, kLegendFont, "", e.text);
    out += "</g>\n";
  }
}

// One figure's elements, in its own coordinates with the origin at its top-left corner.
void put_panel(std::string& out, const Figure& f) {
  const Layout l = make_layout(f);
  // Grid lines and spreads beneath every line; emphasised series before the rest, so a thin
  // line on the same values shows inside the thick one rather than vanishing under it.
  std::string back, front, axes;
  draw_axes(back, axes, f, l);
  for (std::size_t i = 0; i < f.series.size(); ++i) {
    draw_spread(back, f.series[i], static_cast<int>(i), l);
  }
  for (const bool emphasis : {true, false}) {
    for (std::size_t i = 0; i < f.series.size(); ++i) {
      if (f.series[i].emphasis == emphasis) draw_series(front, f.series[i], static_cast<int>(i), l);
    }
  }
  // The frame after the data, so lines running along an edge do not hide it.
  put(front, "<rect class=\"frame\"", x_axis_attributes(l, f.x), " x=\"", num(l.left), "\" y=\"",
      num(l.top), "\" width=\"", num(l.right - l.left), "\" height=\"", num(l.bottom - l.top),
      "\" fill=\"none\" stroke=\"#444\" stroke-width=\"1\"/>\n");
  put(out, back, front, axes);
  draw_legend(out, f.series, l);
}

std::string document(int width, int height, std::string_view body) {
  const std::string w = std::to_string(width), h = std::to_string(height);
  std::string out;
  put(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"", w, "\" height=\"", h,
      "\" viewBox=\"0 0 ", w, " ", h, "\" font-family=\"sans-serif\">\n<rect width=\"", w,
      "\" height=\"", h, "\" fill=\"white\"/>\n", body, "</svg>\n");
  return out;
}

}  // namespace

std::string escape_xml(std::string_view text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        // Control characters other than tab and newline are not allowed anywhere in XML 1.0.
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\t' || c == '\n') out += c;
    }
  }
  return out;
}

std::string_view palette_color(int index) {
  if (index < 0 || index >= kPaletteSize) {
    fail("palette_color: index ", index, " is outside the palette's ", kPaletteSize, " colours");
  }
  return kPalette[index];
}

std::string render_svg(const Figure& figure) {
  check_figure(figure);
  std::string body;
  put_panel(body, figure);
  return document(figure.width, figure.height, body);
}

std::string render_svg_grid(const std::vector<Figure>& figures, int columns,
                            const GridOptions& options) {
  if (columns < 1) fail("render_svg_grid: columns must be at least 1, got ", columns);
  if (!(std::isfinite(options.display_width) && options.display_width >= 0)) {
    fail("render_svg_grid: display_width must be finite and not negative, got ",
         options.display_width);
  }
  for (const Figure& f : figures) check_figure(f);
  if (options.legend_once) check_one_look_per_label(figures);
  if (figures.empty()) return document(1, 1, "");
  if (options.share_y) {
    for (const Figure& f : figures) {
      if (f.y.log != figures.front().y.log) {
        fail("render_svg_grid: share_y needs every panel's y axis log or every one linear, but '",
             figures.front().title, "' and '", f.title, "' differ");
      }
    }
  }
  const GridLayout g = make_grid_layout(figures, columns, options);
  // Panels and the shared legend are drawn in their own units, magnified by g.scale.
  const std::string scale = g.scale == 1 ? "" : " scale(" + exact(g.scale) + ")";
  std::string body;
  for (int i = 0; i < static_cast<int>(g.panels.size()); ++i) {
    put(body, "<g transform=\"translate(", num(i % columns * g.cell_width), " ",
        num(i / columns * g.cell_height), ")", scale, "\">\n");
    put_panel(body, g.panels[i]);
    body += "</g>\n";
  }
  if (!g.legend.legend.empty()) {
    put(body, "<g transform=\"translate(0 ", num(g.legend_top), ")", scale, "\">\n");
    draw_legend(body, g.legend_series, g.legend);
    body += "</g>\n";
  }
  return document(static_cast<int>(std::ceil(g.width)), static_cast<int>(std::ceil(g.height)),
                  body);
}

}  // namespace gradflow::plot
