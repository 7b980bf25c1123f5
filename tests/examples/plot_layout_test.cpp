// The geometry behind svg_plot.h, tested without parsing SVG: ticks and their labels
// (axis_ticks.h), and ranges, legends, clipping and grid panels (plot_layout.h).
#include "examples/toolkit/plot/plot_layout.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "examples/toolkit/plot/axis_ticks.h"
#include "examples/toolkit/plot/svg_plot.h"
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

// Digits after the decimal point of a plain label.
std::size_t decimals(const std::string& label) {
  const std::size_t point = label.find('.');
  return point == std::string::npos ? 0 : label.size() - point - 1;
}

// One axis's labels are all plain decimals, or all powers of ten (a plain "0" aside), with one
// number of decimals along the axis, and never e-notation.
void expect_one_style(const std::vector<Tick>& ticks, const std::string& where) {
  bool powers = false;
  for (const Tick& t : ticks) powers = powers || !t.exponent.empty();
  std::set<std::size_t> plain_decimals;
  for (const Tick& t : ticks) {
    if (t.label.empty()) continue;
    EXPECT_EQ(t.label.find('e'), std::string::npos) << where << ": " << tick_text(t);
    if (powers) {
      EXPECT_TRUE(!t.exponent.empty() || t.label == "0") << where << ": " << tick_text(t);
      // The mantissas' decimals ("1.5" of 1.5×10^6; "10" alone has none).
      if (t.label != "0") plain_decimals.insert(decimals(t.label.substr(0, t.label.find("×"))));
    } else {
      plain_decimals.insert(decimals(t.label));
    }
  }
  EXPECT_LE(plain_decimals.size(), 1u) << where;
}

TEST(TickStyle, OneStylePerAxisOnLinearAndLogAxes) {
  for (double lo : {-1e9, -7.3, -0.001, 0.0, 0.5, 3e-9, 1e-7, 12345.0}) {
    for (double span : {1e-6, 0.013, 1.0, 7.7, 99.0, 3e5, 4e7}) {
      // Spans under a millionth of their distance from zero (1e9 + 0.013) would need an offset
      // ("+1e9") to share their decimals; without one they only stay free of noise (above).
      if (std::fabs(lo) > 1e6 * span) continue;
      expect_one_style(linear_ticks(lo, lo + span), "linear " + std::to_string(lo));
    }
  }
  for (double lo : {1e-9, 3e-7, 1e-4, 0.015, 0.9, 3.0, 60.0, 1e5}) {
    for (double decades : {0.3, 1.0, 1.8, 2.5, 4.0, 9.0}) {
      const std::vector<Tick> ticks = log_ticks(lo, lo * std::pow(10.0, decades));
      expect_one_style(ticks, "log " + std::to_string(lo));
      // Every labelled decade is written as a power of ten, whatever the range.
      for (const Tick& t : ticks) {
        const double e = std::log10(t.value);
        if (!t.label.empty() && std::fabs(e - std::round(e)) < 1e-9 && t.exponent.empty()) {
          // Only the linear fallback of narrow ranges labels a decade plainly.
          EXPECT_LT(decades, 2.0) << lo << " " << tick_text(t);
        }
      }
    }
  }
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
            (std::vector<std::string>{"0", "10^-5", "2×10^-5", "3×10^-5", "4×10^-5", "5×10^-5"}));
  EXPECT_EQ(texts(linear_ticks(0, 3.3e6)),
            (std::vector<std::string>{"0", "0.5×10^6", "1.0×10^6", "1.5×10^6", "2.0×10^6",
                                      "2.5×10^6", "3.0×10^6"}));
  EXPECT_EQ(texts(linear_ticks(-2.5e-5, 1.1e-5)),
            (std::vector<std::string>{"-2.5×10^-5", "-2.0×10^-5", "-1.5×10^-5", "-1.0×10^-5",
                                      "-0.5×10^-5", "0", "0.5×10^-5", "1.0×10^-5"}));
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

