// The study's page: DIR/index.html, the report a browser shows whole. scaling_study writes
// report.md with its figures (SVG) and tables (CSV) beside it; a browser shows the Markdown as
// text and each figure on its own. The page is the report (markdown.h) with:
//   - every figure inline where the text first names it ([loss_curves.svg](loss_curves.svg):
//     after that paragraph, table or list item), its caption from the report's "Plots" section
//     beneath it, and there a link back in its place; a figure the text never names is shown
//     where its image stands, and one the report does not mention at all at the end;
//   - in the curves, the arms shown or hidden from their legend entries, and values on hover
//     (html.h's script, on svg_plot.h's figures);
//   - the verdict tables' cells coloured by verdict, and every CSV of the folder linked.
#pragma once

#include <string>
#include <vector>

namespace gradflow::page {

struct NamedText {
  std::string name, text;  // a file's name in the folder and its content
};

// The page's HTML from the report's Markdown, its folder's figures (name and SVG) and CSV
// files (names only: linked, not read).
std::string study_page_html(const std::string& report_md, const std::vector<NamedText>& figures,
                            const std::vector<std::string>& csv_files);

// Reads DIR/report.md and the .svg files beside it, lists the .csv files, and writes
// DIR/index.html atomically. Throws gradflow::Error naming the file that could not be read or
// written.
void write_study_page(const std::string& dir);

}  // namespace gradflow::page
