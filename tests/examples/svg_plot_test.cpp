#include "examples/common/svg_plot.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "examples/common/axis_ticks.h"
#include "examples/common/plot_layout.h"
#include "tensor/error.h"

namespace gradflow::plot {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

std::vector<std::string> texts(const std::vector<Tick>& ticks, bool labelled_only = true) {
  std::vector<std::string> out;
  for (const Tick& t : ticks) {
    if (!labelled_only || !t.label.empty()) out.push_back(tick_text(t));
  }
  return out;
}

std::vector<double> labelled_values(const std::vector<Tick>& ticks) {
  std::vector<double> out;
  for (const Tick& t : ticks) {
    if (!t.label.empty()) out.push_back(t.value);
  }
  return out;
}

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

TEST(LinearTicks, NiceStepsWithoutFloatingPointNoise) {
  EXPECT_EQ(texts(linear_ticks(0, 1)),
            (std::vector<std::string>{"0.0", "0.2", "0.4", "0.6", "0.8", "1.0"}));
  const std::vector<Tick> tenths = linear_ticks(0.05, 0.72);
  EXPECT_EQ(texts(tenths),
            (std::vector<std::string>{"0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7"}));
  EXPECT_EQ(tenths[2].value, 0.3);  // Not 3 * 0.1 = 0.30000000000000004.
  EXPECT_EQ(texts(linear_ticks(-3, 7)), (std::vector<std::string>{"-2", "0", "2", "4", "6"}));
  EXPECT_EQ(texts(linear_ticks(-30, 1030)),
            (std::vector<std::string>{"0", "200", "400", "600", "800", "1000"}));
  EXPECT_EQ(texts(linear_ticks(2.07, 2.53)),
            (std::vector<std::string>{"2.1", "2.2", "2.3", "2.4", "2.5"}));
}

TEST(LinearTicks, ScientificLabelsForVerySmallAndLargeValues) {
  EXPECT_EQ(texts(linear_ticks(0, 5e-5)),
            (std::vector<std::string>{"0", "1e-05", "2e-05", "3e-05", "4e-05", "5e-05"}));
  EXPECT_EQ(
      texts(linear_ticks(0, 3.3e6)),
      (std::vector<std::string>{"0", "5e+05", "1e+06", "1.5e+06", "2e+06", "2.5e+06", "3e+06"}));
}

TEST(LinearTicks, StaysWithinRangeAndBudgetForManyRanges) {
  for (double lo : {-1e9, -7.3, -0.001, 0.0, 0.5, 1e-7, 12345.0}) {
    for (double span : {1e-6, 0.013, 1.0, 7.7, 99.0, 3e5}) {
      for (int max : {2, 3, 5, 8}) {
        const std::vector<Tick> ticks = linear_ticks(lo, lo + span, max);
        ASSERT_GE(ticks.size(), 1u) << lo << " " << span;
        ASSERT_LE(ticks.size(), static_cast<std::size_t>(max)) << lo << " " << span;
        for (std::size_t i = 0; i < ticks.size(); ++i) {
          EXPECT_GE(ticks[i].value, lo - 1e-12 * std::fabs(lo));
          EXPECT_LE(ticks[i].value, lo + span + 1e-12 * std::fabs(lo + span));
          EXPECT_EQ(ticks[i].label.find("000000000"), std::string::npos) << ticks[i].label;
          if (i > 0) {
            EXPECT_GT(ticks[i].value, ticks[i - 1].value);
          }
        }
      }
    }
  }
  EXPECT_GE(linear_ticks(0, 1).size(), 5u);  // "About 5 to 8 ticks" by default.
}

TEST(LinearTicks, RejectsEmptyOrNonFiniteRanges) {
  EXPECT_THROW(linear_ticks(1, 1), Error);
  EXPECT_THROW(linear_ticks(2, 1), Error);
  EXPECT_THROW(linear_ticks(kNaN, 1), Error);
  EXPECT_THROW(linear_ticks(0, kInf), Error);
  EXPECT_THROW(linear_ticks(0, 1, 1), Error);
}

TEST(LogTicks, DecadesWrittenOutInTheMiddleRange) {
  const std::vector<Tick> ticks = log_ticks(3, 1200);
  EXPECT_EQ(texts(ticks), (std::vector<std::string>{"10", "100", "1000"}));
  EXPECT_EQ(labelled_values(ticks), (std::vector<double>{10, 100, 1000}));
  // Unlabelled minor ticks at 3..9, 20..90, 200..900.
  EXPECT_EQ(ticks.size() - 3, 7u + 8u + 8u);
  EXPECT_FALSE(ticks.front().major);
  EXPECT_EQ(ticks.front().value, 3);
}

TEST(LogTicks, PowersOfTenForSmallValues) {
  EXPECT_EQ(texts(log_ticks(1e-6, 1e-2)),
            (std::vector<std::string>{"10^-6", "10^-5", "10^-4", "10^-3", "10^-2"}));
  const std::vector<Tick> ticks = log_ticks(1e-6, 1e-2);
  EXPECT_EQ(ticks.front().label, "10");
  EXPECT_EQ(ticks.front().exponent, "-6");
}

TEST(LogTicks, LabelsTwosAndFivesUnderTwoDecades) {
  EXPECT_EQ(texts(log_ticks(0.9, 60)), (std::vector<std::string>{"1", "2", "5", "10", "20", "50"}));
  EXPECT_EQ(texts(log_ticks(0.015, 0.6)),
            (std::vector<std::string>{"0.02", "0.05", "0.1", "0.2", "0.5"}));
  EXPECT_EQ(texts(log_ticks(1.5e-5, 3e-4)),
            (std::vector<std::string>{"2×10^-5", "5×10^-5", "10^-4", "2×10^-4"}));
}

TEST(LogTicks, ThinsDecadesOnWideRanges) {
  EXPECT_EQ(
      texts(log_ticks(1e-20, 1e20)),
      (std::vector<std::string>{"10^-18", "10^-12", "10^-6", "10^0", "10^6", "10^12", "10^18"}));
  EXPECT_LE(texts(log_ticks(1e-20, 1e20, 3)).size(), 3u);
}

TEST(LogTicks, FallsBackToLinearStepsWithinADecade) {
  EXPECT_EQ(texts(log_ticks(60, 150)), (std::vector<std::string>{"60", "80", "100", "120", "140"}));
  EXPECT_EQ(texts(log_ticks(3, 8)), (std::vector<std::string>{"3", "4", "5", "6", "7", "8"}));
}

TEST(LogTicks, RejectsNonPositiveRanges) {
  EXPECT_THROW(log_ticks(0, 10), Error);
  EXPECT_THROW(log_ticks(-1, 10), Error);
  EXPECT_THROW(log_ticks(10, 1), Error);
}

TEST(Scale, MapsMonotonicallyOntoThePixelRange) {
  const Scale y{.lo = 1, .hi = 1000, .log = true, .pixel_lo = 400, .pixel_hi = 40};
  EXPECT_DOUBLE_EQ(y.to_pixel(1), 400);
  EXPECT_DOUBLE_EQ(y.to_pixel(1000), 40);
  EXPECT_DOUBLE_EQ(y.to_pixel(std::sqrt(1000.0)), 220);
  EXPECT_TRUE(std::isnan(y.fraction(-1)));
  const Scale x{.lo = -2, .hi = 6, .log = false, .pixel_lo = 50, .pixel_hi = 650};
  double previous = -kInf;
  for (double v = -2; v <= 6; v += 0.25) {
    const double p = x.to_pixel(v);
    EXPECT_GT(p, previous);
    EXPECT_GE(p, 50);
    EXPECT_LE(p, 650);
    previous = p;
  }
}

TEST(FormatNumber, CompactAndNeverNegativeZero) {
  EXPECT_EQ(format_number(12.5), "12.5");
  EXPECT_EQ(format_number(3.0), "3");
  EXPECT_EQ(format_number(1.234), "1.23");
  EXPECT_EQ(format_number(-7.891), "-7.89");
  EXPECT_EQ(format_number(-0.001), "0");
  EXPECT_EQ(format_number(0.1 + 0.2), "0.3");
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
  for (const char* text : {">Logit std vs d_k<", ">d_k<", ">std of logits<", ">measured<",
                           ">theory<", ">1000<", "stroke-dasharray"}) {
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
  EXPECT_THROW(render_svg(Figure{.width = 0}), Error);
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

TEST(Palette, EightDistinctColoursThenCycles) {
  for (int i = 0; i < kPaletteSize; ++i) {
    for (int j = 0; j < i; ++j) {
      EXPECT_NE(palette_color(i), palette_color(j));
    }
  }
  EXPECT_EQ(palette_color(kPaletteSize + 3), palette_color(3));
}

}  // namespace
}  // namespace gradflow::plot