TEST(LogTicks, DecadesArePowersOfTenInTheMiddleRangeToo) {
  const std::vector<Tick> ticks = log_ticks(3, 1200);
  EXPECT_EQ(texts(ticks), (std::vector<std::string>{"10^1", "10^2", "10^3"}));
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
  EXPECT_EQ(texts(log_ticks(0.9, 60)),
            (std::vector<std::string>{"10^0", "2×10^0", "5×10^0", "10^1", "2×10^1", "5×10^1"}));
  EXPECT_EQ(texts(log_ticks(0.015, 0.6)),
            (std::vector<std::string>{"2×10^-2", "5×10^-2", "10^-1", "2×10^-1", "5×10^-1"}));
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

// Shoelace area of a polygon.
double area(const std::vector<Point>& p) {
  double twice = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const Point a = p[i], b = p[(i + 1) % p.size()];
    twice += a.x * b.y - b.x * a.y;
  }
  return std::fabs(twice) / 2;
}

TEST(ClipPolygon, KeepsWhatLiesInsideTheUnitSquare) {
  const std::vector<Point> half =
      clip_polygon({{0.5, 0.25}, {1.5, 0.25}, {1.5, 0.75}, {0.5, 0.75}});
  EXPECT_NEAR(area(half), 0.25, 1e-12);
  // A band whose upper edge dips into the square from above: concave, cut along the top.
  const std::vector<Point> band =
      clip_polygon({{0, 0.2}, {0.5, 0.2}, {1, 0.2}, {1, 1.4}, {0.5, 0.6}, {0, 1.4}});
  EXPECT_NEAR(area(band), 0.7, 1e-8);  // The clip keeps 1e-9 of slack.
  for (const std::vector<Point>& polygon : {half, band}) {
    for (const Point& p : polygon) {
      EXPECT_TRUE(p.x >= 0 && p.x <= 1 && p.y >= 0 && p.y <= 1) << p.x << " " << p.y;
    }
  }
  EXPECT_LT(clip_polygon({{2, 2}, {3, 2}, {3, 3}}).size(), 3u);
  const std::vector<Point> inside = {{0.1, 0.1}, {0.9, 0.2}, {0.5, 0.8}};
  EXPECT_NEAR(area(clip_polygon(inside)), area(inside), 1e-12);
}

TEST(ClipSegment, FindsWhereASegmentEntersAndLeaves) {
  double t0, t1;
  ASSERT_TRUE(clip_segment({-1, 0.5}, {3, 0.5}, t0, t1));
  EXPECT_NEAR(t0, 0.25, 1e-8);
  EXPECT_NEAR(t1, 0.5, 1e-8);
  EXPECT_FALSE(clip_segment({-1, 2}, {3, 2}, t0, t1));
}

Series spread_series(std::vector<double> x, std::vector<double> y, std::vector<double> lo,
                     std::vector<double> hi) {
  return {.label = "s", .x = x, .y = y, .lo = lo, .hi = hi};
}

TEST(Layout, SpreadsCountTowardsTheAxisRange) {
  Figure f;
  f.series.push_back(spread_series({1, 2, 3}, {1, 2, 3}, {0, 1, 2}, {5, 6, 10}));
  const Layout l = make_layout(f);
  EXPECT_LT(l.y.lo, 0);
  EXPECT_GT(l.y.hi, 10);
  // On a log axis a spread with lo <= 0 is not drawable, so its hi does not widen the range.
  Figure g{.y = {.log = true}};
  g.series.push_back(spread_series({1, 2, 3}, {1, 2, 3}, {-1, 1, 2}, {100, 3, 4}));
  EXPECT_LT(make_layout(g).y.hi, 10);
  EXPECT_GT(make_layout(g).y.hi, 4);
  // A point whose mean is NaN still shows its spread, and the x range covers it.
  Figure h;
  h.series.push_back(spread_series({1, 2, 9}, {1, 2, kNaN}, {0, 1, 2}, {2, 3, 4}));
  EXPECT_GT(make_layout(h).x.hi, 9);
}

