// A strict, small JSON (RFC 8259) reader and writer.
//
// It exists to read and write safetensors headers. Those come from untrusted files, so parse()
// accepts exactly RFC 8259 and nothing more (no comments, trailing commas, NaN, leading zeros,
// invalid UTF-8, duplicate keys), never recurses, limits nesting to kMaxDepth and uses memory
// proportional to the input. Anything else is a ParseError whose one-line message names the
// problem and the byte offset (counted from 0), e.g. `json: duplicate key "a" at byte 7`.
//
// Numbers: a literal without fraction or exponent that fits in int64 or uint64 is kept as that
// exact integer (tensor offsets go up to 2^64-1, beyond what a double holds exactly). Every other
// number is a double. As in serde_json, which writes the headers we read, a double is never an
// integer: `24.0` and `2.4e1` give nullopt from as_u64(), because a double may already be rounded.
#pragma once

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "tensor/error.h"

namespace gradflow::json {

class Value;
using Array = std::vector<Value>;
// Keeps insertion order, so a header is written back in the order it was read.
using Object = std::vector<std::pair<std::string, Value>>;

// The deepest nesting of arrays and objects that parse() accepts and dump() writes.
inline constexpr size_t kMaxDepth = 128;

// Any integer type except bool and char (a char is more likely a mistake than a number).
template <class T>
concept Integer = std::integral<T> && !std::same_as<T, bool> && !std::same_as<T, char>;

enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };

// "null", "a bool", "a number", "a string", "an array" or "an object", for messages.
std::string_view kind_name(Kind kind);

// Thrown by parse() for input that is not strict JSON.
class ParseError : public Error {
 public:
  // Message: "json: <problem> at byte <offset>".
  ParseError(std::string_view problem, size_t offset);
  size_t offset() const { return offset_; }

 private:
  size_t offset_;
};

// One JSON value. The constructors are implicit so documents can be written as literals:
//   Value v = Object{{"dtype", "F32"}, {"shape", Array{2, 3}}};
class Value {
 public:
  Value() = default;  // null
  Value(std::nullptr_t) {}
  Value(bool b) : data_(b) {}
  template <Integer T>
  Value(T i) {
    if constexpr (std::is_signed_v<T>) {
      set_integer(static_cast<int64_t>(i));
    } else {
      data_ = static_cast<uint64_t>(i);
    }
  }
  Value(double d) : data_(d) {}
  Value(std::string s) : data_(std::move(s)) {}
  Value(std::string_view s) : data_(std::string(s)) {}
  Value(const char* s) : data_(std::string(s)) {}
  Value(Array a) : data_(std::move(a)) {}
  Value(Object o) : data_(std::move(o)) {}

  Kind kind() const;
  bool is_null() const { return kind() == Kind::kNull; }
  bool is_bool() const { return kind() == Kind::kBool; }
  bool is_number() const { return kind() == Kind::kNumber; }
  bool is_string() const { return kind() == Kind::kString; }
  bool is_array() const { return kind() == Kind::kArray; }
  bool is_object() const { return kind() == Kind::kObject; }
  // True for a number held as an exact integer (see the file comment), false for a double.
  bool is_integer() const;

  // The accessors below throw Error ("json: expected a string, got a number") on the wrong kind,
  // so a malformed header is an exception, not undefined behaviour.
  bool as_bool() const;
  const std::string& as_string() const;
  const Array& as_array() const;
  Array& as_array();
  const Object& as_object() const;
  Object& as_object();

  // nullopt for a negative integer or a double (however whole); throws if not a number.
  std::optional<uint64_t> as_u64() const;
  // nullopt for an integer above INT64_MAX or a double; throws if not a number.
  std::optional<int64_t> as_i64() const;
  // Any number; integers beyond 2^53 are rounded. Throws if not a number.
  double as_double() const;

  // The member named `key`, or nullptr. Throws if this is not an object. Linear in its size.
  const Value* find(std::string_view key) const;

  // Deep equality. Objects compare in order; integers and doubles are never equal to each other.
  friend bool operator==(const Value& a, const Value& b);

 private:
  // Keeps non-negative integers as uint64_t and negative ones as int64_t, so each integer has one
  // representation and operator== can compare the variants directly.
  void set_integer(int64_t i);
  [[noreturn]] void wrong_kind(Kind expected) const;

  std::variant<std::nullptr_t, bool, int64_t, uint64_t, double, std::string, Array, Object> data_;
};

// Parses one JSON document; only whitespace may surround the value. Throws ParseError, also for
// an array of more than `max_array_size` elements. Memory is proportional to the input, but an
// element takes sizeof(Value) bytes (40 with libstdc++) for as little as 2 bytes of text ("0,"):
// a caller that knows how long its arrays can be passes the limit, and `[0,0,0,...]` is refused
// at the first element too many.
Value parse(std::string_view text, size_t max_array_size = SIZE_MAX);

// Compact JSON, with parse(dump(v)) == v. Throws Error for what parse() would reject: NaN or
// infinite doubles, strings that are not valid UTF-8, duplicate keys, nesting beyond kMaxDepth.
std::string dump(const Value& value);

// Length (1 to 4) of the well-formed UTF-8 sequence at the start of `s`, or 0 if `s` is empty or
// starts with an invalid, overlong, surrogate, above-U+10FFFF or truncated sequence.
size_t utf8_sequence_length(std::string_view s);

}  // namespace gradflow::json
