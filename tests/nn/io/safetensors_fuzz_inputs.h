// Inputs for the safetensors fuzz test: small valid files, tables of wrong values, a writer of
// random headers that are mostly valid, and random edits. Each draws from the Generator it is
// given, so a case is replayed by seeding a Generator the same way.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nn/io/safetensors.h"
#include "tensor/creation.h"
#include "tensor/random.h"

namespace gradflow::testing {

using nn::encode_safetensors;

inline std::string u64_le(uint64_t v) {
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
  return out;
}

inline uint64_t header_length(std::string_view bytes) {
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);  // the format and this machine are little-endian
  return n;
}

inline size_t below(Generator& rng, size_t n) { return static_cast<size_t>(rng.below(n)); }
inline bool chance(Generator& rng, double p) { return rng.uniform() < p; }
template <class T, size_t N>
const T& pick(Generator& rng, const T (&items)[N]) {
  return items[below(rng, N)];
}

// Small valid files: every dtype, 0-d, empty and multi-tensor, with and without metadata.
inline std::vector<std::string> base_files() {
  return {
      encode_safetensors(
          {{"w", from_vector({1.5, -2, 3.25, 4, 5, 6}, {2, 3})}, {"b", from_vector({0.5, -1, 2})}}),
      encode_safetensors({{"scalar", scalar_tensor(2.5, DType::Float64)},
                          {"ids", from_indices({-1, 0, 7, 1ll << 40}, {4})},
                          {"empty", zeros({0, 3})}},
                         {{"format", "pt"}, {"step", "12"}}),
      encode_safetensors({{"i", from_indices({3}, {})}}),
      encode_safetensors({{"e", zeros({2, 0, 2}, DType::Float64)}, {"o", ones({1, 1})}},
                         {{"note", "\xc3\xa9"}}),
      encode_safetensors({}),
  };
}

// JSON texts for the generated headers, grouped by hand (clang-format would give each its line).
// clang-format off
inline constexpr std::string_view kDtypes[] = {
    "\"F32\"", "\"F64\"", "\"I64\"", "\"\\u0046\\u0033\\u0032\"",                // valid
    "\"BF16\"", "\"F16\"", "\"\"", "\"f32\"", "\"F32 \"", "\"U8\"", "\"BOOL\"",  // unknown
    "5", "null", "[\"F32\"]"};                                                   // not strings
inline constexpr uint64_t kDtypeSizes[] = {4, 8, 8, 4};  // of the valid dtypes above
inline constexpr std::string_view kOddSizes[] = {
    "-1", "-0", "-9223372036854775808",                                    // negative
    "4611686018427387904", "9223372036854775808", "18446744073709551615",  // huge
    "1.0", "2e0", "1e400", "0.0", "\"2\"", "null", "[]"};                  // not integers
inline constexpr std::string_view kHugeShapes[] = {
    "[4611686018427387904,4]", "[65536,65536,65536,65536]", "[3037000500,3037000500]",
    "[4294967296,4294967296]", "[2305843009213693952]", "[9223372036854775807]",
    "[0,4611686018427387904,4611686018427387904]", "[9223372036854775807,2,0]"};
inline constexpr std::string_view kNames[] = {
    "w", "layer.0.weight", "a b", "t0", "__metadata__", "",          // plain
    "\xc3\xa9", "\\u00e9", "\\u0000", "\\ud83d\\ude00", "x\\\"y",    // escapes, UTF-8
    "\xff", "\\ud800", "\xed\xa0\x80"};                              // invalid
inline constexpr std::string_view kBadMetadata[] = {
    "{\"k\":1}", "{\"k\":{}}", "{\"k\":{\"a\":\"b\"}}", "{\"k\":[\"v\"]}", "{\"k\":null}",
    "{\"k\":true}", "{\"k\":\"a\",\"k\":\"b\"}", "{\"k\":\"\\ud800\"}",    // bad values
    "[]", "[\"k\",\"v\"]", "null", "\"k=v\"", "0"};                        // not objects
inline constexpr std::string_view kMetadataValues[] = {
    "pt", "", "1200", "\xc3\xa9", "\\n", "\\u0000"};
// Texts to insert into a header: tokens, special numbers and broken UTF-8.
inline constexpr std::string_view kTokens[] = {
    ",", "[", "]", "{", "}", ":", "\"", " ", "null", "{\"k\":1}",               // syntax
    "0", "-1", "0.5", "1e999", "4611686018427387904", "18446744073709551615",  // numbers
    "\"BF16\"", "\"F16\"", "\"__metadata__\":", "\"shape\":[0]", "\"data_offsets\":[0,0]",
    "\"dtype\":\"F32\"", "\xff", "\xc3", "\xed\xa0\x80", "\\u0000", "\\ud800"};  // strings