TEST(Layout, AnAxisWithItsOwnTicksShowsThoseInRange) {
  // A study's widths: ticks at d_k 16 to 128 read better than 2×10^1, 5×10^1, 10^2.
  Figure f{.x = {.log = true, .ticks = {128, 16, 32, 64, 4096, 16}}};
  f.series.push_back({.label = "m*", .x = {16, 32, 64, 128}, .y = {0.5, 0.3, 0.2, 0.1}});
  const Layout l = make_layout(f);
  EXPECT_EQ(texts(l.x_ticks), (std::vector<std::string>{"16", "32", "64", "128"}));
  EXPECT_EQ(texts(l.x_ticks, false).size(), 4u);  // No unlabelled minor ticks beside them.
  EXPECT_GE(texts(l.y_ticks).size(), 3u);         // The other axis keeps its automatic ticks.
  Figure g{.y = {.ticks = {0.25, 0.5}}};
  g.series.push_back({.label = "share", .x = {0, 1}, .y = {0, 1}});
  EXPECT_EQ(texts(make_layout(g).y_ticks), (std::vector<std::string>{"0.25", "0.5"}));
}

TEST(Layout, ErrorBarsOnlyForMarkerSeriesWithFewPoints) {
  Series s = spread_series({1, 2, 3, 4, 5, 6, 7, 8}, std::vector<double>(8, 1),
                           std::vector<double>(8, 0.5), std::vector<double>(8, 2));
  s.markers = true;
  EXPECT_TRUE(uses_error_bars(s));  // kErrorBarMaxPoints points with markers.
  Series curve = s;
  curve.markers = false;
  EXPECT_FALSE(uses_error_bars(curve));
  Series many = s;
  for (std::vector<double>* v : {&many.x, &many.y, &many.lo, &many.hi}) v->push_back(v->back());
  EXPECT_FALSE(uses_error_bars(many));
  Series none = s;
  none.lo.clear();
  none.hi.clear();
  EXPECT_FALSE(uses_error_bars(none));
}

// A panel like the study's: seven modes, the default one emphasised.
Figure seven_modes(double scale_y = 1) {
  Figure f{.title = "seq2seq, d_k = 64", .x = {.label = "step"}, .y = {.label = "loss"}};
  const char* names[] = {"none",    "inv_sqrt_dk", "inv_dk", "inv_2sqrt_dk",
                         "learned", "qk_norm",     "default"};
  for (int m = 0; m < 7; ++m) {
    Series s{.label = names[m], .emphasis = m == 6};
    for (int i = 0; i <= 20; ++i) {
      s.x.push_back(i * 50);
      s.y.push_back(scale_y * (1 + m * 0.1) * std::exp(-0.1 * i));
    }
    f.series.push_back(s);
  }
  return f;
}

// Entries of one legend must not overlap: rows apart, or side by side with room for the text.
void expect_legend_readable(const Layout& l, double width, double height) {
  for (std::size_t i = 0; i < l.legend.size(); ++i) {
    const LegendEntry& a = l.legend[i];
    EXPECT_EQ(a.text.find("…"), std::string::npos) << a.text;  // Not shortened.
    EXPECT_GE(a.x, l.legend_x);
    EXPECT_LE(a.y, l.legend_y + l.legend_height);
    for (std::size_t j = 0; j < i; ++j) {
      const LegendEntry& b = l.legend[j];
      const bool apart = std::fabs(a.y - b.y) >= kLegendRow - 1e-9 ||
                         a.x >= b.x + 32 + text_width(b.text, kLegendFont);
      EXPECT_TRUE(apart) << a.text << " over " << b.text;
    }
  }
  EXPECT_LE(l.legend_x + l.legend_width, width);
  EXPECT_LE(l.legend_y + l.legend_height, height);
  EXPECT_TRUE(l.legend_x >= l.right || l.legend_y >= l.bottom);  // Off the plot.
}

