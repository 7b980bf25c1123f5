// Standalone SVG line plots for the example programs' reports, with no plotting dependency.
//
// Just what the reports need: solid or dashed lines with optional markers, shaded bands or
// error bars for a spread (say a 95% interval over seeds), linear or log axes, a legend, and a
// grid of panels that stays readable when shown at report width. The output is a complete SVG
// document, byte-for-byte the same for the same input, so regenerated reports diff cleanly.
//
//   plot::Figure fig{.title = "Logit std vs d_k",
//                    .x = {.label = "d_k", .log = true},
//                    .y = {.label = "std of q·k", .log = true}};
//   fig.series.push_back({.label = "measured", .x = dk, .y = mean, .lo = q025, .hi = q975});
//   fig.series.push_back({.label = "sqrt(d_k)", .x = dk, .y = theory, .dashed = true});
//   std::ofstream("logit_std.svg") << plot::render_svg(fig);
//
//   // Three panels per row, one y range and one legend for all, readable at 1200 px wide.
//   plot::render_svg_grid(panels, 3, {.share_y = true, .legend_once = true});
//
// Data that cannot be drawn is skipped rather than rejected, because a diverged run (NaN loss)
// is exactly what a report must still be able to show: NaN and ±Inf points, and values <= 0 on
// a log axis, are left out and break the line (and the band) there. A point with no drawable
// neighbour is shown as a dot. Fixed axis limits clip lines and bands at the plot's edge.
//
// Text widths are estimated, not measured (there is no font engine here), from an average glyph
// width of DejaVu Sans, the usual "sans-serif" on Linux; other fonts may run slightly wider.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gradflow::plot {

// A series with lo/hi and markers and at most this many points gets error bars, not a band.
inline constexpr std::size_t kErrorBarMaxPoints = 8;

// Members all have initializers, even if only {}, so that designated initializers may leave
// any of them out under -Wextra (-Wmissing-field-initializers).
struct Series {
  std::string label{};  // Legend text; a series with an empty label is left out of the legend.
  std::vector<double> x{}, y{};  // Same length.
  // The spread around y at each x, e.g. a 95% interval over seeds: both empty, or both as long
  // as x. Drawn beneath every line in the series' colour, in one of two ways:
  //  - error bars (a vertical line from lo to hi, capped at both ends) when `markers` is set and
  //    x has at most kErrorBarMaxPoints points: a few measured settings;
  //  - otherwise a shaded band (fill-opacity 0.18, no outline) from lo to hi: curves.
  // A point's spread is drawn where x, lo and hi are all drawable (y need not be); the band
  // breaks elsewhere as the line does, and a lone drawable point spans no band. The spread
  // counts towards the axis range.
  std::vector<double> lo{}, hi{};
  bool dashed = false;
  bool markers = false;  // A dot at every drawable point inside the plot area.
  // Thicker (3.2 px rather than 1.8, larger markers) and drawn after all other series, so no
  // other series hides it: say the default setting among alternatives. It keeps the colour of
  // its position in Figure::series; a series with the same values then lies hidden beneath it.
  bool emphasis = false;
  // A CSS colour instead of the palette's for this position, e.g. "#888" for a reference line
  // that should not look like one of the data series.
  std::string color{};
};

struct Axis {
  std::string label{};
  bool log = false;
  // Fixed limits; a side left unset follows the data with a 4% margin. Positive on a log axis.
  std::optional<double> min{}, max{};
};

struct Figure {
  std::string title{};
  Axis x{}, y{};
  std::vector<Series> series{};   // Coloured in order from the palette below.
  int width = 720, height = 450;  // Pixels of the whole figure, legend and labels included.
};

// A complete standalone SVG document (no XML declaration, ends with "</svg>\n").
// Throws Error when a series' x and y differ in length, when lo and hi are not both empty or
// both as long as x, when width or height is not positive, or when an axis's fixed limits are
// not finite, not positive on a log axis, or min >= max.
std::string render_svg(const Figure& figure);

struct GridOptions {
  // Width in pixels at which the report shows the whole grid. A grid wider than this is shrunk
  // on display, so every panel is drawn magnified by (grid width / display_width): text, lines,
  // markers and margins alike, its plot laid out at the panel's size divided by that factor.
  // Text then shows at its nominal size (ticks 11 px, labels 13 px, titles 15 px) at
  // display_width: three 720 px panels become 400 px panels drawn 1.8 times larger. 0 keeps
  // every panel at scale 1.
  double display_width = 1200;
  // All panels on one y range: the data of every panel pooled (values beyond a panel's own fixed
  // limit taken at that limit), with a fixed side where every panel fixes that side (the widest
  // of those limits). REQUIRES all panels to share the y-axis scale (log or linear).
  bool share_y = false;
  // One legend beneath the grid instead of one per panel. Colours follow positions in
  // Figure::series, so it shows, for each position, the first panel's labelled series there.
  bool legend_once = false;
};

// The figures as panels of one SVG document, filled row by row with `columns` per row. Every
// cell is as large as the largest figure. Throws Error as render_svg does, when columns < 1,
// when display_width is negative or not finite, or when share_y is asked of panels whose y
// axes are not all log or all linear.
std::string render_svg_grid(const std::vector<Figure>& figures, int columns,
                            const GridOptions& options = {});

// Series i is drawn in palette_color(i % kPaletteSize): the Okabe-Ito colour-blind-safe set,
// with its yellow (unreadable on white) replaced by grey. The second round of colours, from
// series 8 on, is dotted (dash-dotted if dashed) so that it stays distinguishable.
inline constexpr int kPaletteSize = 8;
std::string_view palette_color(int index);

// `text` made safe inside an SVG element or a quoted attribute: & < > " ' as entities, and the
// control characters XML 1.0 forbids (all but tab and newline) dropped. svg_heatmap.h uses it too.
std::string escape_xml(std::string_view text);

}  // namespace gradflow::plot
