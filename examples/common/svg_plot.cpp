#include "examples/common/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <utility>

#include "examples/common/axis_ticks.h"
#include "examples/common/plot_layout.h"
#include "tensor/error.h"

namespace gradflow::plot {
namespace {

constexpr std::string_view kPalette[kPaletteSize] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                                     "#E69F00", "#56B4E9", "#000000", "#999999"};

// Positions are clamped to this many plot widths outside the plot, so an absurd value cannot
// print a 300-digit coordinate or overflow; only segments with such an end point lose accuracy.
constexpr double kFarAway = 1e9;
// Slack for points exactly on a fixed limit, whose fraction may round to 1 + 1e-16.
constexpr double kInside = 1e-9;

// Appends the parts in order. Building with append rather than "literal" + std::string also
// avoids GCC 12's false -Wrestrict error on the latter at -O3.
template <class... Parts>
void put(std::string& out, const Parts&... parts) {
  (out.append(std::string_view(parts)), ...);
}

std::string num(double v) { return format_number(v); }

std::string escape(std::string_view text) {
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

void check_axis(const Axis& axis, const char* name) {
  for (const auto& limit : {axis.min, axis.max}) {
    if (limit && !drawable(*limit, axis.log)) {
      fail("render_svg: ", name, "-axis limit ", *limit, " must be finite",
           axis.log ? " and positive on a log axis" : "");
    }
  }
  if (axis.min && axis.max && !(*axis.min < *axis.max)) {
    fail("render_svg: ", name, "-axis min ", *axis.min, " must be below max ", *axis.max);
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
  }
}

std::string_view dash_pattern(const Series& s, int index) {
  const bool second_round = index >= kPaletteSize;
  if (s.dashed) return second_round ? "8 3 2 3" : "6 4";
  return second_round ? "1.5 3" : "";
}

// Keeps the part of segment p->q inside the unit square (Liang-Barsky); t0, t1 are where it
// enters and leaves along the segment. False when the segment misses the square.
bool clip(const double p[2], const double q[2], double& t0, double& t1) {
  t0 = 0;
  t1 = 1;
  for (int axis = 0; axis < 2; ++axis) {
    const double d = q[axis] - p[axis];
    const double lo = -kInside - p[axis], hi = 1 + kInside - p[axis];  // Room to move along d.
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

void draw_series(std::string& out, const Series& s, int index, const Layout& l) {
  const std::string_view colour = palette_color(index);
  const auto px = [&](double u) { return num(l.left + u * (l.right - l.left)); };
  const auto py = [&](double v) { return num(l.bottom - v * (l.bottom - l.top)); };
  const auto inside = [](const double p[2]) {
    return p[0] >= -kInside && p[0] <= 1 + kInside && p[1] >= -kInside && p[1] <= 1 + kInside;
  };
  std::string path, dots;
  const auto dot = [&](const double p[2], double radius) {
    put(dots, "<circle cx=\"", px(p[0]), "\" cy=\"", py(p[1]), "\" r=\"", num(radius), "\" fill=\"",
        colour, "\"/>\n");
  };

  double previous[2] = {0, 0};
  std::size_t run = 0;    // Drawable points in a row so far, ending at `previous`.
  bool pen_down = false;  // Whether the path currently ends at `previous`.
  const std::size_t n = s.x.size();
  for (std::size_t i = 0; i <= n; ++i) {
    const bool ok = i < n && drawable(s.x[i], l.x.log) && drawable(s.y[i], l.y.log);
    if (!ok) {
      if (run == 1 && !s.markers && inside(previous)) dot(previous, 2.5);  // Else invisible.
      run = 0;
      pen_down = false;
      continue;
    }
    const double point[2] = {std::clamp(l.x.fraction(s.x[i]), -kFarAway, kFarAway),
                             std::clamp(l.y.fraction(s.y[i]), -kFarAway, kFarAway)};
    if (s.markers && inside(point)) dot(point, 3);
    double t0, t1;
    if (run > 0 && clip(previous, point, t0, t1)) {
      const auto at = [&](double t, int axis) {
        return std::clamp(previous[axis] + t * (point[axis] - previous[axis]), 0.0, 1.0);
      };
      if (!(pen_down && t0 == 0)) put(path, "M", px(at(t0, 0)), " ", py(at(t0, 1)));
      put(path, "L", px(at(t1, 0)), " ", py(at(t1, 1)));
      pen_down = t1 == 1;
    } else {
      pen_down = false;
    }
    previous[0] = point[0];
    previous[1] = point[1];
    ++run;
  }
  if (!path.empty()) {
    put(out, "<path class=\"series\" d=\"", path, "\" fill=\"none\" stroke=\"", colour,
        "\" stroke-width=\"1.8\" stroke-linejoin=\"round\" stroke-linecap=\"round\"");
    const std::string_view dash = dash_pattern(s, index);
    if (!dash.empty()) put(out, " stroke-dasharray=\"", dash, "\"");
    put(out, "/>\n", dots);
  } else {
    out += dots;
  }
}

// <text> with an optional superscript; `extra` carries anchor, rotation or weight.
void put_text(std::string& out, double x, double y, double size, std::string_view extra,
              std::string_view body, std::string_view exponent = "") {
  put(out, "<text x=\"", num(x), "\" y=\"", num(y), "\" font-size=\"", num(size), "\"", extra, ">",
      escape(body));
  if (!exponent.empty()) {
    put(out, "<tspan dy=\"-5\" font-size=\"", num(kExponentFont), "\">", escape(exponent),
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
  if (!f.title.empty()) {
    // Centred over the plot area unless that would push a long title off the figure.
    const double half = text_width(f.title, kTitleFont) / 2;
    const double centre =
        std::clamp(mid_x, kEdge + half, std::max(kEdge + half, f.width - kEdge - half));
    put_text(out, centre, 26, kTitleFont, " text-anchor=\"middle\" font-weight=\"bold\"", f.title);
  }
}

void draw_legend(std::string& out, const Figure& f, const Layout& l) {
  if (l.legend.empty()) return;
  put(out, "<rect class=\"legend\" x=\"", num(l.legend_x), "\" y=\"", num(l.legend_y),
      "\" width=\"", num(l.legend_width), "\" height=\"", num(l.legend_height),
      "\" fill=\"white\" stroke=\"#bbb\"/>\n");
  for (const LegendEntry& e : l.legend) {
    const std::string_view colour = palette_color(e.series);
    put(out, "<path d=\"M", num(e.x), " ", num(e.y), "h24\" stroke=\"", colour,
        "\" stroke-width=\"1.8\" stroke-linecap=\"round\"");
    const std::string_view dash = dash_pattern(f.series[e.series], e.series);
    if (!dash.empty()) put(out, " stroke-dasharray=\"", dash, "\"");
    out += "/>\n";
    if (f.series[e.series].markers) {
      put(out, "<circle cx=\"", num(e.x + 12), "\" cy=\"", num(e.y), "\" r=\"3\" fill=\"", colour,
          "\"/>\n");
    }
    put_text(out, e.x + 32, e.y + 4, kLegendFont, "", e.text);
  }
}

// One figure's elements, in its own coordinates with the origin at its top-left corner.
void put_panel(std::string& out, const Figure& f) {
  const Layout l = make_layout(f);
  std::string grid, front;
  for (std::size_t i = 0; i < f.series.size(); ++i) {
    draw_series(front, f.series[i], static_cast<int>(i), l);
  }
  // The frame after the data, so lines running along an edge do not hide it.
  put(front, "<rect class=\"frame\" x=\"", num(l.left), "\" y=\"", num(l.top), "\" width=\"",
      num(l.right - l.left), "\" height=\"", num(l.bottom - l.top),
      "\" fill=\"none\" stroke=\"#444\" stroke-width=\"1\"/>\n");
  draw_axes(grid, front, f, l);
  draw_legend(front, f, l);
  put(out, grid, front);
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

std::string_view palette_color(int index) {
  return kPalette[((index % kPaletteSize) + kPaletteSize) % kPaletteSize];
}

std::string render_svg(const Figure& figure) {
  check_figure(figure);
  std::string body;
  put_panel(body, figure);
  return document(figure.width, figure.height, body);
}

std::string render_svg_grid(const std::vector<Figure>& figures, int columns) {
  if (columns < 1) fail("render_svg_grid: columns must be at least 1, got ", columns);
  for (const Figure& f : figures) check_figure(f);
  if (figures.empty()) return document(1, 1, "");
  int cell_width = 0, cell_height = 0;
  for (const Figure& f : figures) {
    cell_width = std::max(cell_width, f.width);
    cell_height = std::max(cell_height, f.height);
  }
  const int n = static_cast<int>(figures.size());
  const int used_columns = std::min(columns, n), rows = (n + columns - 1) / columns;
  std::string body;
  for (int i = 0; i < n; ++i) {
    put(body, "<g transform=\"translate(", std::to_string(i % columns * cell_width), " ",
        std::to_string(i / columns * cell_height), ")\">\n");
    put_panel(body, figures[i]);
    body += "</g>\n";
  }
  return document(used_columns * cell_width, rows * cell_height, body);
}

}  // namespace gradflow::plot
