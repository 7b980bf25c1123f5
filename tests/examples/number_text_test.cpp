#include "examples/toolkit/cli/number_text.h"

#include <gtest/gtest.h>

#include <charconv>
#include <cmath>
#include <limits>
#include <random>
#include <string>

namespace gradflow::cli {
namespace {

double parse(const std::string& text) {
  double v = 0;
  std::from_chars(text.data(), text.data() + text.size(), v);
  return v;
}

std::string shortest_exact(double v) {
  char buf[64];
  return std::string(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
}

// The significant digits of the shortest text that reads back as exactly v.
int exact_digits(double v) {
  char buf[64];
  const std::string s(buf,
                      std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific).ptr);
  int digits = 0;
  for (char c : s.substr(0, s.find('e'))) digits += c >= '0' && c <= '9';
  return digits;
}

TEST(NumberText, PrintsTypedValuesAsTyped) {
  EXPECT_EQ(number_text(0.003), "0.003");
  EXPECT_EQ(number_text(3e-4), "0.0003");
  EXPECT_EQ(number_text(1e-5), "1e-05");
  EXPECT_EQ(number_text(2), "2");
  EXPECT_EQ(number_text(0.9), "0.9");
  EXPECT_EQ(number_text(-1.5), "-1.5");
  EXPECT_EQ(number_text(1234567), "1234567");
  EXPECT_EQ(number_text(250000), "250000");
  EXPECT_EQ(number_text(1.5e-7), "1.5e-07");
  EXPECT_EQ(number_text(1e300), "1e+300");
  EXPECT_EQ(number_text(0.123456789012345), "0.123456789012345");  // 15 digits
  EXPECT_EQ(number_text(0), "0");
}

// The cosine schedule's floor is --lr / 10: in binary, 0.003 / 10 is not
// the double nearest 0.0003, and its exact text shows it.
TEST(NumberText, RoundsWhatBinaryArithmeticAddedToFifteenDigits) {
  EXPECT_EQ(shortest_exact(0.003 / 10), "0.00030000000000000003");
  EXPECT_EQ(number_text(0.003 / 10), "0.0003");
  EXPECT_EQ(number_text(0.1 + 0.2), "0.3");
  EXPECT_EQ(number_text(1.0 / 3), "0.333333333333333");
}

TEST(NumberText, NamesTheValuesThatAreNotNumbers) {
  EXPECT_EQ(number_text(std::numeric_limits<double>::quiet_NaN()), "nan");
  EXPECT_EQ(number_text(-std::numeric_limits<double>::quiet_NaN()), "nan");
  EXPECT_EQ(number_text(HUGE_VAL), "inf");
  EXPECT_EQ(number_text(-HUGE_VAL), "-inf");
}

// Over doubles of every magnitude: the text reads back as exactly v when v
// has a text of at most 15 digits, and otherwise within 15 digits' rounding.
TEST(NumberText, IsExactUpToFifteenDigitsAndCloseBeyond) {
  std::mt19937_64 gen(7);
  std::uniform_real_distribution<double> mantissa(1, 10);
  std::uniform_int_distribution<int> exponent(-300, 300), digits(1, 17);
  int exact = 0, rounded = 0;
  for (int i = 0; i < 20000; ++i) {
    double v = mantissa(gen) * std::pow(10.0, exponent(gen));
    if (i % 2 == 0) {  // half of them decimals of 1 to 17 digits, as a user would type them
      char buf[64];
      char* end =
          std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific, digits(gen) - 1)
              .ptr;
      v = parse(std::string(buf, end));
    }
    const std::string text = number_text(v);
    const double back = parse(text);
    if (exact_digits(v) <= 15) {
      EXPECT_EQ(back, v) << text << " for " << shortest_exact(v);
      ++exact;
    } else {
      EXPECT_LE(std::abs(back - v), 6e-15 * std::abs(v)) << text << " for " << shortest_exact(v);
      EXPECT_LE(exact_digits(back), 15) << text;
      ++rounded;
    }
  }
  EXPECT_GT(exact, 5000);  // both kinds were met
  EXPECT_GT(rounded, 5000);
}

}  // namespace
}  // namespace gradflow::cli
