// The one exception type gradflow throws for a wrong call or bad input.
//
// Messages name the operation first, then what was wrong, then the shapes or
// values involved, e.g. "matmul: inner dimensions differ: (2, 3) @ (4, 5)".
// `assert` is kept for internal invariants only, so tests can EXPECT_THROW
// every user error.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace gradflow {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Builds a message from any streamable parts: fail("sum", "axis ", 3, " out of range").
template <class... Parts>
[[noreturn]] void fail(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  throw Error(out.str());
}

}  // namespace gradflow
