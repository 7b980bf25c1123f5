// Where everything goes in one figure of svg_plot.h: axis ranges, the plot area, ticks and the
// legend. Internal to svg_plot, and separate from the drawing so the geometry can be tested
// without parsing SVG.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "examples/common/axis_ticks.h"
#include "examples/common/svg_plot.h"

namespace gradflow::plot {

// Sizes in pixels, shared by the layout (which estimates text widths) and the drawing.
inline constexpr double kTickFont = 11, kExponentFont = 9, kLabelFont = 13, kTitleFont = 15;
inline constexpr double kLegendFont = 12, kLegendRow = 18;
inline constexpr double kTickLength = 5, kMinorTickLength = 3;
inline constexpr double kEdge = 8;  // Blank border around each figure.

// Estimated width of `text` drawn `font` pixels high. There is no font engine to measure it,
// so this counts characters (not UTF-8 bytes) times an average DejaVu Sans glyph width.
double text_width(std::string_view text, double font);

// Whether a value can be placed on an axis: finite, and positive on a log axis.
bool drawable(double v, bool log);

struct Range {
  double lo, hi;
};

// The limits of one axis from the drawable data values on it: fixed limits as given, free ones
// at the data's extremes plus a 4% margin (measured in log10 space on a log axis). All-equal
// values are centred in a range of ±10% (half a decade on a log axis); no values give 0..1
// (1..10). Always returns finite lo < hi, positive on a log axis.
Range resolve_range(const std::vector<double>& values, const Axis& axis);

struct LegendEntry {
  int series;        // Index into Figure::series.
  std::string text;  // The label, shortened with "…" if it could not fit.
  double x, y;       // Left end of the sample line, and the middle of the row.
};

struct Layout {
  double left = 0, top = 0, right = 0, bottom = 0;  // Edges of the plot area.
  Scale x, y;                                       // Data to pixels.
  std::vector<Tick> x_ticks, y_ticks;
  double x_label_y = 0;  // Baseline of the x-axis label.
  // The legend box, to the right of the plot area or beneath the x-axis label, never over the
  // plot. No entries (and a zero-sized box) when no series has a label.
  std::vector<LegendEntry> legend;
  double legend_x = 0, legend_y = 0, legend_width = 0, legend_height = 0;
};

// REQUIRES: series have x and y of equal length and axis limits are valid (render_svg checks).
Layout make_layout(const Figure& figure);

}  // namespace gradflow::plot
