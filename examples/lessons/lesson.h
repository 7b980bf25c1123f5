// What every lesson program shares: its command line (--out, --seed), text
// bar charts for the terminal, its claims, and writing its figure. The
// lessons that train a model add lesson_models.h.
//
// A lesson is a small program that shows one idea in seconds: it prints what
// it measured (the numbers its page in docs/lessons/ quotes, held to the
// output by a test) and writes one figure into --out. Its page reads
// predict -> run -> see -> why -> where in the code.
#pragma once

#include <cstdint>
#include <string>

#include "examples/toolkit/cli/args.h"

namespace gradflow::lessons {

struct Lesson {
  std::string name;  // "05_dot_product_variance"
  std::string out;   // where its figures go
  int64_t seed = 0;
};

// Adds --out (default runs/lessons/<name>) and --seed to args, parses the
// command line, and returns the settings. Throws cli::UsageError.
Lesson parse_lesson(cli::ArgParser& args, const std::string& name, int argc, char** argv);

// "#########.......": `value` of `max` as a bar `width` characters long
// (rounded; empty for 0 or less, full for max or more, "?" for NaN).
std::string bar(double value, double max, int width = 40);

// Prints one claim its page makes, computed from what the lesson measured:
// "claim: <text>: holds" or "claim: <text>: does not hold". The text carries
// no measured digits, so the line is the same on every machine where the
// claim holds; the page quotes it, and ctest -L lessons fails a lesson that
// prints "does not hold", or a claim its page does not quote, on whatever
// kernels run it (tests/lesson_page.cmake). Returns holds.
bool claim(const std::string& text, bool holds);

// Writes text to <out>/<file> (creating out) and prints "figure: <path>":
// to a temporary file beside it, then renamed over it, so a reader never
// sees half a figure. Throws cli::UsageError when out cannot be made or
// written. (Not nn/io/atomic_file.h: lessons 1 to 4 need nothing of nn/,
// and build without it, the sooner to run.)
void write_figure(const Lesson& lesson, const std::string& file, const std::string& text);

}  // namespace gradflow::lessons