// Headers that are not JSON, or not UTF-8.
inline constexpr std::string_view kNotJson[] = {
    "{", "}", "{}}", "{\"a\":1,}", "{'a':1}", "{\"a\":NaN}", "{\"a\":01}", "{\"a\" 1}",
    "{\"a\":[1,2}", "{\"a\":1}/**/", "{\"\\uZZZZ\":1}",                          // not JSON
    "\xef\xbb\xbf{}", "{\"a\":\"\x01\"}", "{\"\xc0\xaf\":1}", "{\"a\":1}\xff"};  // bad bytes
// clang-format on

// The text of a shape; `numel` is set if the shape is valid (else the data size is a guess).
inline std::string random_shape(Generator& rng, std::optional<uint64_t>& numel) {
  const size_t kind = below(rng, 100);
  if (kind < 88) {  // small sizes, one of them now and then odd
    const size_t rank = below(rng, 5);
    const size_t odd = kind < 78 ? rank : below(rng, rank + 1);
    std::string text = "[";
    uint64_t n = 1;
    for (size_t i = 0; i < rank; ++i) {
      const uint64_t size = chance(rng, 0.1) ? 0 : 1 + below(rng, 3);
      text +=
          (i ? "," : "") + (i == odd ? std::string(pick(rng, kOddSizes)) : std::to_string(size));
      n *= size;
    }
    if (odd == rank) numel = n;
    return text + "]";
  }
  if (kind < 91) {  // a size of 0 beside a huge one
    numel = 0;
    return pick(
        rng, {"[0,4611686018427387904]", "[4611686018427387904,0]", "[9223372036854775807,0,1]"});
  }
  if (kind < 95) return std::string(pick(rng, kHugeShapes));
  if (kind < 98) {  // many dimensions of sizes 0 and 1
    const size_t rank = chance(rng, 0.5) ? 60 + below(rng, 10) : 100 + below(rng, 1000);
    std::string text = "[";
    bool zero = false;
    for (size_t i = 0; i < rank; ++i) {
      const bool z = chance(rng, 0.5);
      zero = zero || z;
      text += (i ? "," : "") + std::string(z ? "0" : "1");
    }
    numel = zero ? 0 : 1;
    return text + "]";
  }
  return pick(rng, {"3", "\"(2, 3)\"", "null", "{}", "[[2],[3]]", "true"});
}

// The data_offsets of a tensor laid out at [begin, end): mostly right, now and then wrong.
inline std::string random_offsets(Generator& rng, uint64_t begin, uint64_t end) {
  const auto pair = [](uint64_t b, const std::string& e) {
    return "[" + std::to_string(b) + "," + e + "]";
  };
  if (chance(rng, 0.88)) return pair(begin, std::to_string(end));
  switch (below(rng, 9)) {
    case 0:
      return pair(end, std::to_string(begin));  // out of order: begin > end
    case 1:
      return pair(begin, "18446744073709551615");
    case 2:
      return pair(begin + 1, std::to_string(end + 1));  // a gap, an overlap or out of range
    case 3:
      return pair(0, std::to_string(end - begin));  // overlaps the first tensor
    case 4:
      return pair(begin, std::to_string(end + 4 * (1 + below(rng, 4))));
    case 5:
      return pair(18446744073709551612u, "18446744073709551615");
    case 6:
      return "[" + std::to_string(begin) + "]";
    case 7:
      return pair(begin, std::to_string(end) + "," + std::to_string(end));
    default:
      return pick(rng, {"[-1,4]", "[0,4.0]", "\"0,4\"", "null", "{}", "[\"0\",\"4\"]",
                        "[9223372036854775808,9223372036854775812]"});
  }
}

inline std::string random_metadata(Generator& rng) {
  if (chance(rng, 0.25)) return std::string(pick(rng, kBadMetadata));
  std::string text = "{";
  for (size_t i = 0, n = below(rng, 4); i < n; ++i) {
    text += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":\"" +
            std::string(pick(rng, kMetadataValues)) + "\"";
  }
  return text + "}";
}

