#include "examples/toolkit/page/study_page.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "examples/toolkit/page/html.h"
#include "examples/toolkit/page/markdown.h"
#include "nn/io/atomic_file.h"

namespace gradflow::page {
namespace {

namespace fs = std::filesystem;
using Kind = MarkdownBlock::Kind;

// Report files are a few hundred kilobytes; this only stops a wrong file from filling memory.
constexpr uint64_t kMostBytes = uint64_t{256} << 20;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

class StudyPage {
 public:
  StudyPage(const std::vector<NamedText>& figures, const std::vector<std::string>& csv_files)
      : csv_(csv_files.begin(), csv_files.end()) {
    for (const NamedText& f : figures) figures_[f.name] = &f.text;
    hooks_.link = [this](const std::string& text, const std::string& target) {
      return link(text, target);
    };
    hooks_.after = [this] { return pending_figures(); };
    hooks_.heading_id = [this](const std::string& text) {
      const std::string id = anchor_id(text);
      const int n = ++ids_[id];
      return n == 1 ? id : id + "-" + std::to_string(n);
    };
  }

  std::string html(const std::vector<MarkdownBlock>& blocks, size_t first,
                   const std::vector<std::string>& csv_files) {
    // Each image's caption is the paragraph right after it (report.cpp's "Plots" section).
    std::set<size_t> captions;
    for (size_t i = first; i + 1 < blocks.size(); ++i)
      if (blocks[i].kind == Kind::kImage && blocks[i + 1].kind == Kind::kParagraph) {
        captions_[blocks[i].target] = &blocks[i + 1];
        captions.insert(i + 1);
      }
    std::string out;
    for (size_t i = first; i < blocks.size(); ++i) {
      if (captions.count(i)) continue;
      const MarkdownBlock& b = blocks[i];
      if (b.kind == Kind::kImage && figures_.count(b.target)) {
        out += placed_.count(b.target)
                   ? "<p>" + element("a", b.target, "href=\"#" + figure_id(b.target) + "\"") +
                         ": shown above, where the text first names it.</p>\n"
                   : figure(b.target);
      } else {
        out += block_html(b, hooks_);
      }
      if (i == first) out += files_paragraph(csv_files);
    }
    std::string unnamed;
    for (const auto& [name, svg] : figures_)
      if (!placed_.count(name)) unnamed += figure(name);
    if (!unnamed.empty())
      out += "<h2 id=\"other-figures\">Figures the report does not name</h2>\n" + unnamed;
    return out;
  }

 private:
  static std::string figure_id(const std::string& name) { return "fig-" + anchor_id(name); }

  std::string link(const std::string& text, const std::string& target) {
    if (figures_.count(target)) {
      if (!placed_.count(target) &&
          std::find(pending_.begin(), pending_.end(), target) == pending_.end())
        pending_.push_back(target);
      return "<a href=\"#" + figure_id(target) + "\">" + text + "</a>";
    }
    if (csv_.count(target)) return "<a href=\"" + escape_html(target) + "\">" + text + "</a>";
    return link_html(text, target);
  }

  std::string pending_figures() {
    std::string out;
    for (const std::string& name : pending_) out += figure(name);
    pending_.clear();
    return out;
  }

  std::string figure(const std::string& name) {
    placed_.insert(name);
    std::string caption;
    if (const auto it = captions_.find(name); it != captions_.end()) {
      std::string joined;
      for (const std::string& line : it->second->lines)
        joined += (joined.empty() ? "" : " ") + line;
      caption = ": " + inline_html(joined, hooks_);
    }
    return "<figure class=\"figure\" id=\"" + figure_id(name) + "\">\n" +
           inline_svg(*figures_.at(name), figure_id(name)) + "<figcaption>" +
           element("a", name, "href=\"" + escape_html(name) + "\"") + caption +
           "</figcaption>\n</figure>\n";
  }

  static std::string files_paragraph(const std::vector<std::string>& csv_files) {
    std::string out =
        "<p class=\"files\">The numbers behind every figure and table, in this folder:";
    for (size_t i = 0; i < csv_files.size(); ++i)
      out += std::string(i ? "," : "") + " " +
             element("a", csv_files[i], "href=\"" + escape_html(csv_files[i]) + "\"");
    return out + "; the report as Markdown: <a href=\"report.md\">report.md</a>.</p>\n";
  }

  std::map<std::string, const std::string*> figures_;
  std::set<std::string> csv_, placed_;
  std::map<std::string, const MarkdownBlock*> captions_;
  std::vector<std::string> pending_;
  std::map<std::string, int> ids_;
  MarkdownHooks hooks_;
};

}  // namespace

std::string study_page_html(const std::string& report_md, const std::vector<NamedText>& figures,
                            const std::vector<std::string>& csv_files) {
  const std::vector<MarkdownBlock> blocks = parse_markdown(report_md);
  // The report's own title heads the page.
  size_t first = 0;
  std::string title = "Study report";
  if (!blocks.empty() && blocks.front().kind == Kind::kHeading && blocks.front().level == 1) {
    title = blocks.front().lines.front();
    first = 1;
  }
  StudyPage page(figures, csv_files);
  return render({.title = title, .body = page.html(blocks, first, csv_files)});
}

void write_study_page(const std::string& dir) {
  const std::string report = read_file((fs::path(dir) / "report.md").string(), kMostBytes);
  std::vector<NamedText> figures;
  std::vector<std::string> csv_files;
  std::vector<fs::path> entries;
  for (const fs::directory_entry& e : fs::directory_iterator(dir))
    if (e.is_regular_file()) entries.push_back(e.path());
  std::sort(entries.begin(), entries.end());
  for (const fs::path& p : entries) {
    const std::string name = p.filename().string();
    if (ends_with(name, ".svg")) figures.push_back({name, read_file(p.string(), kMostBytes)});
    if (ends_with(name, ".csv")) csv_files.push_back(name);
  }
  write_file_atomic((fs::path(dir) / "index.html").string(),
                    study_page_html(report, figures, csv_files));
}

}  // namespace gradflow::page
