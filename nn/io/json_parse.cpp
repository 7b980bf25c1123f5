// json::parse: a strict RFC 8259 reader for untrusted input.
//
// Arrays and objects are parsed with an explicit stack of open containers instead of recursion,
// so hostile nesting is cut off at kMaxDepth with a ParseError, never by a stack overflow. Every
// error names the offset of the offending byte (or of the token it belongs to).
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <numeric>
#include <string>
#include <system_error>

#include "nn/io/json.h"

namespace gradflow::json {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// 'x' for printable ASCII, "byte 0x0a" otherwise, so messages stay on one printable line.
std::string describe(char c) {
  if (c >= 0x20 && c < 0x7F) return std::string("'") + c + "'";
  char hex[16];
  std::snprintf(hex, sizeof hex, "byte 0x%02x", static_cast<unsigned char>(c));
  return hex;
}

std::string hex4(uint32_t code) {
  char hex[8];
  std::snprintf(hex, sizeof hex, "%04x", static_cast<unsigned>(code));
  return hex;
}

// A key for an error message: at most 64 bytes (cut on a character boundary), quoted and escaped.
std::string quote_key(std::string_view key) {
  size_t cut = key.size();
  if (cut > 64) {
    cut = 64;
    while (cut > 0 && (static_cast<unsigned char>(key[cut]) & 0xC0) == 0x80) --cut;
  }
  // dump escapes the control characters but DEL, which JSON allows as it is.
  std::string quoted;
  for (char c : dump(Value(key.substr(0, cut)))) {
    if (c == 0x7F) {
      quoted += "\\u007f";
    } else {
      quoted += c;
    }
  }
  return cut < key.size() ? quoted + "..." : quoted;
}

// One array or object that has been opened and not yet closed.
struct Frame {
  bool is_object = false;
  Array array;
  Object object;
  std::vector<size_t> key_offsets;  // where each key of `object` starts, for the duplicate error
};

class Parser {
 public:
  Parser(std::string_view text, size_t max_array_size)
      : text_(text), max_array_size_(max_array_size) {}
  Value parse_document();

 private:
  [[noreturn]] void error(std::string_view problem, size_t at) const {
    throw ParseError(problem, at);
  }
  bool at_end() const { return pos_ >= text_.size(); }
  bool next_is(char c) const { return !at_end() && text_[pos_] == c; }
  void skip_space() {
    while (!at_end() && is_space(text_[pos_])) ++pos_;
  }
  [[noreturn]] void unexpected(std::string_view expected) const;

  Value parse_scalar();
  Value parse_number();
  Value parse_literal();
  std::string parse_string();
  void parse_escape(std::string& out);
  uint32_t parse_hex4(size_t escape_start);
  void read_key(Frame& frame);
  Value close(std::vector<Frame>& stack);
  void check_duplicate_keys(const Frame& frame) const;

