// svg_heatmap.h: one rect per cell in the scale's colours, escaped text, the colour bar, and
// clear errors for what cannot be drawn.
#include "examples/toolkit/plot/svg_heatmap.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "tensor/error.h"

namespace gradflow::plot {
namespace {

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

Heatmap two_by_three() {
  return {.title = "inv_sqrt_dk",
          .notes = {"entropy 0.41", "update 0.003"},
          .rows = 2,
          .columns = 3,
          .values = {0, 0.5, 0.5, 1, 0, 0}};
}

// The message of the Error that `render` throws, or "" when it throws none.
template <class F>
std::string error_of(F render) {
  try {
    render();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(HeatColor, WhiteAtZeroDarkBlueAtOneLinearBetween) {
  EXPECT_EQ(heat_color(0), "#ffffff");
  EXPECT_EQ(heat_color(1), "#08306b");
  // 255 + 0.5 (8 - 255) = 131.5 -> 132 = 0x84; 151.5 -> 152 = 0x98; 181 = 0xb5.
  EXPECT_EQ(heat_color(0.5), "#8498b5");
  EXPECT_THROW(heat_color(1.5), Error);
  EXPECT_THROW(heat_color(std::numeric_limits<double>::quiet_NaN()), Error);
}

TEST(RenderHeatmap, OneRectPerCellInTheScaleColours) {
  Heatmap wide = two_by_three();
  Heatmap tall{.title = "none", .rows = 4, .columns = 1, .values = {1, 0, 0, 0}};
  const std::string svg = render_heatmap_grid({{.heading = "at init", .panels = {wide, tall}}});
  EXPECT_EQ(svg.rfind("<svg ", 0), 0u);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  EXPECT_EQ(count(svg, "class=\"cell\""), 6u + 4u);
  // Cells of 0, 0.5 and 1 by their colours: 0 six times, 0.5 twice, 1 twice.
  EXPECT_EQ(count(svg, "class=\"cell\"") - count(svg, "fill=\"#ffffff\"/>"), 4u);
  EXPECT_EQ(count(svg, "fill=\"#8498b5\""), 2u);
  EXPECT_EQ(count(svg, "fill=\"#08306b\""), 2u);
  // The first cell of the first row: value 0, white; the second: 0.5.
  const size_t first = svg.find("class=\"cell\"");
  EXPECT_NE(svg.find("fill=\"#ffffff\"", first), std::string::npos);
  EXPECT_LT(svg.find("fill=\"#ffffff\"", first), svg.find("fill=\"#8498b5\"", first));
  for (const char* text : {">at init<", ">inv_sqrt_dk<", ">none<", ">entropy 0.41<",
                           ">update 0.003<", ">weight<", ">0<", ">1<", "url(#heat-scale)"})
    EXPECT_NE(svg.find(text), std::string::npos) << text;
  // The same input gives the same bytes.
  EXPECT_EQ(svg, render_heatmap_grid({{.heading = "at init", .panels = {wide, tall}}}));
}

TEST(RenderHeatmap, SquareCellsAsLargeAsFitTheMatrixSize) {
  // 2 x 3 in 150 px: 50 px cells; 4 x 1: 37 px (150 / 4 rounded down).
  const std::string svg = render_heatmap_grid(
      {{.panels = {two_by_three()}},
       {.panels = {{.title = "tall", .rows = 4, .columns = 1, .values = {1, 0, 0, 0}}}}});
  EXPECT_EQ(count(svg, "width=\"50\" height=\"50\""), 6u);
  EXPECT_EQ(count(svg, "width=\"37\" height=\"37\""), 4u);
}

TEST(RenderHeatmap, TextIsEscaped) {
  Heatmap h = two_by_three();
  h.title = "a<b & \"c\"";
  h.notes = {"x > 'y'"};
  const std::string svg =
      render_heatmap_grid({{.heading = "R&D <1>", .panels = {h}}}, {.legend = "p < 1"});
  for (const char* raw : {"a<b", "\"c\"", "x > ", "'y'", "R&D", "<1>", "p < 1"})
    EXPECT_EQ(svg.find(raw), std::string::npos) << raw;
  for (const char* escaped :
       {"a&lt;b &amp; &quot;c&quot;", "x &gt; &apos;y&apos;", "R&amp;D &lt;1&gt;", "p &lt; 1"})
    EXPECT_NE(svg.find(escaped), std::string::npos) << escaped;
}

TEST(RenderHeatmap, AMissingPanelSaysWhyAndDrawsNoCells) {
  const std::string svg =
      render_heatmap_grid({{.panels = {two_by_three(), {.title = "none", .missing = "diverged"}}}});
  EXPECT_EQ(count(svg, "class=\"cell\""), 6u);
  EXPECT_NE(svg.find(">diverged<"), std::string::npos);
}

TEST(RenderHeatmap, BadInputThrowsAClearError) {
  auto with = [](std::vector<double> values, int64_t rows, int64_t columns) {
    return [=] {
      render_heatmap_grid(
          {{.panels = {{.title = "p", .rows = rows, .columns = columns, .values = values}}}});
    };
  };
  EXPECT_NE(error_of(with({}, 0, 0)).find("empty matrix (0 x 0)"), std::string::npos);
  EXPECT_NE(error_of(with({0.5}, 1, 0)).find("empty matrix (1 x 0)"), std::string::npos);
  EXPECT_NE(error_of(with({0, 1, 0}, 2, 2)).find("is 2 x 2 but has 3 values (4 expected)"),
            std::string::npos);
  EXPECT_NE(error_of(with({0, 1.5}, 1, 2)).find("value 1.5 at row 0, column 1"), std::string::npos);
  EXPECT_NE(error_of(with({0, 0, -0.25, 0}, 2, 2)).find("value -0.25 at row 1, column 0"),
            std::string::npos);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_NE(error_of(with({0, nan}, 2, 1)).find("in [0, 1]"), std::string::npos);
  EXPECT_NE(error_of(with({0, std::numeric_limits<double>::infinity()}, 1, 2)).find("in [0, 1]"),
            std::string::npos);
  EXPECT_NE(error_of([] { render_heatmap_grid({}); }).find("no panels"), std::string::npos);
  EXPECT_NE(error_of([] { render_heatmap_grid({{.heading = "empty row"}}); }).find("no panels"),
            std::string::npos);
  EXPECT_NE(
      error_of([] {
        render_heatmap_grid(
            {{.panels = {
                  {.title = "p", .rows = 1, .columns = 1, .values = {1}, .missing = "diverged"}}}});
      }).find("is missing but has a 1 x 1 matrix"),
      std::string::npos);
  for (double size : {0.0, 5.0, nan})
    EXPECT_NE(error_of([&] {
                render_heatmap_grid({{.panels = {two_by_three()}}}, {.matrix_size = size});
              }).find("matrix_size"),
              std::string::npos)
        << size;
}

}  // namespace
}  // namespace gradflow::plot

namespace gradflow::plot {
namespace {

// The number after `key="` in the first element of `svg` that starts with `element`.
double attribute(const std::string& svg, const std::string& element, const std::string& key) {
  const size_t at = svg.find(element);
  if (at == std::string::npos) return std::numeric_limits<double>::quiet_NaN();
  const size_t value = svg.find(key + "=\"", at) + key.size() + 2;
  return std::stod(svg.substr(value));
}

TEST(RenderHeatmap, OverlaysAreDrawnInCellUnitsOverTheMatrix) {
  Heatmap map = two_by_three();
  map.overlays = {{.label = "prediction <1>", .rows = {0.5, 1.5}, .columns = {0, 3}},
                  {.label = "measured",
                   .rows = {1},
                   .columns = {1.5},
                   .color = "#fff",
                   .line = false,
                   .markers = true}};
  const std::string svg = render_heatmap_grid({{.panels = {map}}});
  const double left = attribute(svg, "<rect class=\"matrix-frame\"", "x");
  const double top = attribute(svg, "<rect class=\"matrix-frame\"", "y");
  const double side = attribute(svg, "<rect class=\"cell\"", "width");
  ASSERT_GT(side, 1);
  // The line: (row 0.5, column 0) is half a cell down the left edge; (1.5, 3) on the right edge.
  const size_t points = svg.find("<polyline points=\"");
  ASSERT_NE(points, std::string::npos);
  double x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  ASSERT_EQ(std::sscanf(svg.c_str() + points + 18, "%lf,%lf %lf,%lf", &x0, &y0, &x1, &y1), 4);
  EXPECT_NEAR(x0, left, 1e-6);
  EXPECT_NEAR(y0, top + 0.5 * side, 1e-6);
  EXPECT_NEAR(x1, left + 3 * side, 1e-6);
  EXPECT_NEAR(y1, top + 1.5 * side, 1e-6);
  EXPECT_EQ(count(svg, "<polyline"), 1u);  // the markers-only overlay draws no line
  // The marker: row 1, column 1.5, in its own colour, after the cells (drawn over them).
  EXPECT_NEAR(attribute(svg, "<circle", "cx"), left + 1.5 * side, 1e-6);
  EXPECT_NEAR(attribute(svg, "<circle", "cy"), top + side, 1e-6);
  EXPECT_NE(svg.find("fill=\"#fff\" stroke=\"#222\""), std::string::npos);
  EXPECT_GT(svg.find("<circle"), svg.rfind("<rect class=\"cell\""));
  EXPECT_NE(svg.find("<title>prediction &lt;1&gt;</title>"), std::string::npos);
  EXPECT_EQ(count(svg, "<g class=\"overlay\">"), 2u);
}

TEST(RenderHeatmap, OverlaysOutsideTheMatrixOrMismatchedAreRefused) {
  auto with = [](HeatmapOverlay o) {
    Heatmap map = two_by_three();
    map.overlays = {o};
    return [map] { render_heatmap_grid({{.panels = {map}}}); };
  };
  EXPECT_NE(error_of(with({.label = "far", .rows = {2.5}, .columns = {0}})).find("outside"),
            std::string::npos);
  EXPECT_NE(error_of(with({.label = "left", .rows = {0}, .columns = {-0.1}})).find("outside"),
            std::string::npos);
  EXPECT_NE(error_of(with({.label = "nan",
                           .rows = {std::numeric_limits<double>::quiet_NaN()},
                           .columns = {0}}))
                .find("outside"),
            std::string::npos);
  EXPECT_NE(error_of(with({.label = "short", .rows = {0, 1}, .columns = {0}})).find("2 rows"),
            std::string::npos);
  Heatmap missing{.title = "diverged", .missing = "diverged"};
  missing.overlays = {{.label = "line", .rows = {0}, .columns = {0}}};
  EXPECT_NE(error_of([&] { render_heatmap_grid({{.panels = {missing}}}); }).find("missing"),
            std::string::npos);
}

}  // namespace
}  // namespace gradflow::plot

namespace gradflow::plot {
namespace {

TEST(RenderHeatmap, AWideMatrixTakesOnlyItsOwnHeight) {
  // 1 x 4 at matrix_size 100: cells of 25 px, a strip 25 px high where a 4 x 4 takes 100.
  auto height = [](int64_t rows) {
    Heatmap map{.title = "t",
                .rows = rows,
                .columns = 4,
                .values = std::vector<double>(static_cast<size_t>(rows * 4), 0.5)};
    const std::string svg = render_heatmap_grid({{.panels = {map}}}, {.matrix_size = 100});
    return std::stod(svg.substr(svg.find("height=\"") + 8));
  };
  EXPECT_EQ(height(4) - height(1), 75);
  EXPECT_EQ(height(4), height(5));  // tall: matrix_size, as before
}

}  // namespace
}  // namespace gradflow::plot

namespace gradflow::plot {
namespace {

// The number after `key="` in the first element of `svg` that starts with `element`.
double number_in(const std::string& svg, const std::string& element, const std::string& key) {
  const size_t at = svg.find(element);
  if (at == std::string::npos) return std::numeric_limits<double>::quiet_NaN();
  return std::stod(svg.substr(svg.find(key + "=\"", at) + key.size() + 2));
}

TEST(RenderHeatmapLabels, EachRowAndColumnNamedAndEscapedBesideTheMatrix) {
  Heatmap map = two_by_three();
  map.row_labels = {"<bos>", "a&b"};
  map.column_labels = {"x", "y", "\"z\""};
  const std::string svg = render_heatmap_grid({{.panels = {map}}});
  EXPECT_EQ(count(svg, "class=\"row-label\""), 2u);
  EXPECT_EQ(count(svg, "class=\"column-label\""), 3u);
  for (const char* escaped : {">&lt;bos&gt;<", ">a&amp;b<", ">x<", ">&quot;z&quot;<"})
    EXPECT_NE(svg.find(escaped), std::string::npos) << escaped;
  EXPECT_EQ(svg.find("<bos>"), std::string::npos);
  // 50-pixel cells: a row's label ends 4 px left of the frame, level with its row; a column's
  // stands across, centred above its column (each fits its cell, so none is turned).
  const double left = number_in(svg, "<rect class=\"matrix-frame\"", "x");
  const double top = number_in(svg, "<rect class=\"matrix-frame\"", "y");
  const std::string row = svg.substr(svg.rfind("<text", svg.find(">&lt;bos&gt;<")));
  EXPECT_EQ(number_in(row, "<text", "x"), left - 4);
  EXPECT_EQ(number_in(row, "<text", "y"), top + 25 + 3.5);  // 3.5: baseline to glyphs' middle
  const std::string column = svg.substr(svg.rfind("<text", svg.find(">x<")));
  EXPECT_EQ(number_in(column, "<text", "x"), left + 25);
  EXPECT_EQ(number_in(column, "<text", "y"), top - 4);
  EXPECT_EQ(svg.find("rotate("), std::string::npos);
}

TEST(RenderHeatmapLabels, LongLabelsTurnAndCrowdedOnesThinOut) {
  // 64 x 64 in 150 px: cells of 2 px, so every 6th label (12 px apart): 0, 6, ..., 60.
  Heatmap map{
      .title = "long", .rows = 64, .columns = 64, .values = std::vector<double>(64 * 64, 0)};
  for (int i = 0; i < 64; ++i) {
    map.row_labels.push_back("r" + std::to_string(i));
    map.column_labels.push_back("c" + std::to_string(i));
  }
  const std::string svg = render_heatmap_grid({{.panels = {map}}});
  EXPECT_EQ(count(svg, "class=\"row-label\""), 11u);
  EXPECT_EQ(count(svg, "class=\"column-label\""), 11u);
  EXPECT_EQ(count(svg, "rotate(-90 "), 11u);  // "c6" is wider than a 2-pixel cell
  for (const char* shown : {">r0<", ">r6<", ">r60<", ">c0<", ">c54<"})
    EXPECT_NE(svg.find(shown), std::string::npos) << shown;
  for (const char* skipped : {">r1<", ">r63<", ">c5<"})
    EXPECT_EQ(svg.find(skipped), std::string::npos) << skipped;
}

TEST(RenderHeatmapLabels, NotOnePerRowOrColumnIsAnError) {
  auto with = [](std::vector<std::string> rows, std::vector<std::string> columns) {
    Heatmap map = two_by_three();
    map.row_labels = std::move(rows);
    map.column_labels = std::move(columns);
    return [map] { render_heatmap_grid({{.panels = {map}}}); };
  };
  EXPECT_NE(error_of(with({"a", "b", "c"}, {})).find("has 3 row labels for 2 rows"),
            std::string::npos);
  EXPECT_NE(error_of(with({}, {"a", "b"})).find("has 2 column labels for 3 columns"),
            std::string::npos);
  EXPECT_EQ(error_of(with({"a", "b"}, {"x", "y", "z"})), "");
  EXPECT_THROW(render_heatmap_grid(
                   {{.panels = {{.title = "m", .missing = "diverged", .row_labels = {"a"}}}}}),
               Error);
}

TEST(RenderHeatmapLabels, AFigureTitleWidensTheFigureAndNothingElseChangesWithoutOne) {
  const std::string plain = render_heatmap_grid({{.panels = {two_by_three()}}});
  EXPECT_EQ(plain.find("label\""), std::string::npos);
  const std::string long_title(120, 'w');
  const std::string titled = render_heatmap_grid({{.panels = {two_by_three()}}},
                                                 {.title = {long_title, "rows: queries & keys"}});
  EXPECT_NE(titled.find("font-weight=\"bold\">" + long_title + "<"), std::string::npos);
  EXPECT_NE(titled.find(">rows: queries &amp; keys<"), std::string::npos);
  EXPECT_GT(number_in(titled, "<svg", "width"), number_in(plain, "<svg", "width") + 100);
  EXPECT_GT(number_in(titled, "<svg", "height"), number_in(plain, "<svg", "height"));
}

}  // namespace
}  // namespace gradflow::plot
