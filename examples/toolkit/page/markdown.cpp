#include "examples/toolkit/page/markdown.h"

#include <cctype>

#include "examples/toolkit/page/html.h"

namespace gradflow::page {
namespace {

using Kind = MarkdownBlock::Kind;

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

// "# Title" -> 1; 0 when the line is not a heading.
int heading_level(std::string_view line) {
  int n = 0;
  while (n < static_cast<int>(line.size()) && line[static_cast<size_t>(n)] == '#') ++n;
  return n >= 1 && n <= 6 && static_cast<size_t>(n) < line.size() &&
                 line[static_cast<size_t>(n)] == ' '
             ? n
             : 0;
}

// The text of a list item ("- x", "12. x"), and whether it is numbered; false when not one.
bool list_item(std::string_view line, std::string& text, bool& ordered) {
  if (starts_with(line, "- ") || starts_with(line, "* ")) {
    text = line.substr(2);
    ordered = false;
    return true;
  }
  size_t digits = 0;
  while (digits < line.size() && std::isdigit(static_cast<unsigned char>(line[digits]))) ++digits;
  if (digits == 0 || digits > 9 || !starts_with(line.substr(digits), ". ")) return false;
  text = line.substr(digits + 2);
  ordered = true;
  return true;
}

// "![alt](target)" alone on its line.
bool image_line(std::string_view line, std::string& alt, std::string& target) {
  line = trim(line);
  if (!starts_with(line, "![") || line.back() != ')') return false;
  const size_t close = line.find("](");
  if (close == std::string_view::npos) return false;
  alt = line.substr(2, close - 2);
  target = line.substr(close + 2, line.size() - close - 3);
  return target.find(' ') == std::string::npos;
}

// The cells of a table row "| a | b |".
std::vector<std::string> cells(std::string_view row) {
  row = trim(row);
  if (starts_with(row, "|")) row.remove_prefix(1);
  if (!row.empty() && row.back() == '|') row.remove_suffix(1);
  std::vector<std::string> out;
  size_t from = 0;
  for (size_t i = 0; i <= row.size(); ++i) {
    const bool escaped_bar = i > 0 && i < row.size() && row[i] == '|' && row[i - 1] == '\\';
    if (i == row.size() || (row[i] == '|' && !escaped_bar)) {
      out.emplace_back(trim(row.substr(from, i - from)));
      from = i + 1;
    }
  }
  return out;
}

bool separator_row(std::string_view row) {
  for (const std::string& c : cells(row))
    if (c.find_first_not_of("-: ") != std::string::npos || c.find('-') == std::string::npos)
      return false;
  return true;
}

bool has_scheme(std::string_view target) {
  const size_t colon = target.find(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  for (size_t i = 0; i < colon; ++i)
    if (!std::isalpha(static_cast<unsigned char>(target[i])) && target[i] != '+' &&
        target[i] != '-' && target[i] != '.')
      return false;
  return true;
}

}  // namespace

std::string link_html(const std::string& text, const std::string& target) {
  if (has_scheme(target) || starts_with(target, "//"))
    return text + " (" + escape_html(target) + ")";
  return "<a href=\"" + escape_html(target) + "\">" + text + "</a>";
}

namespace {

// The class of a table cell that holds a verdict alone, or "".
std::string verdict_class(std::string_view cell) {
  std::string_view text = trim(cell);
  if (starts_with(text, "**") && text.size() > 4 && text.substr(text.size() - 2) == "**")
    text = text.substr(2, text.size() - 4);
  if (text == "holds") return "verdict-holds";
  if (text == "partly holds") return "verdict-partly";
  if (text == "does not hold") return "verdict-not";
  if (text == "unclear" || text == "not tested") return "verdict-unclear";
  return "";
}

}  // namespace

std::vector<MarkdownBlock> parse_markdown(std::string_view text) {
  std::vector<std::string> lines;
  for (size_t from = 0; from <= text.size();) {
    size_t end = text.find('\n', from);
    if (end == std::string_view::npos) end = text.size();
    lines.emplace_back(text.substr(from, end - from));
    from = end + 1;
  }
  std::vector<MarkdownBlock> blocks;
  for (size_t i = 0; i < lines.size();) {
    const std::string_view line = lines[i];
    std::string item, alt, target;
    bool ordered = false;
    if (trim(line).empty()) {
      ++i;
    } else if (starts_with(trim(line), "```")) {
      MarkdownBlock b{.kind = Kind::kCode};
      for (++i; i < lines.size() && !starts_with(trim(lines[i]), "```"); ++i)
        b.lines.push_back(lines[i]);
      ++i;
      blocks.push_back(std::move(b));
    } else if (const int level = heading_level(line); level > 0) {
      blocks.push_back({.kind = Kind::kHeading,
                        .level = level,
                        .lines = {std::string(trim(line.substr(static_cast<size_t>(level))))}});
      ++i;
    } else if (image_line(line, alt, target)) {
      blocks.push_back({.kind = Kind::kImage, .alt = alt, .target = target});
      ++i;
    } else if (starts_with(trim(line), "|")) {
      MarkdownBlock b{.kind = Kind::kTable};
      for (; i < lines.size() && starts_with(trim(lines[i]), "|"); ++i) b.lines.push_back(lines[i]);
      blocks.push_back(std::move(b));
    } else if (list_item(line, item, ordered)) {
      MarkdownBlock b{.kind = Kind::kList, .level = ordered ? 1 : 0};
      b.lines.push_back(item);
      for (++i; i < lines.size() && !trim(lines[i]).empty(); ++i) {
        bool numbered = false;
        if (list_item(lines[i], item, numbered) && numbered == ordered) {
          b.lines.push_back(item);
        } else if (lines[i][0] == ' ' || lines[i][0] == '\t') {
          b.lines.back() += " " + std::string(trim(lines[i]));  // the item goes on
        } else {
          break;
        }
      }
      blocks.push_back(std::move(b));
    } else {
      MarkdownBlock b{.kind = Kind::kParagraph};
      for (; i < lines.size() && !trim(lines[i]).empty(); ++i) {
        std::string ignored_item;
        bool ignored = false;
        if (!b.lines.empty() && (heading_level(lines[i]) > 0 || starts_with(trim(lines[i]), "|") ||
                                 list_item(lines[i], ignored_item, ignored)))
          break;
        b.lines.emplace_back(trim(lines[i]));
      }
      blocks.push_back(std::move(b));
    }
  }
  return blocks;
}

std::string inline_html(std::string_view text, const MarkdownHooks& hooks) {
  std::string out, plain;
  auto flush = [&] {
    out += escape_html(plain);
    plain.clear();
  };
  for (size_t i = 0; i < text.size();) {
    if (text[i] == '`') {
      const size_t close = text.find('`', i + 1);
      if (close != std::string_view::npos) {
        flush();
        out += element("code", text.substr(i + 1, close - i - 1));
        i = close + 1;
        continue;
      }
    } else if (starts_with(text.substr(i), "**")) {
      const size_t close = text.find("**", i + 2);
      if (close != std::string_view::npos && close > i + 2) {
        flush();
        out += "<strong>" + inline_html(text.substr(i + 2, close - i - 2), hooks) + "</strong>";
        i = close + 2;
        continue;
      }
    } else if (text[i] == '[') {
      const size_t close = text.find("](", i + 1);
      const size_t end = close == std::string_view::npos ? close : text.find(')', close + 2);
      if (end != std::string_view::npos &&
          text.substr(i + 1, close - i - 1).find('[') == std::string_view::npos) {
        flush();
        const std::string label = inline_html(text.substr(i + 1, close - i - 1), hooks);
        const std::string target(text.substr(close + 2, end - close - 2));
        out += hooks.link ? hooks.link(label, target) : link_html(label, target);
        i = end + 1;
        continue;
      }
    }
    plain += text[i++];
  }
  flush();
  return out;
}

std::string block_html(const MarkdownBlock& b, const MarkdownHooks& hooks) {
  auto after = [&] { return hooks.after ? hooks.after() : std::string(); };
  std::string out;
  switch (b.kind) {
    case Kind::kHeading: {
      const std::string h = "h" + std::to_string(b.level);
      const std::string id =
          hooks.heading_id ? hooks.heading_id(b.lines.front()) : anchor_id(b.lines.front());
      return "<" + h + " id=\"" + escape_html(id) + "\">" + inline_html(b.lines.front(), hooks) +
             "</" + h + ">\n";
    }
    case Kind::kParagraph: {  // after() only once the text has been read: it names figures
      std::string joined;
      for (const std::string& line : b.lines) joined += (joined.empty() ? "" : " ") + line;
      out = "<p>" + inline_html(joined, hooks) + "</p>\n";
      return out + after();
    }
    case Kind::kList: {
      const std::string tag = b.level == 1 ? "ol" : "ul";
      out = "<" + tag + ">\n";
      for (const std::string& item : b.lines) {
        out += "<li>" + inline_html(item, hooks);
        out += after() + "</li>\n";
      }
      return out + "</" + tag + ">\n";
    }
    case Kind::kTable: {
      out = "<table>\n";
      for (size_t r = 0; r < b.lines.size(); ++r) {
        if (r == 1 && separator_row(b.lines[r])) continue;
        const bool header = r == 0 && b.lines.size() > 1 && separator_row(b.lines[1]);
        out += "<tr>";
        for (const std::string& cell : cells(b.lines[r])) {
          const std::string verdict = header ? "" : verdict_class(cell);
          out += std::string(header ? "<th" : "<td") +
                 (verdict.empty() ? "" : " class=\"" + verdict + "\"") + ">" +
                 inline_html(cell, hooks) + (header ? "</th>" : "</td>");
        }
        out += "</tr>\n";
      }
      out += "</table>\n";
      return out + after();
    }
    case Kind::kCode: {
      std::string code;
      for (const std::string& line : b.lines) code += line + "\n";
      return element("pre", code) + "\n";
    }
    case Kind::kImage:  // a link: a page's policy loads no file, so an <img> would show nothing
      return "<p>" + link_html(escape_html(b.alt), b.target) + "</p>\n";
  }
  return out;
}

std::string anchor_id(std::string_view text) {
  std::string out;
  for (const char c : text) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
    if (out.size() >= 60) break;
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "section" : out;
}

}  // namespace gradflow::page