// A file whose header is written field by field with random choices, mostly valid ones so that
// most files get past the parser into the checks: a few tensors laid out in a random order, maybe
// __metadata__, then the data buffer, now and then a few bytes short or long.
inline std::string generated_file(Generator& rng) {
  struct Entry {
    std::string name, dtype, shape;
    uint64_t bytes = 0, begin = 0;
  };
  std::vector<Entry> entries(below(rng, 5));
  for (size_t i = 0; i < entries.size(); ++i) {
    Entry& e = entries[i];
    e.name = chance(rng, 0.9)            ? "t" + std::to_string(i)
             : i > 0 && chance(rng, 0.3) ? entries[i - 1].name
                                         : std::string(pick(rng, kNames));
    const size_t dtype = chance(rng, 0.9) ? below(rng, 4) : below(rng, std::size(kDtypes));
    e.dtype = kDtypes[dtype];
    std::optional<uint64_t> numel;
    e.shape = random_shape(rng, numel);
    e.bytes = numel && dtype < 4 ? *numel * kDtypeSizes[dtype] : below(rng, 17);
  }
  std::vector<size_t> order(entries.size());  // the layout of the data, shuffled
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[below(rng, i)]);
  uint64_t data_bytes = 0;
  for (size_t i : order) {
    entries[i].begin = data_bytes;
    data_bytes += entries[i].bytes;
  }

  std::vector<std::string> members;
  for (const Entry& e : entries) {
    std::vector<std::string> fields = {
        "\"dtype\":" + e.dtype, "\"shape\":" + e.shape,
        "\"data_offsets\":" + random_offsets(rng, e.begin, e.begin + e.bytes)};
    if (chance(rng, 0.3)) std::swap(fields[0], fields[below(rng, 3)]);
    if (chance(rng, 0.03)) fields.erase(fields.begin() + static_cast<int64_t>(below(rng, 3)));
    if (chance(rng, 0.03)) fields.push_back(chance(rng, 0.5) ? "\"extra\":1" : "\"dtype\":\"F32\"");
    std::string text = "{";
    for (const std::string& f : fields) text += (text.size() > 1 ? "," : "") + f;
    members.push_back("\"" + e.name + "\":" + text + "}");
  }
  if (chance(rng, 0.35)) {
    const auto at = static_cast<int64_t>(below(rng, members.size() + 1));
    members.insert(members.begin() + at, "\"__metadata__\":" + random_metadata(rng));
  }
  std::string header = "{";
  for (const std::string& m : members) {
    header += (header.size() > 1 ? "," : "") + std::string(chance(rng, 0.9) ? "" : "\n ") + m;
  }
  header += "}" + std::string(below(rng, 8), ' ');
  if (chance(rng, 0.02)) header = pick(rng, {"[]", "null", "\"x\"", "1", " {}", "{} {}", "{}x"});

  std::string data(data_bytes, '\0');
  for (char& c : data) c = static_cast<char>(rng.next_u64());
  if (chance(rng, 0.1)) {  // a few bytes short or long
    const size_t change = 1 + below(rng, 8);
    if (chance(rng, 0.5)) {
      data.resize(data.size() > change ? data.size() - change : 0);
    } else {
      data.append(change, '\x5a');
    }
  }
  return u64_le(header.size()) + header + data;
}

// One random edit of a header's text.
inline void mutate(Generator& rng, std::string& text) {
  const size_t at = below(rng, text.size() + 1);
  const bool inside = at < text.size();
  const size_t digit = text.find_first_of("0123456789", at);  // for the edits of a number
  const size_t digits = text.find_first_not_of("0123456789", digit) - digit;
  switch (below(rng, 8)) {
    case 0:
      if (inside) text[at] = static_cast<char>(rng.next_u64());
      break;
    case 1:
      if (inside) text[at] = static_cast<char>(text[at] ^ (1 << below(rng, 8)));
      break;
    case 2:
      text.insert(at, pick(rng, kTokens));
      break;
    case 3:
      text.erase(at, 1 + below(rng, 8));
      break;
    case 4:
      text.insert(at, text.substr(below(rng, text.size() + 1), below(rng, 24)));  // a slice again
      break;
    case 5:
      if (inside) std::swap(text[at], text[below(rng, text.size())]);
      break;
    default:  // a number replaced, which keeps the JSON valid and reaches the checks behind it
      if (digit == std::string::npos) break;
      text.replace(
          digit, digits,
          chance(rng, 0.5) ? std::string(pick(rng, kOddSizes)) : std::to_string(below(rng, 64)));
  }
}

}  // namespace gradflow::testing
