// A page checked for what its reader needs before any browser opens it (page/html.h):
//   - well-formed: every element closed in order (void elements excepted), attributes quoted,
//     no raw '<' in text or in a value, every '&' a character reference, no block element
//     inside a <p> (a browser would close the <p> there and build another tree), no id twice;
//   - offline: no src, href or action naming another host ("http://...", "//host"), nothing in
//     the CSS that loads (url() of a host, @import), no fetch or XMLHttpRequest in a script;
//   - what it holds: its ids and the count of each element, for the tests' own checks.
// The scripts' content is raw text, as in HTML: the JSON data must hold no '<' at all.
#pragma once

#include <cctype>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace gradflow::testing {

struct HtmlCheck {
  std::vector<std::string> problems;    // empty for a page that passes
  std::map<std::string, int> elements;  // how many of each ("script", "svg", ...)
  std::set<std::string> ids;
  std::string summary() const {
    std::string out;
    for (const std::string& p : problems) out += p + "\n";
    return out;
  }
};

inline HtmlCheck check_html(const std::string& html) {
  HtmlCheck c;
  auto problem = [&](size_t at, const std::string& what) {
    if (c.problems.size() < 20)
      c.problems.push_back(what + " at byte " + std::to_string(at) + ": \"" + html.substr(at, 60) +
                           "\"");
  };
  // The SVG namespace names no resource: it is the one address a page may spell out.
  auto outside = [](std::string text) {
    const std::string ns = "http://www.w3.org/2000/svg";
    for (size_t at = text.find(ns); at != std::string::npos; at = text.find(ns))
      text.erase(at, ns.size());
    return text.find("://") != std::string::npos || text.rfind("//", 0) == 0;
  };
  auto entity_at = [&](size_t i) {
    size_t j = i + 1;
    if (j < html.size() && html[j] == '#') {
      ++j;
      const bool hex = j < html.size() && (html[j] == 'x' || html[j] == 'X');
      if (hex) ++j;
      const size_t start = j;
      while (j < html.size() && (hex ? std::isxdigit(static_cast<unsigned char>(html[j]))
                                     : std::isdigit(static_cast<unsigned char>(html[j]))))
        ++j;
      return j > start && j < html.size() && html[j] == ';';
    }
    const size_t start = j;
    while (j < html.size() && std::isalnum(static_cast<unsigned char>(html[j]))) ++j;
    return j > start && j < html.size() && html[j] == ';';
  };
  const std::set<std::string> voids = {"meta", "link", "br", "hr", "img", "input", "source", "wbr"};
  const std::set<std::string> blocks = {"div", "figure", "table", "ul",      "ol", "pre",    "h1",
                                        "h2",  "h3",     "h4",    "details", "p",  "section"};
  const std::set<std::string> url_attributes = {"src", "href", "action", "xlink:href",
                                                "formaction"};
  std::vector<std::string> open;
  size_t i = 0;
  if (html.rfind("<!DOCTYPE html>", 0) != 0)
    problem(0, "no <!DOCTYPE html> first");
  else
    i = 15;
  while (i < html.size()) {
    const char ch = html[i];
    if (html.compare(i, 4, "<!--") == 0) {
      const size_t end = html.find("-->", i);
      if (end == std::string::npos) return problem(i, "comment not closed"), c;
      i = end + 3;
    } else if (html.compare(i, 2, "</") == 0) {
      const size_t end = html.find('>', i);
      if (end == std::string::npos) return problem(i, "end tag not closed"), c;
      const std::string name = html.substr(i + 2, end - i - 2);
      if (open.empty() || open.back() != name) {
        problem(i,
                "</" + name + "> closes " + (open.empty() ? "nothing" : "<" + open.back() + ">"));
        return c;
      }
      open.pop_back();
      i = end + 1;
    } else if (ch == '<' && i + 1 < html.size() &&
               std::isalpha(static_cast<unsigned char>(html[i + 1]))) {
      size_t j = i + 1;
      while (j < html.size() && (std::isalnum(static_cast<unsigned char>(html[j])) ||
                                 html[j] == '-' || html[j] == ':'))
        ++j;
      const std::string name = html.substr(i + 1, j - i - 1);
      bool self_closed = false;
      std::map<std::string, std::string> attributes;
      while (true) {
        while (j < html.size() && std::isspace(static_cast<unsigned char>(html[j]))) ++j;
        if (j >= html.size()) return problem(i, "tag not closed"), c;
        if (html.compare(j, 2, "/>") == 0) {
          self_closed = true;
          j += 2;
          break;
        }
        if (html[j] == '>') {
          ++j;
          break;
        }
        const size_t a = j;
        while (j < html.size() && !std::isspace(static_cast<unsigned char>(html[j])) &&
               html[j] != '=' && html[j] != '>' && html[j] != '/')
          ++j;
        const std::string attribute = html.substr(a, j - a);
        if (attribute.empty()) return problem(j, "bad attribute"), c;
        std::string value;
        if (j < html.size() && html[j] == '=') {
          if (j + 1 >= html.size() || html[j + 1] != '"') return problem(j, "unquoted value"), c;
          const size_t end = html.find('"', j + 2);
          if (end == std::string::npos) return problem(j, "value not closed"), c;
          value = html.substr(j + 2, end - j - 2);
          for (size_t k = j + 2; k < end; ++k) {
            if (html[k] == '<') problem(k, "raw < in a value");
            if (html[k] == '&' && !entity_at(k)) problem(k, "& that is no reference");
          }
          j = end + 1;
        }
        if (attributes.count(attribute)) problem(a, "attribute " + attribute + " twice");
        attributes[attribute] = value;
        if (url_attributes.count(attribute) && outside(value)) problem(a, "an outside address");
        if (attribute == "id" && !c.ids.insert(value).second) problem(a, "id " + value + " twice");
      }
      if (blocks.count(name))
        for (const std::string& o : open)
          if (o == "p") problem(i, "<" + name + "> inside a <p>");
      ++c.elements[name];
      if (name == "script" || name == "style") {
        const size_t end = html.find("</" + name + ">", j);
        if (end == std::string::npos) return problem(i, name + " not closed"), c;
        const std::string content = html.substr(j, end - j);
        const bool data = attributes.count("type") && attributes["type"] == "application/json";
        if (data && content.find('<') != std::string::npos) problem(j, "< in the page's data");
        if (name == "script" && !data && attributes.count("src"))
          problem(i, "a script from a file");
        if (outside(content) || content.find("@import") != std::string::npos ||
            content.find("fetch(") != std::string::npos ||
            content.find("XMLHttpRequest") != std::string::npos)
          problem(j, "the " + name + " asks for something outside the page");
        i = end + name.size() + 3;
      } else {
        if (!self_closed && !voids.count(name)) open.push_back(name);
        i = j;
      }
    } else if (ch == '<') {
      problem(i, "raw < in text");
      ++i;
    } else if (ch == '&') {
      if (!entity_at(i)) problem(i, "& that is no reference");
      ++i;
    } else {
      ++i;
    }
  }
  if (!open.empty()) problem(html.size(), "<" + open.back() + "> never closed");
  return c;
}

}  // namespace gradflow::testing
