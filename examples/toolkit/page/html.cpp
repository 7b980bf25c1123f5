#include "examples/toolkit/page/html.h"

#include <cmath>
#include <cstdio>

#include "nn/io/atomic_file.h"
#include "tensor/error.h"

namespace gradflow::page {
namespace {

// The length of the valid UTF-8 sequence that starts at text[i] (1 to 4), or 0 when the bytes
// there are not one: a stray continuation byte, an overlong form, a surrogate, past U+10FFFF,
// or a sequence cut short.
size_t utf8_length(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char b = byte(i);
  if (b < 0x80) return 1;
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // the second byte's range, narrower after some leads
  if (b >= 0xc2 && b <= 0xdf) {
    n = 2;
  } else if (b >= 0xe0 && b <= 0xef) {
    n = 3;
    if (b == 0xe0) lo = 0xa0;  // overlong below
    if (b == 0xed) hi = 0x9f;  // surrogates above
  } else if (b >= 0xf0 && b <= 0xf4) {
    n = 4;
    if (b == 0xf0) lo = 0x90;
    if (b == 0xf4) hi = 0x8f;  // past U+10FFFF above
  } else {
    return 0;
  }
  if (i + n > text.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xbf) return 0;
  return n;
}

// Calls put(piece) for each character of `text`: a valid UTF-8 sequence as itself, an invalid
// byte as U+FFFD's three bytes; `is_char` tells single bytes apart for the caller.
template <class Put>
void each_char(std::string_view text, Put put) {
  for (size_t i = 0; i < text.size();) {
    const size_t n = utf8_length(text, i);
    if (n == 0) {
      put(std::string_view("\xef\xbf\xbd"));
      ++i;
    } else {
      put(text.substr(i, n));
      i += n;
    }
  }
}

// U+0080 to U+009F, the C1 controls: in UTF-8, 0xc2 followed by 0x80 to 0x9f.
bool c1_control(std::string_view c) {
  return c.size() == 2 && static_cast<unsigned char>(c[0]) == 0xc2 &&
         static_cast<unsigned char>(c[1]) <= 0x9f;
}

// An id as the page uses it: letters, digits, '-' and '_', anything else as '-'.
std::string id_text(std::string_view text) {
  std::string out;
  for (const char c : text) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_';
    out += ok ? c : '-';
  }
  return out;
}

// Every `before`X`after` in `text` whose `before` starts a word (follows a space or a
// parenthesis, or opens the text) becomes `before``prefix`-X`after`.
std::string prefix_names(const std::string& text, std::string_view before, std::string_view after,
                         const std::string& prefix) {
  std::string out;
  size_t from = 0;
  for (size_t at = text.find(before); at != std::string::npos; at = text.find(before, at + 1)) {
    const char previous = at == 0 ? ' ' : text[at - 1];
    if (previous != ' ' && previous != '\n' && previous != '(' && previous != '"') continue;
    const size_t name = at + before.size(), end = text.find(after, name);
    if (end == std::string::npos) break;
    out.append(text, from, name - from);
    out += prefix + "-";
    from = name;
  }
  out.append(text, from, std::string::npos);
  return out;
}

}  // namespace

std::string escape_html(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  each_char(text, [&](std::string_view c) {
    if (c.size() > 1) {
      if (!c1_control(c)) out += c;
      return;
    }
    switch (c[0]) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        if (static_cast<unsigned char>(c[0]) >= 0x20 && c[0] != 0x7f) {
          out += c;
        } else if (c[0] == '\t' || c[0] == '\n' || c[0] == '\r') {
          out += c;
        }
    }
  });
  return out;
}

std::string element(std::string_view name, std::string_view text, std::string_view attributes) {
  std::string out = "<";
  out.append(name);
  if (!attributes.empty()) out.append(" ").append(attributes);
  out += ">" + escape_html(text) + "</";
  out.append(name);
  return out + ">";
}

std::string json_string(std::string_view text) {
  std::string out = "\"";
  each_char(text, [&](std::string_view c) {
    const auto b = static_cast<unsigned char>(c[0]);
    if (c.size() > 1) {
      out += c;
    } else if (c[0] == '"' || c[0] == '\\') {
      out += '\\';
      out += c[0];
    } else if (b < 0x20 || c[0] == '<' || c[0] == '>' || c[0] == '&' || b == 0x7f) {
      char code[8];
      std::snprintf(code, sizeof code, "\\u%04x", static_cast<unsigned>(b));
      out += code;
    } else {
      out += c;
    }
  });
  return out + "\"";
}

std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", v);
  return text;
}

std::string inline_svg(std::string_view svg, std::string_view prefix) {
  const size_t start = svg.find("<svg");
  if (start == std::string_view::npos) fail("inline_svg: the text holds no <svg element");
  const std::string p = id_text(prefix);
  std::string out(svg.substr(start));
  out = prefix_names(out, "id=\"", "\"", p);
  out = prefix_names(out, "url(#", ")", p);
  out = prefix_names(out, "href=\"#", "\"", p);
  return out;
}

std::string render(const Page& page) {
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n"
      // What the page may load: nothing from anywhere, only what it holds. A figure that named
      // an outside address would show nothing rather than ask the network.
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\"/>\n";
  if (page.refresh_seconds > 0)
    out +=
        "<meta http-equiv=\"refresh\" content=\"" + std::to_string(page.refresh_seconds) + "\"/>\n";
  // Appended in place: a page of megabytes is copied once, not once per piece.
  out.reserve(out.size() + kPageStyle.size() + page.body.size() + kPageScript.size() +
              4 * page.title.size() + 200);
  out += element("title", page.title) + "\n<style>\n";
  out.append(kPageStyle);
  out += "</style>\n</head>\n<body>\n" + element("h1", page.title) + "\n";
  out += page.body;
  out += "\n<script>\n";
  out.append(kPageScript);
  out += "</script>\n</body>\n</html>\n";
  return out;
}

void write_page(const std::string& path, const Page& page) {
  write_file_atomic(path, render(page));
}

}  // namespace gradflow::page
