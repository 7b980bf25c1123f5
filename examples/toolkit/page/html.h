// One HTML file a person opens to see a run: the page writer of the training programs' index.html
// (training/run_page.h) and of the study's (study_page.h).
//
// A page is one self-contained file: its CSS, its script (page_script.cpp, a few hundred lines a
// reader can follow, no framework) and its figures (inline SVG) are in it, it makes no network
// request, and it opens from file:// in a current browser. With scripts off it still shows every
// figure; the script only adds what needs one: values on hover and series shown or hidden in the
// curves (any svg_plot.h figure), a slider over the evaluations on the attention maps.
//
//   page::Page p{.title = "seq2seq reverse"};
//   p.body += page::element("h2", "Curves") + page::inline_svg(svg, "curves");
//   page::write_page("runs/x/index.html", p);
//
// Text from a user's data (a corpus's characters, a path, a flag's value) goes through
// escape_html, or json_string for the page's data: a corpus holding <script> shows it as text.
#pragma once

#include <string>
#include <string_view>

namespace gradflow::page {

// `text` safe as HTML text or a quoted attribute value: & < > " ' as character references, the
// control characters HTML forbids (all but tab, newline and carriage return) dropped, and a
// byte that is not part of valid UTF-8 as U+FFFD (the page says it is UTF-8).
std::string escape_html(std::string_view text);

// <name>escape_html(text)</name>, with `attributes` (already escaped) after the name.
std::string element(std::string_view name, std::string_view text, std::string_view attributes = "");

// `text` as a JSON string literal, quotes included, safe inside a <script> element: < > & as
// \u003c \u003e \u0026 (so "</script>" cannot end the element), control characters as \u00XX,
// invalid UTF-8 as \ufffd.
std::string json_string(std::string_view text);

// A number as JSON: the shortest text that reads back as v to 4 significant digits ("0.0123",
// "1.5e-07"), "null" for NaN and infinities (JSON has neither; the script draws no point there).
std::string json_number(double v);

// An SVG document as an element of a page: what precedes "<svg" (an XML declaration, a comment)
// dropped, and every id="x" with its references (url(#x), href="#x") renamed `prefix`-x, so
// two figures' ids (each heat map's "heat-scale") cannot clash on one page. Throws
// gradflow::Error when `svg` holds no <svg element.
std::string inline_svg(std::string_view svg, std::string_view prefix);

struct Page {
  std::string title = "";  // plain text: the window's title and the page's heading
  // A page of a run still going reloads itself this often (a <meta http-equiv="refresh">), so
  // it shows the run so far; 0: a finished run's page, which stays as it is.
  int refresh_seconds = 0;
  std::string body = "";  // HTML: the page's content after its heading
};

// The whole document: doctype, head (charset, title, the CSS, the refresh), the heading, the
// body and the script, in that order. Every tag opened is closed, so a simple parser can check
// it (tests/examples/html_check.h).
std::string render(const Page& page);

// render(page), written atomically (nn/io/atomic_file.h): a browser reloading the page of a
// live run reads the old page or the new one, never half of one. Throws Error naming the path.
void write_page(const std::string& path, const Page& page);

// The page's CSS and its script, in page_script.cpp.
extern const std::string_view kPageStyle;
extern const std::string_view kPageScript;

}  // namespace gradflow::page
