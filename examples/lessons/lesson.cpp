#include "examples/lessons/lesson.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace gradflow::lessons {

namespace fs = std::filesystem;

Lesson parse_lesson(cli::ArgParser& args, const std::string& name, int argc, char** argv) {
  Lesson lesson{.name = name, .out = "runs/lessons/" + name};
  args.add("--out", &lesson.out, "folder for the lesson's figure").metavar("DIR");
  args.add("--seed", &lesson.seed, "seed of every random draw").min(0);
  args.parse(argc, argv);
  return lesson;
}

std::string bar(double value, double max, int width) {
  if (std::isnan(value) || std::isnan(max)) return "?";
  if (!(max > 0) || !(value > 0)) return "";
  const double share = std::min(value / max, 1.0);
  return std::string(static_cast<size_t>(std::lround(share * width)), '#');
}

bool claim(const std::string& text, bool holds) {
  std::printf("claim: %s: %s\n", text.c_str(), holds ? "holds" : "does not hold");
  return holds;
}

void write_figure(const Lesson& lesson, const std::string& file, const std::string& text) {
  std::error_code ec;
  fs::create_directories(lesson.out, ec);
  if (!fs::is_directory(lesson.out))
    throw cli::UsageError("--out " + cli::quote(lesson.out) + ": cannot create the folder" +
                          (ec ? ": " + ec.message() : ""));
  const fs::path path = fs::path(lesson.out) / file;
  const fs::path temporary = path.string() + ".partial";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.flush()) throw cli::UsageError("cannot write " + cli::quote(temporary.string()));
  }
  fs::rename(temporary, path, ec);
  if (ec) throw cli::UsageError("cannot write " + cli::quote(path.string()) + ": " + ec.message());
  std::cout << "figure: " << path.string() << "\n";
}

}  // namespace gradflow::lessons
