// The Markdown the study's report.md is written in, as HTML for its page (study_page.h). The
// project has no Markdown library, and needs only this subset:
//   # to ###### headings        a line each
//   paragraphs                  lines up to a blank line, joined
//   - items, 1. items           a list, one item a line (indented lines continue it)
//   | a | b |  tables           the second line |---|---| separates the header
//   ```  code blocks            kept as they are
//   ![alt](file)                an image alone on its line
//   **bold**, `code`, [text](target) within any of them
// Anything else is text. Every piece of text is escaped (html.h): a report quoting <script>
// shows it.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace gradflow::page {

struct MarkdownBlock {
  enum class Kind { kHeading, kParagraph, kList, kTable, kCode, kImage };
  Kind kind = Kind::kParagraph;
  int level = 0;                      // a heading's (1 for #), or 1 for an ordered list
  std::vector<std::string> lines{};   // a paragraph's lines; a list's items; a table's rows
  std::string alt = "", target = "";  // an image's
};

// The blocks of `text`, in order.
std::vector<MarkdownBlock> parse_markdown(std::string_view text);

// What a page makes of links and of the end of a block; each may be left empty.
struct MarkdownHooks {
  // The HTML of [text](target), `text` already HTML. Default: an <a> to a relative target, and
  // the text with the target written after it for one with a scheme (http:, mailto:, ...), so a
  // page asks for nothing outside its folder.
  std::function<std::string(const std::string& text, const std::string& target)> link = nullptr;
  // HTML to put at the end of each paragraph, table and list item (a figure the text named).
  std::function<std::string()> after = nullptr;
  // A heading's id from its text. Default: anchor_id (a page with two headings alike makes
  // them unique here).
  std::function<std::string(const std::string& text)> heading_id = nullptr;
};

// MarkdownHooks::link's default.
std::string link_html(const std::string& text, const std::string& target);

// `text`'s inline markup (bold, code, links) as HTML, the rest escaped.
std::string inline_html(std::string_view text, const MarkdownHooks& hooks = {});

// One block as HTML; an image block as a link to its target (a page that holds its images
// draws them itself: its policy loads no file). A table cell that is a verdict alone ("**holds**",
// "partly holds", "does not hold", "unclear") gets a class the CSS colours (verdict-holds, ...).
std::string block_html(const MarkdownBlock& block, const MarkdownHooks& hooks = {});

// An id for a heading or a figure made from its text: "c5-without-a-scale".
std::string anchor_id(std::string_view text);

}  // namespace gradflow::page