TEST(GridLayout, TextReadableWhenTheGridIsShown1200PixelsWide) {
  for (int columns : {1, 2, 3}) {
    const GridLayout g = make_grid_layout(std::vector<Figure>(6, seven_modes()), columns, {});
    // Pixels on screen per pixel of a panel's own units, the grid shown 1200 px wide.
    const double shown = g.scale * 1200 / g.width;
    EXPECT_GE(kTickFont * shown, 11 - 1e-9) << columns;
    EXPECT_GE(kLegendFont * shown, 11 - 1e-9) << columns;
    EXPECT_GE(kLabelFont * shown, 13 - 1e-9) << columns;
    EXPECT_GE(kTitleFont * shown, 13 - 1e-9) << columns;
    for (const Figure& panel : g.panels) {
      const Layout l = make_layout(panel);
      EXPECT_EQ(l.legend.size(), 7u);
      expect_legend_readable(l, panel.width, panel.height);
    }
  }
  const GridLayout three = make_grid_layout(std::vector<Figure>(3, seven_modes()), 3, {});
  EXPECT_DOUBLE_EQ(three.scale, 1.8);
  EXPECT_EQ(three.width, 2160);
  EXPECT_EQ(three.panels[0].width, 400);  // Laid out as a 400 x 250 panel, drawn 1.8x.
  EXPECT_EQ(three.panels[0].height, 250);
  EXPECT_EQ(make_grid_layout(std::vector<Figure>(3, seven_modes()), 3, {.display_width = 0}).scale,
            1);
  EXPECT_EQ(make_grid_layout({seven_modes()}, 3, {}).scale, 1);  // 720 px fits in 1200.
}

TEST(GridLayout, ShareYPutsEveryPanelOnOneRange) {
  std::vector<Figure> panels = {seven_modes(1), seven_modes(30), seven_modes(0.01)};
  panels[2].series[0].lo = std::vector<double>(21, 1e-4);
  panels[2].series[0].hi = std::vector<double>(21, 80);
  for (bool log : {false, true}) {
    for (Figure& f : panels) f.y.log = log;
    const GridLayout g = make_grid_layout(panels, 3, {.share_y = true});
    const Layout first = make_layout(g.panels[0]);
    for (const Figure& panel : g.panels) {
      const Layout l = make_layout(panel);
      EXPECT_DOUBLE_EQ(l.y.lo, first.y.lo) << log;
      EXPECT_DOUBLE_EQ(l.y.hi, first.y.hi) << log;
      EXPECT_EQ(l.y_ticks.size(), first.y_ticks.size()) << log;
    }
    EXPECT_LE(first.y.lo, 1e-4) << log;  // The band of panel 2.
    EXPECT_GE(first.y.hi, 80) << log;
    EXPECT_GE(first.y.hi, 30 * 1.6) << log;  // The top of panel 1.
    EXPECT_EQ(first.y.log, log);
    // Without share_y each panel keeps its own range.
    const GridLayout own = make_grid_layout(panels, 3, {});
    EXPECT_NE(make_layout(own.panels[0]).y.hi, make_layout(own.panels[1]).y.hi);
  }
}

TEST(GridLayout, ShareYRespectsFixedLimits) {
  std::vector<Figure> panels = {seven_modes(1), seven_modes(2)};
  panels[0].series[0].y[5] = 1e6;  // A diverged run, clipped by panel 0's own fixed limit.
  panels[0].y.max = 3;
  Range r = shared_y_range(panels);
  EXPECT_LT(r.hi, 10);
  EXPECT_GT(r.hi, 2 * 1.6);  // Panel 1's data still counts.
  for (Figure& f : panels) f.y.min = 0;
  panels[1].y.max = 5;
  r = shared_y_range(panels);
  EXPECT_EQ(r.lo, 0);  // Every panel fixes its minimum at 0.
  EXPECT_EQ(r.hi, 5);  // And every panel its maximum: the widest of them.
  Figure six = seven_modes();
  six.series.pop_back();  // Seven data series would be refused for that alone.
  EXPECT_NO_THROW(render_svg_grid({six, six}, 2, {.share_y = true}));
  EXPECT_THROW(render_svg_grid({six, Figure{.y = {.log = true}}}, 2, {.share_y = true}), Error);
}

