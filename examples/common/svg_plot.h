// Standalone SVG line plots for the example programs' reports, with no plotting dependency.
//
// Just what the reports need: solid or dashed lines with optional markers, linear or log axes,
// a legend to the right of the plot area, and a grid of panels. The output is a complete SVG
// document, byte-for-byte the same for the same input, so regenerated reports diff cleanly.
//
//   plot::Figure fig{.title = "Logit std vs d_k",
//                    .x = {.label = "d_k", .log = true},
//                    .y = {.label = "std of q·k", .log = true}};
//   fig.series.push_back({.label = "measured", .x = dk, .y = stds, .markers = true});
//   fig.series.push_back({.label = "sqrt(d_k)", .x = dk, .y = theory, .dashed = true});
//   std::ofstream("logit_std.svg") << plot::render_svg(fig);
//
// Data that cannot be drawn is skipped rather than rejected, because a diverged run (NaN loss)
// is exactly what a report must still be able to show: NaN and ±Inf points, and values <= 0 on
// a log axis, are left out and break the line there. A point with no drawable neighbour is
// shown as a dot. Fixed axis limits clip the lines at the plot's edge.
//
// Text widths are estimated, not measured (there is no font engine here), from an average glyph
// width of DejaVu Sans, the usual "sans-serif" on Linux; other fonts may run slightly wider.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gradflow::plot {

// Members all have initializers, even if only {}, so that designated initializers may leave
// any of them out under -Wextra (-Wmissing-field-initializers).
struct Series {
  std::string label{};  // Legend text; a series with an empty label is left out of the legend.
  std::vector<double> x{}, y{};  // Same length.
  bool dashed = false;
  bool markers = false;  // A dot at every drawable point inside the plot area.
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
// Throws Error when a series' x and y differ in length, when width or height is not positive,
// or when an axis's fixed limits are not finite, not positive on a log axis, or min >= max.
std::string render_svg(const Figure& figure);

// The figures as panels of one SVG document, filled row by row with `columns` per row. Every
// cell is as large as the largest figure. Throws Error as render_svg does, or when columns < 1.
std::string render_svg_grid(const std::vector<Figure>& figures, int columns);

// Series i is drawn in palette_color(i % kPaletteSize): the Okabe-Ito colour-blind-safe set,
// with its yellow (unreadable on white) replaced by grey. The second round of colours, from
// series 8 on, is dotted (dash-dotted if dashed) so that it stays distinguishable.
inline constexpr int kPaletteSize = 8;
std::string_view palette_color(int index);

}  // namespace gradflow::plot
