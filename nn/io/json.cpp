// json::Value: the kind queries, the checked accessors, equality, and the UTF-8 check shared by
// the parser (json_parse.cpp) and the writer (json_dump.cpp).
#include "nn/io/json.h"

#include <string>

namespace gradflow::json {

std::string_view kind_name(Kind kind) {
  switch (kind) {
    case Kind::kNull:
      return "null";
    case Kind::kBool:
      return "a bool";
    case Kind::kNumber:
      return "a number";
    case Kind::kString:
      return "a string";
    case Kind::kArray:
      return "an array";
    case Kind::kObject:
      return "an object";
  }
  return "an unknown kind";
}

ParseError::ParseError(std::string_view problem, size_t offset)
    : Error("json: " + std::string(problem) + " at byte " + std::to_string(offset)),
      offset_(offset) {}

void Value::set_integer(int64_t i) {
  if (i >= 0) {
    data_ = static_cast<uint64_t>(i);
  } else {
    data_ = i;
  }
}

void Value::wrong_kind(Kind expected) const {
  fail("json: expected ", kind_name(expected), ", got ", kind_name(kind()));
}

Kind Value::kind() const {
  // Indices follow the order of the alternatives in data_.
  switch (data_.index()) {
    case 0:
      return Kind::kNull;
    case 1:
      return Kind::kBool;
    case 2:
    case 3:
    case 4:
      return Kind::kNumber;
    case 5:
      return Kind::kString;
    case 6:
      return Kind::kArray;
    default:
      return Kind::kObject;
  }
}

bool Value::is_integer() const {
  return std::holds_alternative<int64_t>(data_) || std::holds_alternative<uint64_t>(data_);
}

bool Value::as_bool() const {
  if (const bool* b = std::get_if<bool>(&data_)) return *b;
  wrong_kind(Kind::kBool);
}

const std::string& Value::as_string() const {
  if (const std::string* s = std::get_if<std::string>(&data_)) return *s;
  wrong_kind(Kind::kString);
}

const Array& Value::as_array() const {
  if (const Array* a = std::get_if<Array>(&data_)) return *a;
  wrong_kind(Kind::kArray);
}

Array& Value::as_array() {
  if (Array* a = std::get_if<Array>(&data_)) return *a;
  wrong_kind(Kind::kArray);
}

const Object& Value::as_object() const {
  if (const Object* o = std::get_if<Object>(&data_)) return *o;
  wrong_kind(Kind::kObject);
}

Object& Value::as_object() {
  if (Object* o = std::get_if<Object>(&data_)) return *o;
  wrong_kind(Kind::kObject);
}

std::optional<uint64_t> Value::as_u64() const {
  if (const uint64_t* u = std::get_if<uint64_t>(&data_)) return *u;
  if (!is_number()) wrong_kind(Kind::kNumber);
  return std::nullopt;  // negative (held as int64_t) or a double
}

std::optional<int64_t> Value::as_i64() const {
  if (const int64_t* i = std::get_if<int64_t>(&data_)) return *i;
  if (const uint64_t* u = std::get_if<uint64_t>(&data_)) {
    if (*u <= static_cast<uint64_t>(INT64_MAX)) return static_cast<int64_t>(*u);
    return std::nullopt;
  }
  if (!is_number()) wrong_kind(Kind::kNumber);
  return std::nullopt;  // a double
}

double Value::as_double() const {
  if (const double* d = std::get_if<double>(&data_)) return *d;
  if (const int64_t* i = std::get_if<int64_t>(&data_)) return static_cast<double>(*i);
  if (const uint64_t* u = std::get_if<uint64_t>(&data_)) return static_cast<double>(*u);
  wrong_kind(Kind::kNumber);
}

const Value* Value::find(std::string_view key) const {
  for (const auto& [name, value] : as_object()) {
    if (name == key) return &value;
  }
  return nullptr;
}

bool operator==(const Value& a, const Value& b) { return a.data_ == b.data_; }

size_t utf8_sequence_length(std::string_view s) {
  if (s.empty()) return 0;
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char lead = byte(0);
  if (lead < 0x80) return 1;
  // The well-formed sequences of Unicode 15, table 3-7. The second byte's range is narrowed for
  // E0 and F0 (shorter encodings exist: overlong), ED (U+D800..U+DFFF are UTF-16 surrogates, not
  // characters) and F4 (beyond U+10FFFF).
  size_t length = 0;
  unsigned char low = 0x80;
  unsigned char high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead == 0xE0) {
    length = 3;
    low = 0xA0;
  } else if (lead == 0xED) {
    length = 3;
    high = 0x9F;
  } else if (lead >= 0xE1 && lead <= 0xEF) {
    length = 3;
  } else if (lead == 0xF0) {
    length = 4;
    low = 0x90;
  } else if (lead >= 0xF1 && lead <= 0xF3) {
    length = 4;
  } else if (lead == 0xF4) {
    length = 4;
    high = 0x8F;
  } else {
    return 0;  // a continuation byte, an overlong C0/C1 lead, or F5..FF
  }
  if (s.size() < length) return 0;
  if (byte(1) < low || byte(1) > high) return 0;
  for (size_t i = 2; i < length; ++i) {
    if ((byte(i) & 0xC0) != 0x80) return 0;
  }
  return length;
}

}  // namespace gradflow::json
