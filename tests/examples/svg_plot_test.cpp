#include "examples/toolkit/plot/svg_plot.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "examples/toolkit/plot/axis_ticks.h"
#include "examples/toolkit/plot/plot_layout.h"
#include "tensor/error.h"

namespace gradflow::plot {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// A small XML check, enough for what render_svg emits: one root element, tags that nest and
// balance, quoted attribute values without '<', and no '&' or '>' outside a known entity.
::testing::AssertionResult WellFormed(const std::string& svg) {
  const auto bad = [&](const std::string& why, std::size_t at) {
    return ::testing::AssertionFailure()
           << why << " at " << at << ": ..." << svg.substr(at > 40 ? at - 40 : 0, 80) << "...";
  };
  if (svg.rfind("<svg ", 0) != 0) return bad("does not start with <svg", 0);
  const std::string end = "</svg>\n";
  if (svg.size() < end.size() || svg.compare(svg.size() - end.size(), end.size(), end) != 0) {
    return bad("does not end with </svg>", svg.size());
  }
  std::vector<std::string> open;
  for (std::size_t i = 0; i < svg.size();) {
    const char c = svg[i];
    if (c == '&') {
      const std::size_t semi = svg.find(';', i);
      const std::string entity = svg.substr(i, semi == std::string::npos ? 1 : semi - i + 1);
      if (entity != "&amp;" && entity != "&lt;" && entity != "&gt;" && entity != "&quot;" &&
          entity != "&apos;") {
        return bad("unknown entity", i);
      }
    }
    if (c == '>') return bad("unescaped >", i);
    if (c != '<') {
      if (open.empty() && c != '\n') return bad("text outside the root element", i);
      ++i;
      continue;
    }
    std::size_t j = i + 1;
    bool quoted = false;
    for (; j < svg.size() && (quoted || svg[j] != '>'); ++j) {
      if (svg[j] == '"') quoted = !quoted;
      if (svg[j] == '<') return bad("'<' inside a tag", j);
    }
    if (j == svg.size()) return bad("unterminated tag", i);
    const std::string tag = svg.substr(i + 1, j - i - 1);
    const std::string name = tag.substr(0, tag.find_first_of(" /", 1));
    if (tag.empty() || name.empty()) return bad("empty tag", i);
    if (tag[0] == '/') {
      if (open.empty() || "/" + open.back() != name) return bad("mismatched " + tag, i);
      open.pop_back();
    } else if (tag.back() != '/') {
      if (open.empty() && i != 0) return bad("second root element", i);
      open.push_back(name);
    }
    i = j + 1;
  }
  if (!open.empty()) return bad("unclosed <" + open.back() + ">", svg.size());
  return ::testing::AssertionSuccess();
}

// Value of attribute `name` in the first tag at or after `from` containing `marker`.
std::string attribute(const std::string& svg, const std::string& marker, const std::string& name,
                      std::size_t from = 0) {
  const std::size_t tag = svg.find(marker, from);
  if (tag == std::string::npos) return "";
  const std::size_t at = svg.find(" " + name + "=\"", tag);
  const std::size_t begin = at + name.size() + 3;
  return svg.substr(begin, svg.find('"', begin) - begin);
}

struct Box {
  double left, top, right, bottom;
};

Box frame(const std::string& svg, std::size_t from = 0) {
  const double x = std::stod(attribute(svg, "class=\"frame\"", "x", from));
  const double y = std::stod(attribute(svg, "class=\"frame\"", "y", from));
  return {x, y, x + std::stod(attribute(svg, "class=\"frame\"", "width", from)),
          y + std::stod(attribute(svg, "class=\"frame\"", "height", from))};
}

// The points of every data path ("M x y L x y ..."), one vector per path.
std::vector<std::vector<std::pair<double, double>>> series_paths(const std::string& svg) {
  std::vector<std::vector<std::pair<double, double>>> paths;
  for (std::size_t at = svg.find("class=\"series\""); at != std::string::npos;
       at = svg.find("class=\"series\"", at + 1)) {
    const std::string d = attribute(svg, "class=\"series\"", "d", at);
    paths.emplace_back();
    const char* p = d.c_str();
    while (*p) {
      if (*p == 'M' || *p == 'L') ++p;
      char* next = nullptr;
      const double x = std::strtod(p, &next);
      const double y = std::strtod(next, &next);
      paths.back().emplace_back(x, y);
      p = next;
    }
  }
  return paths;
}

bool mentions_nan_or_inf(const std::string& svg) {
  std::string lower;
  for (char c : svg) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower.find("nan") != std::string::npos || lower.find("inf") != std::string::npos;
}

Figure sample_figure() {
  Figure f{.title = "Logit std vs d_k",
           .x = {.label = "d_k", .log = true},
           .y = {.label = "std of logits", .log = true}};
  const std::vector<double> dk = {4, 16, 64, 256, 1024};
  f.series.push_back(
      {.label = "measured", .x = dk, .y = {2.1, 3.9, 8.2, 15.5, 33}, .markers = true});
  f.series.push_back({.label = "theory", .x = dk, .y = {2, 4, 8, 16, 32}, .dashed = true});
  return f;
}

TEST(RenderSvg, CompleteDocumentWithTitleLabelsAndLegend) {
  const std::string svg = render_svg(sample_figure());
  ASSERT_TRUE(WellFormed(svg));
  EXPECT_NE(svg.find("xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
  EXPECT_NE(svg.find("viewBox=\"0 0 720 450\""), std::string::npos);
  EXPECT_NE(svg.find("font-family=\"sans-serif\""), std::string::npos);
  EXPECT_NE(svg.find("fill=\"white\""), std::string::npos);
  // ">10<tspan ...>3<": the tick 10^3, its exponent a superscript.
  for (const char* text : {">Logit std vs d_k<", ">d_k<", ">std of logits<", ">measured<",
                           ">theory<", ">10<tspan", ">3</tspan>", "stroke-dasharray"}) {
    EXPECT_NE(svg.find(text), std::string::npos) << text;
  }
  EXPECT_EQ(svg, render_svg(sample_figure()));  // Deterministic.
}

TEST(RenderSvg, EscapesAllText) {
  Figure f{.title = "a<b & \"c\" 'd'>", .x = {.label = "x&y"}, .y = {.label = "<y>"}};
  f.series.push_back({.label = "q<k>", .x = {1, 2}, .y = {1, 2}});
  const std::string svg = render_svg(f);
  ASSERT_TRUE(WellFormed(svg));
  EXPECT_NE(svg.find("a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;"), std::string::npos);
  EXPECT_NE(svg.find(">x&amp;y<"), std::string::npos);
  EXPECT_NE(svg.find(">&lt;y&gt;<"), std::string::npos);
  EXPECT_NE(svg.find(">q&lt;k&gt;<"), std::string::npos);
}

TEST(RenderSvg, DegenerateDataStillGivesValidSvg) {
  std::vector<Figure> cases;
  cases.push_back(Figure{});
  cases.push_back(Figure{.title = "empty series"});
  cases.back().series.push_back({.label = "none"});
  cases.push_back(Figure{.title = "single point"});
  cases.back().series.push_back({.label = "one", .x = {3}, .y = {5}});
  cases.push_back(Figure{.title = "holes"});
  cases.back().series.push_back(
      {.label = "holes", .x = {1, 2, 3, 4, 5}, .y = {1, kNaN, 3, kInf, 5}});
  cases.back().series.push_back({.label = "all bad", .x = {kNaN, kInf}, .y = {1, -kInf}});
  cases.push_back(Figure{.title = "log negatives", .y = {.log = true}});
  cases.back().series.push_back({.label = "s", .x = {1, 2, 3, 4}, .y = {-1, 0, 2, 4}});
  cases.push_back(Figure{.title = "log nothing positive", .x = {.log = true}});
  cases.back().series.push_back({.label = "s", .x = {-1, 0}, .y = {2, 4}});
  cases.push_back(Figure{.title = "all equal"});
  cases.back().series.push_back({.label = "flat", .x = {2, 2, 2}, .y = {7, 7, 7}});
  cases.push_back(Figure{.title = "extremes"});
  cases.back().series.push_back({.label = "s", .x = {-1e308, 0, 1e308}, .y = {1e-300, 2, 1e300}});
  cases.push_back(Figure{.title = "tiny", .width = 60, .height = 40});
  cases.back().series.push_back(
      {.label = "a label far wider than the figure", .x = {1, 2}, .y = {1, 2}});
  for (const Figure& f : cases) {
    const std::string svg = render_svg(f);
    EXPECT_TRUE(WellFormed(svg)) << f.title;
    EXPECT_FALSE(mentions_nan_or_inf(svg)) << f.title;
    const Box box = frame(svg);
    for (const auto& path : series_paths(svg)) {
      for (const auto& [x, y] : path) {
        EXPECT_TRUE(x >= box.left - 0.01 && x <= box.right + 0.01) << f.title << " x " << x;
        EXPECT_TRUE(y >= box.top - 0.01 && y <= box.bottom + 0.01) << f.title << " y " << y;
      }
    }
  }
}

TEST(RenderSvg, DataMapsMonotonicallyInsideThePlotArea) {
  for (bool log : {false, true}) {
    Figure f{.x = {.log = log}, .y = {.log = log}};
    Series s{.label = "rising"};
    for (int i = 1; i <= 40; ++i) {
      s.x.push_back(i * 0.5);
      s.y.push_back(std::exp(0.2 * i));
    }
    f.series.push_back(s);
    const std::string svg = render_svg(f);
    const Box box = frame(svg);
    const auto paths = series_paths(svg);
    ASSERT_EQ(paths.size(), 1u);
    ASSERT_EQ(paths[0].size(), 40u);
    for (std::size_t i = 0; i < paths[0].size(); ++i) {
      const auto [x, y] = paths[0][i];
      EXPECT_TRUE(x > box.left && x < box.right && y > box.top && y < box.bottom) << x << " " << y;
      if (i > 0) {
        EXPECT_GT(x, paths[0][i - 1].first);
        EXPECT_LT(y, paths[0][i - 1].second);  // Larger values sit higher: smaller pixel y.
      }
    }
  }
}

TEST(RenderSvg, FixedLimitsClipLinesAtTheFrame) {
  Figure f{.x = {.min = 2, .max = 8}, .y = {.min = 0, .max = 1}};
  Series s{.label = "wave"};
  for (int i = 0; i <= 100; ++i) {
    s.x.push_back(i * 0.1);
    s.y.push_back(0.5 + 0.8 * std::sin(i * 0.1));
  }
  f.series.push_back(s);
  const std::string svg = render_svg(f);
  ASSERT_TRUE(WellFormed(svg));
  const Box box = frame(svg);
  const auto paths = series_paths(svg);
  ASSERT_EQ(paths.size(), 1u);
  bool touches_top = false;
  for (const auto& [x, y] : paths[0]) {
    EXPECT_TRUE(x >= box.left - 0.01 && x <= box.right + 0.01) << x;
    EXPECT_TRUE(y >= box.top - 0.01 && y <= box.bottom + 0.01) << y;
    touches_top = touches_top || std::fabs(y - box.top) < 0.01;
  }
  EXPECT_TRUE(touches_top);  // Clipped where the wave leaves the top, not dropped.
}

TEST(RenderSvg, NaNBreaksTheLineIntoSegments) {
  Figure f;
  f.series.push_back({.label = "s", .x = {1, 2, 3, 4, 5, 6}, .y = {1, 2, kNaN, 4, 5, 6}});
  const std::string d = attribute(render_svg(f), "class=\"series\"", "d");
  EXPECT_EQ(std::count(d.begin(), d.end(), 'M'), 2);
  EXPECT_EQ(std::count(d.begin(), d.end(), 'L'), 3);
}

TEST(RenderSvg, LegendStaysOffThePlotArea) {
  Figure wide = sample_figure();
  Figure narrow = sample_figure();
  narrow.width = 300;
  narrow.height = 240;
  narrow.series[0].label = "a label too long to sit beside a small plot";
  for (const Figure& f : {wide, narrow}) {
    const Layout l = make_layout(f);
    ASSERT_EQ(l.legend.size(), 2u);
    const bool right = l.legend_x >= l.right, below = l.legend_y >= l.bottom;
    EXPECT_TRUE(right || below) << f.width;
    EXPECT_LE(l.legend_x + l.legend_width, f.width);
    EXPECT_LE(l.legend_y + l.legend_height, f.height);
  }
  EXPECT_GE(make_layout(wide).legend_x, make_layout(wide).right);  // Beside the plot when it fits.
}

TEST(RenderSvg, RejectsInvalidFigures) {
  Figure mismatched;
  mismatched.series.push_back({.label = "s", .x = {1, 2, 3}, .y = {1, 2}});
  EXPECT_THROW(render_svg(mismatched), Error);
  EXPECT_THROW(render_svg(Figure{.x = {.min = 3, .max = 1}}), Error);
  EXPECT_THROW(render_svg(Figure{.y = {.log = true, .min = 0}}), Error);
  EXPECT_THROW(render_svg(Figure{.x = {.max = kNaN}}), Error);
  EXPECT_THROW(render_svg(Figure{.x = {.log = true, .ticks = {16, 0}}}), Error);
  EXPECT_THROW(render_svg(Figure{.y = {.ticks = {kNaN}}}), Error);
  EXPECT_THROW(render_svg(Figure{.width = 0}), Error);
  Figure short_band;
  short_band.series.push_back({.label = "s", .x = {1, 2}, .y = {1, 2}, .lo = {0}, .hi = {3, 4}});
  EXPECT_THROW(render_svg(short_band), Error);
  Figure lo_only;
  lo_only.series.push_back({.label = "s", .x = {1, 2}, .y = {1, 2}, .lo = {0, 1}});
  EXPECT_THROW(render_svg(lo_only), Error);
  EXPECT_THROW(render_svg_grid({sample_figure()}, 1, {.display_width = -1}), Error);
}

// Every point of every path of class `cls` ("M x y L x y ... Z"), one vector per subpath.
std::vector<std::vector<std::pair<double, double>>> subpaths(const std::string& svg,
                                                             const std::string& cls) {
  std::vector<std::vector<std::pair<double, double>>> out;
  const std::string marker = "class=\"" + cls + "\"";
  for (std::size_t at = svg.find(marker); at != std::string::npos; at = svg.find(marker, at + 1)) {
    const std::string d = attribute(svg, marker, "d", at);
    for (const char* p = d.c_str(); *p;) {
      if (*p == 'Z') {
        ++p;
        continue;
      }
      if (*p == 'M') out.emplace_back();
      ++p;
      char* next = nullptr;
      const double x = std::strtod(p, &next);
      const double y = std::strtod(next, &next);
      out.back().emplace_back(x, y);
      p = next;
    }
  }
  return out;
}

Figure band_figure() {
  Figure f{.x = {.label = "step"}, .y = {.label = "loss", .log = true}};
  Series s{.label = "mean of 5 seeds"};
  for (int i = 0; i < 30; ++i) {
    s.x.push_back(i);
    s.y.push_back(std::exp(-0.1 * i));
    s.lo.push_back(0.8 * s.y.back());
    s.hi.push_back(1.25 * s.y.back());
  }
  f.series.push_back(s);
  return f;
}

TEST(RenderSvg, BandBeneathTheLinesInsideTheFrame) {
  Figure f = band_figure();
  f.series[0].lo[10] = kNaN;  // Breaks the band in two,
  f.series[0].lo[20] = -1;    // and in three: not drawable on a log axis.
  f.series.push_back({.label = "other", .x = {0, 29}, .y = {1, 0.05}});
  const std::string svg = render_svg(f);
  ASSERT_TRUE(WellFormed(svg));
  const auto polygons = subpaths(svg, "band");
  ASSERT_EQ(polygons.size(), 3u);
  EXPECT_EQ(polygons[0].size(), 20u);  // Points 0..9 along lo, then back along hi.
  const Box box = frame(svg);
  for (const auto& polygon : polygons) {
    for (const auto& [x, y] : polygon) {
      EXPECT_TRUE(x >= box.left - 0.01 && x <= box.right + 0.01) << x;
      EXPECT_TRUE(y >= box.top - 0.01 && y <= box.bottom + 0.01) << y;
    }
  }
  EXPECT_EQ(attribute(svg, "class=\"band\"", "fill"), palette_color(0));
  EXPECT_EQ(attribute(svg, "class=\"band\"", "fill-opacity"), "0.18");
  EXPECT_EQ(attribute(svg, "class=\"band\"", "stroke"), "none");
  EXPECT_LT(svg.find("class=\"band\""), svg.find("class=\"series\""));  // Beneath every line.
  EXPECT_EQ(svg.find("class=\"error-bars\""), std::string::npos);

  // Fixed limits cut the band at the frame rather than letting it spill over.
  Figure zoomed = band_figure();
  zoomed.x.min = 5;
  zoomed.x.max = 20;
  zoomed.y.max = 0.5;
  const std::string clipped = render_svg(zoomed);
  const Box inner = frame(clipped);
  bool touches_top = false;
  for (const auto& polygon : subpaths(clipped, "band")) {
    for (const auto& [x, y] : polygon) {
      EXPECT_TRUE(x >= inner.left - 0.01 && x <= inner.right + 0.01) << x;
      EXPECT_TRUE(y >= inner.top - 0.01 && y <= inner.bottom + 0.01) << y;
      touches_top = touches_top || std::fabs(y - inner.top) < 0.01;
    }
  }
  EXPECT_TRUE(touches_top);
}

TEST(RenderSvg, FewMarkedPointsGetErrorBarsInstead) {
  Figure f{.x = {.log = true}};
  f.series.push_back({.label = "measured",
                      .x = {16, 64, 256, 1024},
                      .y = {1, 2, 4, kNaN},
                      .lo = {0.5, 1.5, kInf, 6},
                      .hi = {1.5, 2.5, 5, 9},
                      .markers = true});
  const std::string svg = render_svg(f);
  ASSERT_TRUE(WellFormed(svg));
  EXPECT_EQ(svg.find("class=\"band\""), std::string::npos);
  const auto parts = subpaths(svg, "error-bars");
  // Three drawable spreads (not the Inf one; the NaN mean's is drawn), each a bar and two caps.
  ASSERT_EQ(parts.size(), 9u);
  const Box box = frame(svg);
  for (const auto& part : parts) {
    for (const auto& [x, y] : part) {
      EXPECT_TRUE(x >= box.left - 0.01 && x <= box.right + 0.01) << x;
      EXPECT_TRUE(y >= box.top - 0.01 && y <= box.bottom + 0.01) << y;
    }
  }
  f.series[0].markers = false;  // A curve: a band, even for few points.
  EXPECT_NE(render_svg(f).find("class=\"band\""), std::string::npos);
}

// Beneath, so a thin series on the same values shows inside the thick line.
TEST(RenderSvg, EmphasisedSeriesDrawnThickerAndFirst) {
  Figure f;
  f.series.push_back({.label = "same values", .x = {1, 2, 3}, .y = {1, 2, 3}});
  f.series.push_back({.label = "default", .x = {1, 2, 3}, .y = {1, 2, 3}, .emphasis = true});
  const std::string svg = render_svg(f);
  const std::size_t first = svg.find("class=\"series\"");
  const std::size_t second = svg.find("class=\"series\"", first + 1);
  ASSERT_NE(second, std::string::npos);
  EXPECT_EQ(attribute(svg, "class=\"series\"", "stroke", first), palette_color(1));
  EXPECT_EQ(attribute(svg, "class=\"series\"", "stroke", second), palette_color(0));  // On top.
  EXPECT_GT(std::stod(attribute(svg, "class=\"series\"", "stroke-width", first)),
            std::stod(attribute(svg, "class=\"series\"", "stroke-width", second)));
}

Series line(const std::string& label, const std::string& color = "") {
  return {.label = label, .x = {1, 2, 3}, .y = {1, 2, 4}, .color = color};
}

// The rule of svg_plot.h: a reader can tell every series of a panel apart.
TEST(RenderSvg, RefusesTwoSeriesOfAPanelInOneColour) {
  Figure f;
  f.series = {line("a", "#0072B2"), line("b", "#D55E00")};
  EXPECT_NO_THROW(render_svg(f));
  f.series[1].color = "#0072b2";  // Case does not make another colour.
  EXPECT_THROW(render_svg(f), Error);
  f.series[0].color = "#abc", f.series[1].color = "#AABBCC";  // Nor does the short form.
  EXPECT_THROW(render_svg(f), Error);
  f.series[1].color = "";  // Position 1's palette colour against position 0's explicit one.
  f.series[0].color = std::string(palette_color(1));
  EXPECT_THROW(render_svg(f), Error);
  f.series[0].x.clear(), f.series[0].y.clear();  // Nothing drawn, nothing to confuse.
  EXPECT_NO_THROW(render_svg(f));
  // Two reference lines are two greys: one series with a NaN between its lines is the way.
  Figure refs;
  refs.series = {line("data"),
                 {.label = "slope 1", .x = {1, 2}, .y = {1, 2}, .reference = true},
                 {.label = "slope 2", .x = {1, 2}, .y = {1, 4}, .reference = true}};
  EXPECT_THROW(render_svg(refs), Error);
  EXPECT_THROW(render_svg_grid({refs}, 1), Error);
  refs.series.pop_back();
  const std::string svg = render_svg(refs);
  const std::size_t reference = svg.find("class=\"series\"", svg.find("class=\"series\"") + 1);
  EXPECT_EQ(attribute(svg, "class=\"series\"", "stroke", reference), kReferenceColor);
  EXPECT_EQ(attribute(svg, "class=\"series\"", "stroke-dasharray", reference), "6 4");
}

TEST(RenderSvg, AtMostSixDataSeriesBesideAReference) {
  Figure f;
  for (int i = 0; i < kMaxSeries; ++i) f.series.push_back(line("mode " + std::to_string(i)));
  f.series.push_back({.label = "theory", .x = {1, 3}, .y = {1, 3}, .reference = true});
  EXPECT_NO_THROW(render_svg(f));
  f.series.back() = line("one too many", "#F0E442");
  EXPECT_THROW(render_svg(f), Error);
  EXPECT_THROW(render_svg_grid({f}, 1), Error);
  // Past the palette a series needs its own colour, even with few drawn.
  Figure sparse;
  sparse.series.resize(kPaletteSize);  // Empty: they draw nothing and have no colour.
  sparse.series.push_back(line("late"));
  EXPECT_THROW(render_svg(sparse), Error);
  sparse.series.back().color = "#000";
  EXPECT_NO_THROW(render_svg(sparse));
}

TEST(RenderSvg, DashedSeriesGetRingMarkers) {
  Figure f;
  f.series = {{.label = "solid", .x = {1, 2}, .y = {1, 2}, .markers = true},
              {.label = "dashed", .x = {1, 2}, .y = {1, 2}, .dashed = true, .markers = true}};
  const std::string svg = render_svg(f);
  EXPECT_EQ(attribute(svg, "<circle", "fill"), palette_color(0));
  const std::string ring =
      "fill=\"none\" stroke=\"" + std::string(palette_color(1)) + "\" stroke-width=\"1.5\"/>";
  EXPECT_NE(svg.find("<circle"), svg.find(ring));  // The first marker is solid's, filled.
  EXPECT_NE(svg.find(ring), std::string::npos);
}

TEST(RenderSvgGrid, PanelsSideBySide) {
  std::vector<Figure> panels(3, sample_figure());
  panels[1].title = "second";
  panels[2].width = 800;
  const std::string svg = render_svg_grid(panels, 2);
  ASSERT_TRUE(WellFormed(svg));
  EXPECT_NE(svg.find("viewBox=\"0 0 1600 900\""), std::string::npos);
  EXPECT_NE(svg.find("translate(800 0)"), std::string::npos);
  EXPECT_NE(svg.find("translate(0 450)"), std::string::npos);
  std::size_t frames = 0;
  for (std::size_t at = svg.find("class=\"frame\""); at != std::string::npos;
       at = svg.find("class=\"frame\"", at + 1)) {
    ++frames;
  }
  EXPECT_EQ(frames, 3u);
  EXPECT_TRUE(WellFormed(render_svg_grid({}, 3)));
  EXPECT_THROW(render_svg_grid(panels, 0), Error);
}

TEST(RenderSvgGrid, MagnifiedPanelsAndOneLegend) {
  std::vector<Figure> panels(4, band_figure());
  const std::string svg = render_svg_grid(panels, 3, {.share_y = true, .legend_once = true});
  ASSERT_TRUE(WellFormed(svg));
  EXPECT_NE(svg.find("translate(720 0) scale(1.8)"), std::string::npos);
  EXPECT_NE(svg.find("width=\"2160\""), std::string::npos);
  std::size_t legends = 0;
  for (std::size_t at = svg.find("class=\"legend\""); at != std::string::npos;
       at = svg.find("class=\"legend\"", at + 1)) {
    ++legends;
  }
  EXPECT_EQ(legends, 1u);
  EXPECT_EQ(svg, render_svg_grid(panels, 3, {.share_y = true, .legend_once = true}));
}

// Okabe-Ito's eight but yellow (unreadable on white), none of them the references' grey,
// and no second round that would repeat a colour.
TEST(Palette, SevenOkabeItoColoursWithoutYellowOrGrey) {
  const std::vector<std::string> okabe_ito = {"#000000", "#E69F00", "#56B4E9", "#009E73",
                                              "#0072B2", "#D55E00", "#CC79A7"};
  for (int i = 0; i < kPaletteSize; ++i) {
    EXPECT_NE(std::find(okabe_ito.begin(), okabe_ito.end(), palette_color(i)), okabe_ito.end());
    EXPECT_NE(palette_color(i), kReferenceColor);
    for (int j = 0; j < i; ++j) EXPECT_NE(palette_color(i), palette_color(j));
  }
  EXPECT_THROW(palette_color(kPaletteSize), Error);
  EXPECT_THROW(palette_color(-1), Error);
}

// One entry per label over all panels, so panels may show different series; a label drawn in
// two colours would make that entry lie about one of them.
TEST(RenderSvgGrid, OneLegendForPanelsOfDifferentSeries) {
  Figure left, right;
  left.series = {line("none", "#D55E00"), line("inv_dk", "#0072B2")};
  right.series = {line("none", "#D55E00"),
                  line("learned", "#56B4E9"),
                  {.label = "theory", .x = {1, 3}, .y = {1, 3}, .reference = true}};
  const GridLayout g = make_grid_layout({right, left}, 2, {.legend_once = true});
  ASSERT_EQ(g.legend_series.size(), 4u);
  EXPECT_EQ(g.legend_series[0].label, "none");
  EXPECT_EQ(g.legend_series[1].label, "learned");
  EXPECT_EQ(g.legend_series[2].label, "inv_dk");
  EXPECT_EQ(g.legend_series[2].color, "#0072B2");
  EXPECT_EQ(g.legend_series[3].label, "theory");  // References after the data.
  EXPECT_EQ(g.legend_series[3].color, kReferenceColor);
  EXPECT_TRUE(WellFormed(render_svg_grid({left, right}, 2, {.legend_once = true})));
  right.series[0].color = "#000000";
  EXPECT_THROW(render_svg_grid({left, right}, 2, {.legend_once = true}), Error);
  EXPECT_NO_THROW(render_svg_grid({left, right}, 2));  // Each panel's own legend tells.
  right.series[0].color = "#D55E00", right.series[0].dashed = true;
  EXPECT_THROW(render_svg_grid({left, right}, 2, {.legend_once = true}), Error);
}

}  // namespace
}  // namespace gradflow::plot
