// Where everything goes in a figure of svg_plot.h: axis ranges, the plot area, ticks, the
// legend, clipping to the plot area, and the panels of a grid. Internal to svg_plot, and
// separate from the drawing so the geometry can be tested without parsing SVG.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "examples/toolkit/plot/axis_ticks.h"
#include "examples/toolkit/plot/svg_plot.h"

namespace gradflow::plot {

// Sizes in pixels, shared by the layout (which estimates text widths) and the drawing.
inline constexpr double kTickFont = 11, kExponentFont = 9, kLabelFont = 13, kTitleFont = 15;
inline constexpr double kLegendFont = 12, kLegendRow = 18;
inline constexpr double kTitleRow = 18;  // From one line of a two-line title to the next.
inline constexpr double kTickLength = 5, kMinorTickLength = 3;
inline constexpr double kEdge = 8;  // Blank border around each figure.

// Estimated width of `text` drawn `font` pixels high. There is no font engine to measure it,
// so this counts characters (not UTF-8 bytes) times an average DejaVu Sans glyph width.
double text_width(std::string_view text, double font);

// Whether a value can be placed on an axis: finite, and positive on a log axis.
bool drawable(double v, bool log);

// Whether point i of s has a spread to draw: lo and hi given, and x[i], lo[i], hi[i] drawable.
bool spread_drawable(const Series& s, std::size_t i, bool x_log, bool y_log);

// The colour s is drawn in: its `color`, else kReferenceColor for a reference, else the
// palette's at its position. REQUIRES one of those to exist (index < kPaletteSize).
std::string_view series_colour(const Series& s, int index);

// Whether s's spread is drawn as error bars rather than a band (the rule is on Series::lo).
bool uses_error_bars(const Series& s);

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
  // The title in lines: two, broken at a space, when one would run off the figure (a grid's
  // panel is narrow), so a title that says what the panel shows stays whole.
  std::vector<std::string> title_lines;
  // The legend box, to the right of the plot area or beneath the x-axis label, never over the
  // plot. No entries (and a zero-sized box) when no series has a label.
  std::vector<LegendEntry> legend;
  double legend_x = 0, legend_y = 0, legend_width = 0, legend_height = 0;
};

// REQUIRES: series have x and y of equal length, lo and hi empty or that long too, and axis
// limits are valid (render_svg checks).
Layout make_layout(const Figure& figure);

// Positions as fractions of the plot area: (0, 0) its bottom-left corner, (1, 1) its top-right.
struct Point {
  double x, y;
};

// The part of segment p -> q inside the unit square (Liang-Barsky): it enters at p + t0 (q - p)
// and leaves at p + t1 (q - p). False when the segment misses the square.
bool clip_segment(Point p, Point q, double& t0, double& t1);

// The part of a polygon inside the unit square (Sutherland-Hodgman); fewer than three points
// when nothing is left. A concave polygon cut in two stays one polygon, joined by zero-width
// edges along the square's side, which fills the same area.
std::vector<Point> clip_polygon(const std::vector<Point>& polygon);

// The y range of every panel under GridOptions::share_y (see there).
// REQUIRES: the figures are valid and their y axes all log or all linear.
Range shared_y_range(const std::vector<Figure>& figures);

// Where the panels of render_svg_grid go. Panels are laid out in their own units and drawn
// magnified by `scale` into cells measured in the document's pixels.
struct GridLayout {
  double scale = 1;
  int columns = 1, rows = 0;
  double cell_width = 0, cell_height = 0;  // In document pixels.
  double width = 0, height = 0;            // Of the whole document.
  // The figures as drawn: sizes divided by `scale`, the shared y range as fixed limits under
  // share_y, and no labels under legend_once.
  std::vector<Figure> panels;
  // legend_once: one series per label with something to draw, in the order the panels first
  // show them, each with its colour as drawn set in `color`; and the legend's entries and box
  // (in units of `scale`, from the top-left corner of the strip beneath the panels, which
  // starts at legend_top pixels).
  std::vector<Series> legend_series;  // Reference lines last, after the data they explain.
  Layout legend;
  double legend_top = 0;
};

// REQUIRES: what render_svg_grid checks holds.
GridLayout make_grid_layout(const std::vector<Figure>& figures, int columns,
                            const GridOptions& options);

}  // namespace gradflow::plot
