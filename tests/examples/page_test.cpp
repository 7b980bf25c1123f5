// The page writer (examples/toolkit/page/html.h) and its Markdown (markdown.h): escaping, the
// page's structure, and the figures' hooks for its script.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "examples/toolkit/page/html.h"
#include "examples/toolkit/page/markdown.h"
#include "examples/toolkit/plot/svg_heatmap.h"
#include "examples/toolkit/plot/svg_plot.h"
#include "tensor/error.h"
#include "tests/examples/html_check.h"

namespace gradflow::page {
namespace {

using testing::check_html;

size_t count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

TEST(PageEscape, UserTextShowsAsText) {
  EXPECT_EQ(escape_html("<script>alert(1)</script>"), "&lt;script&gt;alert(1)&lt;/script&gt;");
  EXPECT_EQ(escape_html("a & \"b\" 'c'"), "a &amp; &quot;b&quot; &#39;c&#39;");
  EXPECT_EQ(escape_html("tab\there\nline"), "tab\there\nline");
  EXPECT_EQ(escape_html(std::string("bell\x07 nul") + '\0' + "!"), "bell nul!");
}

TEST(PageEscape, KeepsUtf8AndReplacesWhatIsNot) {
  EXPECT_EQ(escape_html("\u2423 \u00e9 \U0001F600"), "\u2423 \u00e9 \U0001F600");
  // A lone byte of a character, an overlong '/', a surrogate, a C1 control.
  EXPECT_EQ(escape_html("a\xc3z"), "a\ufffdz");
  EXPECT_EQ(escape_html("\xc0\xaf"), "\ufffd\ufffd");
  EXPECT_EQ(escape_html("\xed\xa0\x80"), "\ufffd\ufffd\ufffd");
  EXPECT_EQ(escape_html("x\xc2\x85y"), "xy");
  EXPECT_EQ(escape_html("cut \xe2\x90"), "cut \ufffd\ufffd");
}

TEST(PageEscape, JsonStringsCannotEndTheirScript) {
  EXPECT_EQ(json_string("</script><b>"), "\"\\u003c/script\\u003e\\u003cb\\u003e\"");
  EXPECT_EQ(json_string("a\"b\\c\nd&"), "\"a\\\"b\\\\c\\u000ad\\u0026\"");
  EXPECT_EQ(json_string("\u2423\xff"), "\"\u2423\ufffd\"");
  EXPECT_EQ(json_number(0.012345), "0.01235");
  EXPECT_EQ(json_number(1.5e-7), "1.5e-07");
  EXPECT_EQ(json_number(std::nan("")), "null");
  EXPECT_EQ(json_number(-1.0 / 0.0), "null");
}

TEST(PageSvg, InlineFiguresKeepTheirIdsApart) {
  const std::string svg =
      "<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\"><defs>"
      "<linearGradient id=\"heat-scale\"/></defs><rect data-id=\"7\" fill=\"url(#heat-scale)\"/>"
      "<use href=\"#heat-scale\"/></svg>";
  const std::string a = inline_svg(svg, "map 0"), b = inline_svg(svg, "map-1");
  EXPECT_EQ(a.rfind("<svg", 0), 0u);  // the declaration dropped
  EXPECT_NE(a.find("id=\"map-0-heat-scale\""), std::string::npos);
  EXPECT_NE(a.find("url(#map-0-heat-scale)"), std::string::npos);
  EXPECT_NE(a.find("href=\"#map-0-heat-scale\""), std::string::npos);
  EXPECT_NE(a.find("data-id=\"7\""), std::string::npos);  // not an id
  EXPECT_NE(b.find("id=\"map-1-heat-scale\""), std::string::npos);
  EXPECT_THROW(inline_svg("<p>not a figure</p>", "x"), Error);
}

TEST(PageRender, AWellFormedOfflinePageWithItsTextEscaped) {
  Page p{.title = "charlm: runs/<script>alert(1)</script>"};
  p.body = element("p", "a corpus holding <script>alert(1)</script> & more") +
           "<div class=\"figure\">" + inline_svg(plot::render_svg({.title = "<t>"}), "f") +
           "</div>";
  const std::string html = render(p);
  const testing::HtmlCheck c = check_html(html);
  EXPECT_TRUE(c.problems.empty()) << c.summary();
  EXPECT_EQ(c.elements.at("script"), 1);  // the page's own, nothing from the text
  EXPECT_EQ(html.find("<script>alert"), std::string::npos);
  EXPECT_EQ(count(html, "&lt;script&gt;alert(1)&lt;/script&gt;"), 3u);  // title, h1, text
  EXPECT_EQ(html.find("http-equiv=\"refresh\""), std::string::npos);
  // It may load nothing: its policy says so to the browser.
  EXPECT_NE(html.find("default-src 'none'"), std::string::npos);
  p.refresh_seconds = 15;
  EXPECT_NE(render(p).find("<meta http-equiv=\"refresh\" content=\"15\"/>"), std::string::npos);
}

TEST(PageRender, TheCheckerFindsWhatABrowserWouldTripOn) {
  auto problems = [](const std::string& body) {
    return check_html(render({.title = "t", .body = body})).problems.size();
  };
  EXPECT_EQ(problems("<p>fine &amp; <b>bold</b></p>"), 0u);
  EXPECT_GT(problems("<p>a <b>b</p></b>"), 0u);                       // crossed
  EXPECT_GT(problems("<p>1 < 2</p>"), 0u);                            // raw <
  EXPECT_GT(problems("<p>R&D</p>"), 0u);                              // bare &
  EXPECT_GT(problems("<p><div>x</div></p>"), 0u);                     // a block in a <p>
  EXPECT_GT(problems("<a href=\"https://example.com/\">x</a>"), 0u);  // another host
  EXPECT_GT(problems("<img src=\"//cdn.example.com/x.png\"/>"), 0u);
  EXPECT_GT(problems("<i id=\"x\"></i><i id=\"x\"></i>"), 0u);
  EXPECT_GT(problems("<script>fetch('x')</script>"), 0u);
  EXPECT_EQ(problems("<a href=\"log.csv\">log</a><svg xmlns=\"http://www.w3.org/2000/svg\"></svg>"),
            0u);
}

TEST(PageFigures, CurvesNameTheirSeriesAndAxisForTheScript) {
  plot::Figure f{.title = "loss", .x = {.label = "step"}};
  f.series.push_back({.label = "a<b", .x = {1, 2, 3}, .y = {3, std::nan(""), 1}});
  f.series.push_back({.label = "", .x = {1, 2}, .y = {1, 1}});  // unnamed: no values to show
  const std::string svg = plot::render_svg(f);
  EXPECT_NE(svg.find("<g class=\"curve\" data-label=\"a&lt;b\" data-points=\"1,3 3,1\">"),
            std::string::npos);
  EXPECT_NE(svg.find("<g class=\"curve\" data-points=\"\">"), std::string::npos);
  EXPECT_NE(svg.find("<g class=\"legend-entry\" data-label=\"a&lt;b\">"), std::string::npos);
  EXPECT_NE(svg.find("class=\"frame\" data-x=\""), std::string::npos);
  EXPECT_NE(svg.find(" lin\" data-x-label=\"step\""), std::string::npos);
  // In a grid with one legend, the panels' series keep their names for the script.
  const std::string grid = plot::render_svg_grid({f, f}, 2, {.legend_once = true});
  EXPECT_EQ(count(grid, "<g class=\"curve\" data-label=\"a&lt;b\""), 2u);
  EXPECT_EQ(count(grid, "<g class=\"legend-entry\" data-label=\"a&lt;b\">"), 1u);
}

TEST(PageFigures, HeatMapNotesAreMarkedForTheSlider) {
  const std::string svg = plot::render_heatmap_grid({{.panels = {{.title = "head 0",
                                                                  .notes = {"entropy 1"},
                                                                  .rows = 1,
                                                                  .columns = 1,
                                                                  .values = {0.5}}}}});
  EXPECT_EQ(count(svg, "class=\"note\""), 1u);
}

TEST(PageMarkdown, TheReportsSubset) {
  const std::string md =
      "# Title\n\nA paragraph\non two lines with **bold**, `code <x>` and a "
      "[link](data.csv).\n\n- one\n- two\n  continued\n\n1. first\n2. second\n\n"
      "| id | verdict |\n|---|---|\n| C1 | **holds** |\n| C2 | partly holds |\n| C3 | "
      "**does not hold** |\n\n```\nkept <as> is\n```\n\n![fig](fig.svg)\n\n"
      "See [the site](https://example.com).\n";
  const std::vector<MarkdownBlock> blocks = parse_markdown(md);
  ASSERT_EQ(blocks.size(), 8u);
  EXPECT_EQ(blocks[0].kind, MarkdownBlock::Kind::kHeading);
  EXPECT_EQ(blocks[2].lines, (std::vector<std::string>{"one", "two continued"}));
  EXPECT_EQ(blocks[3].level, 1);  // ordered
  EXPECT_EQ(blocks[6].kind, MarkdownBlock::Kind::kImage);
  EXPECT_EQ(blocks[6].target, "fig.svg");
  std::string html;
  for (const MarkdownBlock& b : blocks) html += block_html(b);
  EXPECT_NE(html.find("<h1 id=\"title\">Title</h1>"), std::string::npos);
  EXPECT_NE(html.find("<p>A paragraph on two lines with <strong>bold</strong>, <code>code "
                      "&lt;x&gt;</code> and a <a href=\"data.csv\">link</a>.</p>"),
            std::string::npos);
  EXPECT_NE(html.find("<ul>\n<li>one</li>\n<li>two continued</li>\n</ul>"), std::string::npos);
  EXPECT_NE(html.find("<ol>\n<li>first</li>"), std::string::npos);
  EXPECT_NE(html.find("<tr><th>id</th><th>verdict</th></tr>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"verdict-holds\"><strong>holds</strong></td>"),
            std::string::npos);
  EXPECT_NE(html.find("<td class=\"verdict-partly\">partly holds</td>"), std::string::npos);
  EXPECT_NE(html.find("<td class=\"verdict-not\">"), std::string::npos);
  EXPECT_NE(html.find("<pre>kept &lt;as&gt; is\n</pre>"), std::string::npos);
  // An outside address stays text: a page links only to its own folder.
  EXPECT_NE(html.find("See the site (https://example.com)."), std::string::npos);
  EXPECT_TRUE(check_html(render({.title = "t", .body = html})).problems.empty());
}

TEST(PageMarkdown, HooksPlaceWhatTheTextNames) {
  std::vector<std::string> named;
  MarkdownHooks hooks;
  hooks.link = [&](const std::string& text, const std::string& target) {
    named.push_back(target);
    return "<a href=\"#" + target + "\">" + text + "</a>";
  };
  hooks.after = [&] {
    std::string out;
    for (const std::string& n : named) out += "<figure>" + n + "</figure>";
    named.clear();
    return out;
  };
  const std::string html =
      block_html(parse_markdown("- see [a](a.svg)\n- and [b](b.svg)\n")[0], hooks);
  EXPECT_NE(html.find("<li>see <a href=\"#a.svg\">a</a><figure>a.svg</figure></li>"),
            std::string::npos);
  EXPECT_NE(html.find("<li>and <a href=\"#b.svg\">b</a><figure>b.svg</figure></li>"),
            std::string::npos);
  EXPECT_EQ(anchor_id("C5: Without a scale, d_k!"), "c5-without-a-scale-d-k");
}

}  // namespace
}  // namespace gradflow::page
