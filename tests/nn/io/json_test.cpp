#include "nn/io/json.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace gradflow::json {
namespace {

static_assert(std::is_base_of_v<Error, ParseError>);

// The ParseError message for `text`, or "" if it parsed.
std::string parse_error(std::string_view text) {
  try {
    parse(text);
  } catch (const ParseError& e) {
    return e.what();
  }
  return "";
}

constexpr std::string_view kHeader =
    R"({"__metadata__":{"format":"pt"},"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}})";

TEST(JsonParse, SafetensorsHeader) {
  const Value header = parse(kHeader);
  const Object& members = header.as_object();
  ASSERT_EQ(members.size(), 2u);
  EXPECT_EQ(members[0].first, "__metadata__");  // insertion order kept
  EXPECT_EQ(members[1].first, "w");
  const Value* w = header.find("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->find("dtype")->as_string(), "F32");
  const Array& offsets = w->find("data_offsets")->as_array();
  ASSERT_EQ(offsets.size(), 2u);
  EXPECT_EQ(offsets[0].as_u64(), 0u);
  EXPECT_EQ(offsets[1].as_u64(), 24u);
  EXPECT_EQ(header.find("missing"), nullptr);
  EXPECT_EQ(dump(header), kHeader);
}

TEST(JsonParse, ScalarsAndWhitespace) {
  EXPECT_TRUE(parse(" \t\r\nnull\n ").is_null());
  EXPECT_EQ(parse("true").as_bool(), true);
  EXPECT_EQ(parse("false").as_bool(), false);
  EXPECT_EQ(parse(R"("")").as_string(), "");
  EXPECT_EQ(parse("[ ]"), Value(Array{}));
  EXPECT_EQ(parse("{ }"), Value(Object{}));
  EXPECT_EQ(parse(R"([1, "a", [true, null], {"k": -2}])"),
            Value(Array{1, "a", Array{true, nullptr}, Object{{"k", -2}}}));
}

TEST(JsonParse, StringEscapesAndUnicode) {
  EXPECT_EQ(parse(R"("\"\\\/\b\f\n\r\t")").as_string(), "\"\\/\b\f\n\r\t");
  EXPECT_EQ(parse(R"("\u0041\u00e9\u20AC")").as_string(), "A\xc3\xa9\xe2\x82\xac");
  EXPECT_EQ(parse(R"("\ud83d\ude00")").as_string(), "\xf0\x9f\x98\x80");  // U+1F600
  EXPECT_EQ(parse(R"("\udbff\udfff")").as_string(), "\xf4\x8f\xbf\xbf");  // U+10FFFF
  EXPECT_EQ(parse(R"("\u0000")").as_string(), std::string(1, '\0'));
  EXPECT_EQ(parse("\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"").as_string(),
            "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
  EXPECT_EQ(parse("\"\x7f\"").as_string(), "\x7f");  // DEL is not a control character in JSON
}

TEST(JsonNumbers, IntegersAreExact) {
  EXPECT_EQ(parse("18446744073709551615").as_u64(), UINT64_MAX);
  EXPECT_EQ(dump(parse("18446744073709551615")), "18446744073709551615");
  EXPECT_EQ(parse("9223372036854775808").as_u64(), uint64_t{1} << 63);
  EXPECT_EQ(parse("9223372036854775808").as_i64(), std::nullopt);
  EXPECT_EQ(parse("9223372036854775807").as_i64(), INT64_MAX);
  EXPECT_EQ(parse("-9223372036854775808").as_i64(), INT64_MIN);
  EXPECT_EQ(dump(parse("-9223372036854775808")), "-9223372036854775808");
  EXPECT_EQ(parse("-1").as_i64(), -1);
  EXPECT_EQ(parse("-1").as_u64(), std::nullopt);
  EXPECT_EQ(parse("-0").as_u64(), 0u);
  EXPECT_EQ(parse("0").as_u64(), 0u);
  EXPECT_TRUE(parse("12").is_integer());
}

TEST(JsonNumbers, BeyondIntegersAreDoubles) {
  const Value two_to_64 = parse("18446744073709551616");
  EXPECT_TRUE(two_to_64.is_number());
  EXPECT_FALSE(two_to_64.is_integer());
  EXPECT_EQ(two_to_64.as_u64(), std::nullopt);
  EXPECT_EQ(two_to_64.as_double(), 18446744073709551616.0);
  EXPECT_EQ(parse("-9223372036854775809").as_i64(), std::nullopt);
  // A double is never an integer, however whole (see json.h).
  EXPECT_EQ(parse("24.0").as_u64(), std::nullopt);
  EXPECT_EQ(parse("2.4e1").as_u64(), std::nullopt);
  EXPECT_EQ(parse("1.5").as_i64(), std::nullopt);
  EXPECT_EQ(parse("2.4e1").as_double(), 24.0);
  EXPECT_EQ(parse("-1.25E-2").as_double(), -0.0125);
  EXPECT_EQ(parse("1e+2").as_double(), 100.0);
  EXPECT_EQ(parse("5e-324").as_double(), std::numeric_limits<double>::denorm_min());
}

TEST(JsonNumbers, DoublesRoundTripBitForBit) {
  const std::vector<double> fixed = {0.0,
                                     -0.0,
                                     1.0,
                                     -1.0,
                                     0.1,
                                     1e20,
                                     1e-7,
                                     123456789012.0,
                                     std::numeric_limits<double>::max(),
                                     std::numeric_limits<double>::min(),
                                     std::numeric_limits<double>::denorm_min(),
                                     -std::numeric_limits<double>::lowest()};
  std::mt19937_64 rng(7);
  std::vector<double> values = fixed;
  while (values.size() < 20000) {
    const double d = std::bit_cast<double>(rng());
    if (std::isfinite(d)) values.push_back(d);
  }
  for (double d : values) {
    const std::string text = dump(Value(d));
    const Value back = parse(text);
    ASSERT_FALSE(back.is_integer()) << text;
    ASSERT_EQ(std::bit_cast<uint64_t>(back.as_double()), std::bit_cast<uint64_t>(d)) << text;
  }
  EXPECT_EQ(dump(Value(1.0)), "1.0");
  EXPECT_EQ(dump(Value(-0.0)), "-0.0");
  EXPECT_EQ(dump(Value(0.1)), "0.1");
}

TEST(JsonDump, RefusesWhatParseWouldReject) {
  EXPECT_THROW(dump(Value(std::nan(""))), Error);
  EXPECT_THROW(dump(Value(std::numeric_limits<double>::infinity())), Error);
  EXPECT_THROW(dump(Value(Array{-std::numeric_limits<double>::infinity()})), Error);
  EXPECT_THROW(dump(Value("\xff")), Error);
  EXPECT_THROW(dump(Value("\xed\xa0\x80")), Error);  // surrogate U+D800
  EXPECT_THROW(dump(Value(Object{{"a", 1}, {"b", 2}, {"a", 3}})), Error);
  Value deep = Array{};
  for (size_t i = 1; i < kMaxDepth; ++i) deep = Array{std::move(deep)};
  EXPECT_EQ(parse(dump(deep)), deep);  // kMaxDepth levels: fine both ways
  deep = Array{std::move(deep)};
  EXPECT_THROW(dump(deep), Error);
}

TEST(JsonDump, EscapesStrings) {
  EXPECT_EQ(dump(Value(std::string("a\"b\\c\n\t\x01\x1f\x7f/\0", 12))),
            R"("a\"b\\c\n\t\u0001\u001f)"
            "\x7f/\\u0000\"");
  EXPECT_EQ(dump(Value("\xe2\x82\xac")), "\"\xe2\x82\xac\"");  // UTF-8 is written as is
  EXPECT_EQ(dump(Value(Object{{"k\n", Array{1, -2, 2.5, true, nullptr, "s"}}})),
            R"({"k\n":[1,-2,2.5,true,null,"s"]})");
}

TEST(JsonValue, WrongKindThrowsError) {
  const Value number = 3;
  EXPECT_THROW(number.as_string(), Error);
  EXPECT_THROW(number.as_array(), Error);
  EXPECT_THROW(number.find("a"), Error);
  EXPECT_THROW(Value("x").as_u64(), Error);
  EXPECT_THROW(Value().as_double(), Error);
  EXPECT_THROW(Value(1.5).as_bool(), Error);
  try {
    Value("x").as_object();
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "json: expected an object, got a string");
  }
}

TEST(JsonValue, IntegerKindsCompareByValue) {
  EXPECT_EQ(Value(5), Value(uint64_t{5}));
  EXPECT_EQ(Value(int64_t{-5}), parse("-5"));
  EXPECT_NE(Value(5), Value(5.0));  // an integer and a double differ
  EXPECT_NE(Value(Object{{"a", 1}, {"b", 2}}), Value(Object{{"b", 2}, {"a", 1}}));
}

TEST(JsonParse, DuplicateKeyMessageNamesKeyAndOffset) {
  try {
    parse(R"({"a":1,"b":{"a":2},"a":3})");
    FAIL() << "no throw";
  } catch (const ParseError& e) {
    EXPECT_STREQ(e.what(), R"(json: duplicate key "a" at byte 19)");
    EXPECT_EQ(e.offset(), 19u);
  }
  // Escaped and unescaped spellings of one key are the same key.
  EXPECT_NE(parse_error(R"({"ab":1,"a\u0062":2})").find("duplicate key \"ab\""), std::string::npos);
}

struct Rejection {
  std::string text;
  std::string problem;  // must appear in the message
};

TEST(JsonParse, RejectsNonStrictInput) {
  const std::vector<Rejection> cases = {
      {"", "unexpected end of input"},
      {"   ", "unexpected end of input"},
      {"[", "unexpected end of input"},
      {"[1", "unexpected end of input, expected ',' or ']'"},
      {R"({"a")", "':' after the key"},
      {R"({"a":})", "expected a value, got '}'"},
      {"{1:2}", "expected a string key"},
      {"[1,]", "trailing comma"},
      {R"({"a":1,})", "trailing comma"},
      {"[,1]", "expected a value, got ','"},
      {"[1 2]", "expected ',' or ']'"},
      {R"({"a":1 "b":2})", "expected ',' or '}'"},
      {"[1}", "expected ',' or ']', got '}'"},
      {"// comment\n1", "comments are not allowed"},
      {"[1/* c */]", "comments are not allowed"},
      {"01", "leading zero"},
      {"-01", "leading zero"},
      {"00", "leading zero"},
      {"NaN", "NaN and Infinity"},
      {"Infinity", "NaN and Infinity"},
      {"-Infinity", "NaN and Infinity"},
      {"[nan]", "invalid literal"},
      {"+1", "expected a value, got '+'"},
      {".5", "expected a value, got '.'"},
      {"-", "expected a digit after '-'"},
      {"1.", "expected a digit after '.'"},
      {"1.e5", "expected a digit after '.'"},
      {"1e", "expected a digit in the exponent"},
      {"1e+", "expected a digit in the exponent"},
      {"1e400", "out of the range"},
      {"-1e400", "out of the range"},
      {"1e-400", "out of the range"},
      {"1 2", "unexpected '2' after the value"},
      {"{}x", "unexpected 'x' after the value"},
      {std::string("1\0", 2), "unexpected byte 0x00 after the value"},
      {"tru", "invalid literal"},
      {"True", "expected a value, got 'T'"},
      {"truex", "unexpected 'x' after the value"},
      {"\xef\xbb\xbf{}", "expected a value, got byte 0xef"},  // a byte order mark
      {"'a'", "expected a value, got '''"},
      {R"("abc)", "unterminated string"},
      {"\"a\x01\"", "control character byte 0x01 in string"},
      {"\"a\tb\"", "control character byte 0x09 in string"},
      {"\"a\nb\"", "control character byte 0x0a in string"},
      {R"("\x")", "invalid escape \\x"},
      {R"("\U0041")", "invalid escape \\U"},
      // Found by tests/fuzz/json_fuzz.cpp: the byte after the backslash went into the message.
      {"\"\\\n\"", "invalid escape: a backslash followed by byte 0x0a"},
      {R"("\)", "unterminated escape"},
      {R"("\u12")", "invalid \\u escape"},
      {R"("\u12g4")", "invalid \\u escape"},
      {R"("\ud800")", "lone surrogate \\ud800"},
      {R"("\ud800x")", "lone surrogate \\ud800"},
      {R"("\ud800\u0041")", "lone surrogate \\ud800"},
      {R"("\ud800\ud800")", "lone surrogate \\ud800"},
      {R"("\udc00")", "lone surrogate \\udc00"},
      {R"("\ud800\u12")", "invalid \\u escape"},
      {"\"\x80\"", "invalid UTF-8"},                    // lone continuation byte
      {"\"\xc0\x80\"", "invalid UTF-8"},                // overlong NUL
      {"\"\xc1\xbf\"", "invalid UTF-8"},                // overlong
      {"\"\xe0\x80\x80\"", "invalid UTF-8"},            // overlong 3-byte
      {"\"\xe0\x9f\xbf\"", "invalid UTF-8"},            // overlong 3-byte
      {"\"\xf0\x80\x80\x80\"", "invalid UTF-8"},        // overlong 4-byte
      {"\"\xf0\x8f\xbf\xbf\"", "invalid UTF-8"},        // overlong 4-byte
      {"\"\xed\xa0\x80\"", "invalid UTF-8"},            // U+D800 encoded in UTF-8
      {"\"\xed\xbf\xbf\"", "invalid UTF-8"},            // U+DFFF encoded in UTF-8
      {"\"\xf4\x90\x80\x80\"", "invalid UTF-8"},        // U+110000
      {"\"\xf5\x80\x80\x80\"", "invalid UTF-8"},        // lead byte above F4
      {"\"\xff\"", "invalid UTF-8"},                    // never valid
      {"\"\xe2\x82\"", "invalid UTF-8"},                // truncated before the quote
      {"\"\xe2\x82", "invalid UTF-8"},                  // truncated at the end of input
      {"\"\xf0\x9f\x98\"", "invalid UTF-8"},            // truncated 4-byte
      {"\"\xc3\x28\"", "invalid UTF-8"},                // bad continuation
      {"\xc3\xa9", "expected a value, got byte 0xc3"},  // UTF-8 outside a string
      {R"({"a":1,"a":2})", "duplicate key \"a\""},
      {R"([{"x":{},"x":[]}])", "duplicate key \"x\""},
      {"{\"\x7f\":1,\"\x7f\":2}", "duplicate key \"\\u007f\""},  // DEL, valid in JSON
      {std::string(kMaxDepth + 1, '['), "nesting deeper than 128 levels"},
      {std::string(100000, '['), "nesting deeper than 128 levels"},
      {std::string(100000, '{'), "expected a string key"},
  };
  for (const Rejection& c : cases) {
    SCOPED_TRACE("input: " + c.text);
    const std::string message = parse_error(c.text);
    ASSERT_FALSE(message.empty()) << "parsed but should not";
    EXPECT_NE(message.find(c.problem), std::string::npos) << message;
    EXPECT_EQ(message.rfind("json: ", 0), 0u) << message;
    EXPECT_NE(message.find(" at byte "), std::string::npos) << message;
    // One printable line, whatever the input holds.
    EXPECT_TRUE(std::none_of(message.begin(), message.end(), [](char b) {
      return static_cast<unsigned char>(b) < 0x20 || b == 0x7f;
    })) << message;
  }
}

TEST(JsonParse, ErrorOffsets) {
  const auto offset = [](std::string_view text) {
    try {
      parse(text);
    } catch (const ParseError& e) {
      return e.offset();
    }
    return std::string_view::npos;
  };
  EXPECT_EQ(offset("[1,]"), 3u);
  EXPECT_EQ(offset("  01"), 2u);
  EXPECT_EQ(offset(R"(["ok", "a)"), 7u);  // an unterminated string points at its quote
  EXPECT_EQ(offset("\"ab\xff\""), 3u);
  EXPECT_EQ(offset(std::string(kMaxDepth + 1, '[')), kMaxDepth);
}

TEST(JsonParse, NestingUpToTheLimit) {
  std::string deep_arrays = std::string(kMaxDepth, '[') + std::string(kMaxDepth, ']');
  EXPECT_EQ(dump(parse(deep_arrays)), deep_arrays);
  std::string deep_objects;
  for (size_t i = 1; i < kMaxDepth; ++i) deep_objects += R"({"k":)";
  deep_objects += "{}" + std::string(kMaxDepth - 1, '}');
  EXPECT_EQ(dump(parse(deep_objects)), deep_objects);
  EXPECT_NE(parse_error("[" + deep_objects + "]").find("nesting"), std::string::npos);
}

TEST(JsonParse, ArraySizeLimit) {
  EXPECT_EQ(parse("[1,2,[3,4,5]]", 3), Value(Array{1, 2, Array{3, 4, 5}}));    // each array alone
  EXPECT_EQ(parse(R"({"a":1,"b":2,"c":3,"d":4})", 3).as_object().size(), 4u);  // not objects
  EXPECT_EQ(parse("[]", 0), Value(Array{}));
  const auto error_at = [](std::string_view text, size_t max) {
    try {
      parse(text, max);
    } catch (const ParseError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error_at("[1, 2, 3, 4]", 3), "json: array of more than 3 elements at byte 10");
  EXPECT_EQ(error_at("[[1]]", 0), "json: array of more than 0 elements at byte 1");
  // Refused at the first element too many, not at the end of the array.
  std::string zeros = "[0";
  for (int i = 1; i < 1'000'000; ++i) zeros += ",0";
  EXPECT_EQ(error_at(zeros + "]", 64), "json: array of more than 64 elements at byte 129");
}

// Random documents: dump then parse must give back an equal value.
Value random_value(std::mt19937_64& rng, int depth) {
  const auto pick = [&](uint64_t n) { return rng() % n; };
  const std::vector<std::string> words = {
      "", "a", "dtype", "\xc3\xa9\xe2\x82\xac", std::string("\0\x1f\"\\", 4), "\xf0\x9f\x98\x80"};
  switch (depth >= 4 ? pick(5) : pick(7)) {
    case 0:
      return Value();
    case 1:
      return Value(pick(2) == 1);
    case 2:
      return Value(static_cast<int64_t>(rng()));
    case 3:
      return Value(rng() % 2 ? std::bit_cast<double>(rng() >> 2) : static_cast<double>(pick(100)));
    case 4:
      return Value(words[pick(words.size())] + std::to_string(pick(3)));
    case 5: {
      Array array;
      for (uint64_t i = pick(4); i > 0; --i) array.push_back(random_value(rng, depth + 1));
      return Value(std::move(array));
    }
    default: {
      Object object;
      for (uint64_t i = pick(4); i > 0; --i) {
        object.emplace_back("k" + std::to_string(object.size()), random_value(rng, depth + 1));
      }
      return Value(std::move(object));
    }
  }
}

TEST(JsonRoundTrip, RandomDocuments) {
  std::mt19937_64 rng(1);
  for (int i = 0; i < 2000; ++i) {
    const Value value = random_value(rng, 0);
    const std::string text = dump(value);
    ASSERT_EQ(parse(text), value) << text;
    ASSERT_EQ(dump(parse(text)), text);
  }
}

// Mutations of a valid header: every result either parses (and then round-trips) or throws
// ParseError; nothing crashes, hangs or throws anything else. Run under ASan/UBSan.
TEST(JsonFuzz, MutatedHeadersParseOrThrowParseError) {
  using namespace std::string_literals;  // so the embedded NUL is kept
  const std::string interesting = "{}[]\",:\\u0123456789-+.eE \t\nadtfnlrsx/"s +
                                  "\x00\x01\x7f\x80\xbf\xc0\xc3\xe0\xed\xef\xf0\xf4\xf5\xff"s;
  std::mt19937_64 rng(20240611);
  int parsed = 0;
  int rejected = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string text(kHeader);
    for (uint64_t edits = 1 + rng() % 4; edits > 0; --edits) {
      const size_t at = text.empty() ? 0 : rng() % text.size();
      switch (rng() % 5) {
        case 0:
          if (!text.empty()) text[at] = static_cast<char>(rng());
          break;
        case 1:
          if (!text.empty()) text[at] = interesting[rng() % interesting.size()];
          break;
        case 2:
          text.insert(at, 1, interesting[rng() % interesting.size()]);
          break;
        case 3:
          if (!text.empty()) text.erase(at, 1 + rng() % 3);
          break;
        default:
          text.insert(at, text.substr(at, rng() % 8));  // repeat a slice
      }
    }
    try {
      const Value value = parse(text);
      ASSERT_EQ(parse(dump(value)), value) << text;
      ++parsed;
    } catch (const ParseError& e) {
      ASSERT_EQ(std::string(e.what()).find('\n'), std::string::npos);
      ++rejected;
    }
  }
  // Both outcomes must actually occur, or the fuzz is not exercising anything.
  std::printf("fuzz: %d parsed, %d rejected\n", parsed, rejected);
  EXPECT_GT(parsed, 100);
  EXPECT_GT(rejected, 1000);
}

}  // namespace
}  // namespace gradflow::json
