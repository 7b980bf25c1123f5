// The study's page (examples/toolkit/page/study_page.h): the report with every figure inline
// where the text first names it, its captions, the CSVs linked, on a report shaped as
// scaling_study writes it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "examples/toolkit/page/study_page.h"
#include "examples/toolkit/plot/svg_plot.h"
#include "nn/io/atomic_file.h"
#include "tensor/error.h"
#include "tests/examples/html_check.h"

namespace gradflow::page {
namespace {

namespace fs = std::filesystem;

size_t count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

std::string curves(const std::string& title) {
  plot::Figure f{.title = title, .x = {.label = "step"}};
  f.series.push_back({.label = "none", .x = {0, 10, 20}, .y = {2, 1.5, 1}});
  f.series.push_back({.label = "inv_sqrt_dk", .x = {0, 10, 20}, .y = {2, 1, 0.5}});
  return plot::render_svg(f);
}

const char* kReport =
    "# Attention scaling study\n\n"
    "Produced by `scaling_study --out <x>`; the CSV files beside this report hold it all.\n\n"
    "## What this run shows\n\n"
    "1. **Partly: unscaled attention learns worse.** (C22) See [loss.svg](loss.svg) and "
    "[final_metrics.csv](final_metrics.csv).\n"
    "2. **It saturates.** (C5) See [loss.svg](loss.svg) again.\n\n"
    "## The claims\n\n| id | claim | verdict |\n|---|---|---|\n| C5 | saturates | **holds** |\n"
    "| C22 | learns worse | **partly holds** |\n\n"
    "## Plots\n\n![loss.svg](loss.svg)\n\nThe held-out loss of each arm.\n\n"
    "![entropy.svg](entropy.svg)\n\nEntropy over steps, <b>caption</b>.\n";

TEST(StudyPage, EveryFigureOnceWhereTheTextFirstNamesIt) {
  const std::string html = study_page_html(kReport,
                                           {{"loss.svg", curves("loss")},
                                            {"entropy.svg", curves("entropy")},
                                            {"extra.svg", curves("extra")}},
                                           {"criteria.csv", "final_metrics.csv"});
  const testing::HtmlCheck c = testing::check_html(html);
  EXPECT_TRUE(c.problems.empty()) << c.summary();
  EXPECT_EQ(c.elements.at("svg"), 3);
  EXPECT_EQ(c.elements.at("figure"), 3);
  // loss.svg after the first finding that names it, before the second; its caption with it.
  const size_t figure = html.find("<figure class=\"figure\" id=\"fig-loss-svg\">");
  ASSERT_NE(figure, std::string::npos);
  EXPECT_LT(html.find("unscaled attention learns worse"), figure);
  EXPECT_LT(figure, html.find("It saturates"));
  EXPECT_LT(figure, html.find("The held-out loss of each arm."));
  EXPECT_LT(html.find("The held-out loss of each arm."), html.find("It saturates"));
  EXPECT_EQ(count(html, "<a href=\"#fig-loss-svg\">loss.svg</a>"), 3u);  // 2 links, 1 "shown above"
  // entropy.svg, named by its image only, stands in the Plots section with its caption escaped.
  EXPECT_LT(html.find("id=\"plots\""), html.find("id=\"fig-entropy-svg\""));
  EXPECT_NE(html.find("Entropy over steps, &lt;b&gt;caption&lt;/b&gt;."), std::string::npos);
  // A figure the report does not mention is still shown, at the end.
  EXPECT_LT(html.find("Figures the report does not name"), html.find("id=\"fig-extra-svg\""));
  // The title heads the page once; the CSVs are linked; the verdicts coloured.
  EXPECT_EQ(count(html, "<h1>Attention scaling study</h1>"), 1u);
  EXPECT_NE(html.find("<a href=\"criteria.csv\">criteria.csv</a>"), std::string::npos);
  EXPECT_NE(html.find("<a href=\"final_metrics.csv\">final_metrics.csv</a>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"verdict-holds\">"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"verdict-partly\">"), std::string::npos);
  EXPECT_NE(html.find("<code>scaling_study --out &lt;x&gt;</code>"), std::string::npos);
  // The arms can be hidden from their legend entries, and hovered.
  EXPECT_NE(html.find("<g class=\"legend-entry\" data-label=\"inv_sqrt_dk\">"), std::string::npos);
}

TEST(StudyPage, WrittenBesideTheReportFromItsFolder) {
  const fs::path dir =
      fs::temp_directory_path() / ("gradflow_study_page_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  EXPECT_THROW(write_study_page(dir.string()), Error);  // no report.md
  write_file_atomic((dir / "report.md").string(), kReport);
  write_file_atomic((dir / "loss.svg").string(), curves("loss"));
  write_file_atomic((dir / "entropy.svg").string(), curves("entropy"));
  write_file_atomic((dir / "final_metrics.csv").string(), "a,b\n1,2\n");
  write_study_page(dir.string());
  const std::string html = read_file((dir / "index.html").string(), 1 << 24);
  EXPECT_TRUE(testing::check_html(html).problems.empty());
  EXPECT_NE(html.find("id=\"fig-loss-svg\""), std::string::npos);
  EXPECT_NE(html.find("id=\"fig-entropy-svg\""), std::string::npos);
  EXPECT_NE(html.find("<a href=\"final_metrics.csv\">"), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gradflow::page
