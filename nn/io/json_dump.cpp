// json::dump: compact JSON that json::parse reads back to an equal Value.
//
// Whatever parse() would reject, dump() refuses to write (NaN, infinities, invalid UTF-8, nesting
// beyond kMaxDepth), so a file we write is always a file we can read.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "nn/io/json.h"

namespace gradflow::json {
namespace {

void write_string(std::string& out, std::string_view s) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const size_t length = utf8_sequence_length(s.substr(i));
      if (length == 0) fail("json: cannot dump a string that is not valid UTF-8 (at byte ", i, ")");
      out.append(s.substr(i, length));
      i += length;
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          char escape[8];
          std::snprintf(escape, sizeof escape, "\\u%04x", static_cast<unsigned>(c));
          out += escape;
        } else {
          out += static_cast<char>(c);
        }
    }
    ++i;
  }
  out += '"';
}

// std::to_chars gives the shortest text that reads back to the same double, and unlike printf
// it ignores the C locale, which could otherwise turn the decimal point into a comma.
void write_double(std::string& out, double d) {
  if (!std::isfinite(d)) fail("json: cannot dump ", d, ": JSON has no NaN or infinity");
  char text[32];
  const auto [end, ec] = std::to_chars(text, text + sizeof text, d);
  if (ec != std::errc()) fail("json: cannot format the double ", d);
  const std::string_view written(text, static_cast<size_t>(end - text));
  out += written;
  // "1" would read back as the integer 1; "1.0" stays a double.
  if (written.find_first_of(".e") == std::string_view::npos) out += ".0";
}

template <class Integer>
void write_integer(std::string& out, Integer i) {
  char text[24];
  const auto [end, ec] = std::to_chars(text, text + sizeof text, i);
  out.append(text, end);
}

// parse() rejects duplicate keys, so dump() must not write them.
void check_unique_keys(const Object& object) {
  std::vector<std::string_view> keys;
  keys.reserve(object.size());
  for (const auto& member : object) keys.push_back(member.first);
  std::sort(keys.begin(), keys.end());
  const auto duplicate = std::adjacent_find(keys.begin(), keys.end());
  if (duplicate != keys.end()) {
    fail("json: cannot dump an object with the duplicate key ", dump(Value(*duplicate)));
  }
}

// Recursion is safe here: depth is checked against kMaxDepth before each level.
void write_value(std::string& out, const Value& value, size_t depth) {
  switch (value.kind()) {
    case Kind::kNull:
      out += "null";
      return;
    case Kind::kBool:
      out += value.as_bool() ? "true" : "false";
      return;
    case Kind::kNumber:
      if (const auto u = value.as_u64()) {
        write_integer(out, *u);
      } else if (const auto i = value.as_i64()) {
        write_integer(out, *i);
      } else {
        write_double(out, value.as_double());
      }
      return;
    case Kind::kString:
      write_string(out, value.as_string());
      return;
    case Kind::kArray:
    case Kind::kObject:
      break;
  }
  if (depth == kMaxDepth) {
    fail("json: cannot dump a value nested deeper than ", kMaxDepth, " levels");
  }
  if (value.is_array()) {
    out += '[';
    const Array& array = value.as_array();
    for (size_t i = 0; i < array.size(); ++i) {
      if (i > 0) out += ',';
      write_value(out, array[i], depth + 1);
    }
    out += ']';
    return;
  }
  const Object& object = value.as_object();
  check_unique_keys(object);
  out += '{';
  for (size_t i = 0; i < object.size(); ++i) {
    if (i > 0) out += ',';
    write_string(out, object[i].first);
    out += ':';
    write_value(out, object[i].second, depth + 1);
  }
  out += '}';
}

}  // namespace

std::string dump(const Value& value) {
  std::string out;
  write_value(out, value, 0);
  return out;
}

}  // namespace gradflow::json