  std::string_view text_;
  size_t max_array_size_;
  size_t pos_ = 0;
};

void Parser::unexpected(std::string_view expected) const {
  if (at_end()) error("unexpected end of input, expected " + std::string(expected), pos_);
  const std::string_view rest = text_.substr(pos_);
  if (rest.starts_with("/")) error("comments are not allowed", pos_);
  if (rest.starts_with("NaN") || rest.starts_with("Infinity")) {
    error("NaN and Infinity are not JSON numbers", pos_);
  }
  error("expected " + std::string(expected) + ", got " + describe(text_[pos_]), pos_);
}

Value Parser::parse_document() {
  std::vector<Frame> stack;
  skip_space();
  while (true) {
    // A value starts at pos_. An opened container loops back here for its first element.
    if (!stack.empty() && !stack.back().is_object && stack.back().array.size() == max_array_size_) {
      error("array of more than " + std::to_string(max_array_size_) + " elements", pos_);
    }
    Value value;
    if (next_is('[') || next_is('{')) {
      const bool is_object = text_[pos_] == '{';
      if (stack.size() == kMaxDepth) {
        error("nesting deeper than " + std::to_string(kMaxDepth) + " levels", pos_);
      }
      stack.emplace_back().is_object = is_object;
      ++pos_;
      skip_space();
      if (!next_is(is_object ? '}' : ']')) {
        if (is_object) read_key(stack.back());
        continue;
      }
      ++pos_;
      value = close(stack);
    } else {
      value = parse_scalar();
    }
    // A value is complete: give it to the open container, then read a ',' or the closing bracket.
    // A closing bracket completes that container's value in turn, hence the loop.
    while (true) {
      if (stack.empty()) {
        skip_space();
        if (!at_end()) error("unexpected " + describe(text_[pos_]) + " after the value", pos_);
        return value;
      }
      Frame& top = stack.back();
      if (top.is_object) {
        top.object.back().second = std::move(value);
      } else {
        top.array.push_back(std::move(value));
      }
      skip_space();
      const char closing = top.is_object ? '}' : ']';
      if (next_is(',')) {
        ++pos_;
        skip_space();
        if (next_is(']') || next_is('}')) error("trailing comma", pos_);
        if (top.is_object) read_key(top);
        break;
      }
      if (!next_is(closing)) unexpected(std::string("',' or '") + closing + "'");
      ++pos_;
      value = close(stack);
    }
  }
}

// Reads `"key" :` and the space after it, and appends the member with a null value that the
// caller then overwrites with the parsed value.
void Parser::read_key(Frame& frame) {
  if (!next_is('"')) unexpected("a string key");
  frame.key_offsets.push_back(pos_);
  std::string key = parse_string();
  skip_space();
  if (!next_is(':')) unexpected("':' after the key");
  ++pos_;
  skip_space();
  // Default-constructing the member in place, rather than moving in a Value(), also avoids a
  // false -Wmaybe-uninitialized from GCC 12 at -O2 on the moved std::variant.
  frame.object.emplace_back().first = std::move(key);
}

Value Parser::close(std::vector<Frame>& stack) {
  Frame frame = std::move(stack.back());
  stack.pop_back();
  if (!frame.is_object) return Value(std::move(frame.array));
  check_duplicate_keys(frame);
  return Value(std::move(frame.object));
}

// Duplicate keys are rejected because readers disagree on which one wins, which an attacker could
// use to show two programs two different headers. Sorting the keys keeps this O(n log n), where
// comparing each key with all earlier ones would let a header of many keys take quadratic time.
void Parser::check_duplicate_keys(const Frame& frame) const {
  const Object& object = frame.object;
  std::vector<size_t> order(object.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return object[a].first < object[b].first; });
  size_t first_duplicate = object.size();
  for (size_t i = 1; i < order.size(); ++i) {
    // stable_sort keeps equal keys in input order, so order[i] is the later occurrence.
    if (object[order[i]].first == object[order[i - 1]].first) {
      first_duplicate = std::min(first_duplicate, order[i]);
    }
  }
  if (first_duplicate == object.size()) return;
  error("duplicate key " + quote_key(object[first_duplicate].first),
        frame.key_offsets[first_duplicate]);
}

Value Parser::parse_scalar() {
  if (next_is('"')) return Value(parse_string());
  if (next_is('-') || (!at_end() && is_digit(text_[pos_]))) return parse_number();
  if (next_is('t') || next_is('f') || next_is('n')) return parse_literal();
  unexpected("a value");
}

Value Parser::parse_literal() {
  const std::string_view rest = text_.substr(pos_);
  if (rest.starts_with("true")) {
    pos_ += 4;
    return Value(true);
  }
  if (rest.starts_with("false")) {
    pos_ += 5;
    return Value(false);
  }
  if (rest.starts_with("null")) {
    pos_ += 4;
    return Value();
  }
  error("invalid literal (expected true, false or null)", pos_);
}

Value Parser::parse_number() {
  const size_t start = pos_;
  const bool negative = next_is('-');
  if (negative) ++pos_;
  if (at_end() || !is_digit(text_[pos_])) {
    if (text_.substr(pos_).starts_with("Infinity")) {
      error("NaN and Infinity are not JSON numbers", start);
    }
    error("expected a digit after '-'", pos_);
  }
  if (next_is('0')) {
    ++pos_;
    if (!at_end() && is_digit(text_[pos_])) error("leading zero in number", start);
  } else {
    while (!at_end() && is_digit(text_[pos_])) ++pos_;
  }
  const size_t integer_end = pos_;
  bool integer = true;
  if (next_is('.')) {
    integer = false;
    ++pos_;
    if (at_end() || !is_digit(text_[pos_])) error("expected a digit after '.'", pos_);
    while (!at_end() && is_digit(text_[pos_])) ++pos_;
  }
  if (next_is('e') || next_is('E')) {
    integer = false;
    ++pos_;
    if (next_is('+') || next_is('-')) ++pos_;
    if (at_end() || !is_digit(text_[pos_])) error("expected a digit in the exponent", pos_);
    while (!at_end() && is_digit(text_[pos_])) ++pos_;
  }
  const char* first = text_.data() + start;
  const char* last = text_.data() + pos_;
  if (integer) {
    uint64_t magnitude = 0;
    const char* digits = first + (negative ? 1 : 0);
    const auto [end, ec] = std::from_chars(digits, text_.data() + integer_end, magnitude);
    if (ec == std::errc() && end == last) {
      if (!negative) return Value(magnitude);
      // -2^63 fits in int64_t too; C++20 defines the wrap of 0 - magnitude to its negation.
      if (magnitude <= uint64_t{1} << 63) {
        return Value(static_cast<int64_t>(uint64_t{0} - magnitude));
      }
    }
    // Too large for an exact integer: it becomes the nearest double below.
  }
  double value = 0;
  const auto [end, ec] = std::from_chars(first, last, value, std::chars_format::general);
  // from_chars reports both overflow and underflow as out of range. RFC 8259 (section 9) lets a
  // parser limit the range, and a safetensors header has no use for 1e400 or 1e-400.
  if (ec == std::errc::result_out_of_range) error("number out of the range of a double", start);
  if (ec != std::errc() || end != last) error("invalid number", start);
  return Value(value);
}

