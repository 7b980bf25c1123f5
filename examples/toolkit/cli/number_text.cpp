#include "examples/toolkit/cli/number_text.h"

#include <cfloat>
#include <charconv>
#include <cmath>

namespace gradflow::cli {

std::string number_text(double v) {
  if (std::isnan(v)) return "nan";  // to_chars may write "-nan"
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[512];  // fixed notation of up to 1e15 with 4 decimals fits in far less
  // v rounded to DBL_DIG significant digits, as a double: v itself when its
  // shortest exact text has that many digits or fewer.
  const char* end =
      std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific, DBL_DIG - 1).ptr;
  double r = 0;
  std::from_chars(buf, end, r);
  // Then its shortest exact text, in plain decimals where %g would use them
  // too ("0.0003", "250000") and as an exponent beyond ("1e-05", "1e+300").
  const double size = std::abs(r);
  const bool plain = size == 0 || (size >= 1e-4 && size < 1e15);
  end = std::to_chars(buf, buf + sizeof buf, r,
                      plain ? std::chars_format::fixed : std::chars_format::scientific)
            .ptr;
  return std::string(static_cast<const char*>(buf), end);
}

}  // namespace gradflow::cli