TEST(GridLayout, OneLegendBeneathTheGrid) {
  std::vector<Figure> panels(5, seven_modes());
  // Past the palette's seven colours a series brings its own.
  panels[1].series.push_back({.label = "extra", .x = {1, 2}, .y = {1, 2}, .color = "#882255"});
  const GridLayout g = make_grid_layout(panels, 3, {.legend_once = true});
  for (const Figure& panel : g.panels) EXPECT_TRUE(make_layout(panel).legend.empty());
  ASSERT_EQ(g.legend.legend.size(), 8u);
  for (std::size_t i = 0; i < g.legend.legend.size(); ++i) {
    EXPECT_EQ(g.legend.legend[i].series, static_cast<int>(i));  // Coloured as in the panels.
  }
  EXPECT_EQ(g.legend.legend[7].text, "extra");
  EXPECT_TRUE(g.legend_series[6].emphasis);
  EXPECT_EQ(g.legend_top, 2 * 450);
  EXPECT_DOUBLE_EQ(g.height, 900 + (g.legend.legend_height + kEdge) * g.scale);
  expect_legend_readable(g.legend, g.width / g.scale, g.legend.legend_height);
  EXPECT_TRUE(make_grid_layout(panels, 3, {}).legend.legend.empty());
}

// A series with nothing to draw (a mode a run left out) keeps its place, so
// the others keep their colours, but gets no legend entry; in a grid it gets
// one when any panel draws it, after those of the panels before.
TEST(Legend, AnEmptySeriesHasNoEntry) {
  Figure f = seven_modes();
  f.series[2].x.clear(), f.series[2].y.clear();
  const Layout l = make_layout(f);
  ASSERT_EQ(l.legend.size(), 6u);
  EXPECT_EQ(l.legend[1].series, 1);
  EXPECT_EQ(l.legend[2].series, 3);
  std::vector<Figure> panels(2, f);
  panels[0].series[4].x.clear(), panels[0].series[4].y.clear();
  const GridLayout g = make_grid_layout(panels, 2, {.legend_once = true});
  ASSERT_EQ(g.legend.legend.size(), 6u);  // series 4 drawn in panel 1, series 2 in neither
  EXPECT_EQ(g.legend.legend[2].text, "inv_2sqrt_dk");
  EXPECT_EQ(g.legend.legend[5].text, "learned");          // First drawn in the second panel.
  EXPECT_EQ(g.legend_series[5].color, palette_color(4));  // Its colour there, position 4.
}

// A title too wide for a grid's narrow panel takes two lines, pushing the plot down.
TEST(Layout, LongTitleWrapsOntoTwoLines) {
  Figure f = seven_modes();
  const Layout one = make_layout(f);
  EXPECT_EQ(one.title_lines, std::vector<std::string>{f.title});
  f.width = 300;
  f.title = "recall, d_k 256: W_Q gradient, none vs 1/sqrt(d_k)";
  const Layout two = make_layout(f);
  ASSERT_EQ(two.title_lines.size(), 2u);
  EXPECT_EQ(two.title_lines[0] + " " + two.title_lines[1], f.title);
  for (const std::string& line : two.title_lines) EXPECT_LE(text_width(line, kTitleFont), 284);
  EXPECT_DOUBLE_EQ(two.top, one.top + kTitleRow);
}

TEST(Layout, TallLegendMovesBeneathThePlot) {
  Figure f = seven_modes();
  f.height = 250;
  f.width = 600;
  for (int i = 0; i < 5; ++i) f.series.push_back({.label = "more", .x = {1}, .y = {1}});
  const Layout l = make_layout(f);  // Twelve rows would run off the figure's bottom.
  EXPECT_GE(l.legend_y, l.bottom);
  expect_legend_readable(l, f.width, f.height);
}

}  // namespace
}  // namespace gradflow::plot
