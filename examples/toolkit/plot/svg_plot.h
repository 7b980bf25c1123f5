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
//   fig.series.push_back({.label = "sqrt(d_k)", .x = dk, .y = theory, .reference = true});
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
// A panel stays readable to a learner, and colour-blind readers, by construction: render_svg
// and render_svg_grid refuse (throw Error) a panel that would show two series in one colour,
// or more than kMaxSeries data series. Reference lines (Series::reference: a theory slope, a
// budget) are grey and do not count towards the limit, but one grey is one series, so a panel
// has at most one of them (put several theory lines in one series, broken by NaN).
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
  // A dot at every drawable point inside the plot area; a ring if the series is dashed.
  bool markers = false;
  // Thicker (3.2 px rather than 1.8, larger markers): say the default setting among
  // alternatives. Drawn before the other series, so a series with the same values (a learned
  // scale that starts at the default) shows on top of it, the thick line's edges around it.
  bool emphasis = false;
  // A CSS colour instead of the palette's for this position: a fixed colour per mode keeps a
  // mode recognisable across panels and figures. Compared case-insensitively, #abc as #aabbcc.
  std::string color{};
  // A reference line, not data (a theory slope, a budget): always dashed, drawn in kReferenceColor
  // unless `color` is set, and not counted among a panel's kMaxSeries data series.
  bool reference = false;
  // What a page names the series by (page/html.h: values on hover, shown or hidden from its
  // legend entry) when that is not `label`: render_svg_grid's legend_once moves a panel's labels
  // here, into the one legend. Empty: the label.
  std::string name{};
};

// The most data series (those with points that are not references) a panel may show: beyond
// six, lines and colours can no longer be told apart; split them into panels or leave them to
// the CSV.
inline constexpr int kMaxSeries = 6;
inline constexpr std::string_view kReferenceColor = "#777777";

struct Axis {
  std::string label{};
  bool log = false;
  // Fixed limits; a side left unset follows the data with a 4% margin. Positive on a log axis.
  std::optional<double> min{}, max{};
  // Labelled ticks at exactly these values (say the widths a study ran), in place of the
  // automatic ones; a value outside the axis range is left out. Finite, positive on a log axis.
  std::vector<double> ticks{};
};

struct Figure {
  std::string title{};
  Axis x{}, y{};
  std::vector<Series> series{};   // Coloured by position from the palette below, or `color`.
  int width = 720, height = 450;  // Pixels of the whole figure, legend and labels included.
};

// A complete standalone SVG document (no XML declaration, ends with "</svg>\n").
// Throws Error when a series' x and y differ in length, when lo and hi are not both empty or
// both as long as x, when width or height is not positive, when an axis's fixed limits are
// not finite, not positive on a log axis, or min >= max, when a tick is not finite (or not
// positive on a log axis), and when the panel breaks the rule
// above: more than kMaxSeries data series, two series with points in one colour (an explicit
// `color` equal to another's, two references), or a series past the palette without `color`.
// Series without points take part in none of this: they draw nothing.
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
  // One legend beneath the grid instead of one per panel: one entry per label, in the order
  // the panels first show it, so panels may show different series (say, modes split into
  // families). REQUIRES a label's line to look the same wherever it appears (colour, dashes):
  // render_svg_grid throws otherwise, as the one entry would then mislabel a line.
  bool legend_once = false;
};

// The figures as panels of one SVG document, filled row by row with `columns` per row. Every
// cell is as large as the largest figure. Throws Error as render_svg does, when columns < 1,
// when display_width is negative or not finite, or when share_y is asked of panels whose y
// axes are not all log or all linear.
std::string render_svg_grid(const std::vector<Figure>& figures, int columns,
                            const GridOptions& options = {});

// Series i without a `color` is drawn in palette_color(i): the Okabe-Ito colour-blind-safe
// set (Okabe and Ito 2008) without its yellow, unreadable on white, and without grey, which is
// kReferenceColor's. There is no second round: past it a series needs a `color`.
// REQUIRES 0 <= index < kPaletteSize.
inline constexpr int kPaletteSize = 7;
std::string_view palette_color(int index);

// `text` made safe inside an SVG element or a quoted attribute: & < > " ' as entities, and the
// control characters XML 1.0 forbids (all but tab and newline) dropped. svg_heatmap.h uses it too.
std::string escape_xml(std::string_view text);

}  // namespace gradflow::plot