std::string Parser::parse_string() {
  const size_t start = pos_;
  ++pos_;  // the opening quote
  std::string out;
  while (true) {
    if (at_end()) error("unterminated string", start);
    const unsigned char c = static_cast<unsigned char>(text_[pos_]);
    if (c == '"') {
      ++pos_;
      return out;
    }
    if (c == '\\') {
      parse_escape(out);
    } else if (c < 0x20) {
      error("control character " + describe(static_cast<char>(c)) + " in string (must be escaped)",
            pos_);
    } else if (c < 0x80) {
      out += static_cast<char>(c);
      ++pos_;
    } else {
      const size_t length = utf8_sequence_length(text_.substr(pos_));
      if (length == 0) error("invalid UTF-8 in string", pos_);
      out.append(text_.substr(pos_, length));
      pos_ += length;
    }
  }
}

// Reads the four hex digits after "\u" at pos_.
uint32_t Parser::parse_hex4(size_t escape_start) {
  uint32_t code = 0;
  for (int i = 0; i < 4; ++i, ++pos_) {
    if (at_end()) error("invalid \\u escape (needs 4 hex digits)", escape_start);
    const char c = text_[pos_];
    uint32_t digit = 0;
    if (is_digit(c)) {
      digit = static_cast<uint32_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      digit = static_cast<uint32_t>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      digit = static_cast<uint32_t>(c - 'A' + 10);
    } else {
      error("invalid \\u escape (needs 4 hex digits)", escape_start);
    }
    code = code * 16 + digit;
  }
  return code;
}

void append_utf8(std::string& out, uint32_t code) {
  if (code < 0x80) {
    out += static_cast<char>(code);
  } else if (code < 0x800) {
    out += static_cast<char>(0xC0 | (code >> 6));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else if (code < 0x10000) {
    out += static_cast<char>(0xE0 | (code >> 12));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code >> 18));
    out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  }
}

// Decodes the escape at pos_ (a backslash) into `out`. A character above U+FFFF is written as a
// UTF-16 surrogate pair; an unpaired surrogate is not a character, so it has no UTF-8 form.
void Parser::parse_escape(std::string& out) {
  const size_t start = pos_;
  ++pos_;
  if (at_end()) error("unterminated escape", start);
  const char kind = text_[pos_++];
  switch (kind) {
    case '"':
    case '\\':
    case '/':
      out += kind;
      return;
    case 'b':
      out += '\b';
      return;
    case 'f':
      out += '\f';
      return;
    case 'n':
      out += '\n';
      return;
    case 'r':
      out += '\r';
      return;
    case 't':
      out += '\t';
      return;
    case 'u':
      break;
    default:
      // The byte itself only if printable: a message stays on one line.
      if (kind > 0x20 && kind < 0x7F) {
        error("invalid escape \\" + std::string(1, kind) + " in string", start);
      }
      error("invalid escape: a backslash followed by " + describe(kind) + " in string", start);
  }
  uint32_t code = parse_hex4(start);
  if (code >= 0xDC00 && code <= 0xDFFF) {
    error("lone surrogate \\u" + hex4(code) + " (a low surrogate without a high one)", start);
  }
  if (code >= 0xD800 && code <= 0xDBFF) {
    const size_t low_start = pos_;
    if (!text_.substr(pos_).starts_with("\\u")) {
      error("lone surrogate \\u" + hex4(code) + " (not followed by a low surrogate)", start);
    }
    pos_ += 2;
    const uint32_t low = parse_hex4(low_start);
    if (low < 0xDC00 || low > 0xDFFF) {
      error("lone surrogate \\u" + hex4(code) + " (not followed by a low surrogate)", start);
    }
    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
  }
  append_utf8(out, code);
}

}  // namespace

Value parse(std::string_view text, size_t max_array_size) {
  return Parser(text, max_array_size).parse_document();
}

}  // namespace gradflow::json
