// json::parse on any bytes: a Value or a ParseError, never more. What it accepts must survive
// dump and parse unchanged, and a parse with a limit on arrays must agree with the one without.
#include <algorithm>
#include <optional>

#include "nn/io/json.h"
#include "tests/fuzz/fuzz_input.h"

using namespace gradflow;

namespace {

// parse(text, max_array_size), or nullopt for a ParseError.
std::optional<json::Value> parsed(std::string_view text, size_t max_array_size) {
  try {
    return json::parse(text, max_array_size);
  } catch (const json::ParseError& e) {
    fuzz::check_one_line(e.what());
    return std::nullopt;
  }
}

// The longest array in `v`, at any depth (parse limits the nesting to json::kMaxDepth).
size_t longest_array(const json::Value& v) {
  size_t longest = 0;
  if (v.is_array()) {
    longest = v.as_array().size();
    for (const json::Value& e : v.as_array()) longest = std::max(longest, longest_array(e));
  } else if (v.is_object()) {
    for (const auto& [key, e] : v.as_object()) longest = std::max(longest, longest_array(e));
  }
  return longest;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text = fuzz::text_of(data, size);
  const std::optional<json::Value> value = parsed(text, SIZE_MAX);
  // The limit safetensors parses its headers with, and one small enough to be hit often.
  for (size_t limit : {size_t{64}, size_t{2}}) {
    const std::optional<json::Value> limited = parsed(text, limit);
    if (limited && (!value || !(*limited == *value)))
      fuzz::broken("parse with a limit on arrays accepts what parse refuses, or differs");
    if (!limited && value && longest_array(*value) <= limit)
      fuzz::broken("parse with a limit on arrays refuses arrays within the limit");
  }
  if (!value) return 0;
  const std::string dumped = json::dump(*value);  // an Error here escapes: dump must take it
  const std::optional<json::Value> again = parsed(dumped, SIZE_MAX);
  if (!again || !(*again == *value)) fuzz::broken("parse(dump(v)) != v for: " + dumped);
  if (json::dump(*again) != dumped) fuzz::broken("dump is not stable: " + dumped);
  return 0;
}
