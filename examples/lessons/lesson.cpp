#include "examples/lessons/lesson.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "nn/io/atomic_file.h"

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

double greedy_accuracy(const nn::EncoderDecoder& model, const nn::Seq2SeqBatch& b) {
  NoGradGuard no_grad;
  const int64_t rows = b.tgt_out.shape()[0], cols = b.tgt_out.shape()[1];
  Tensor out = model.greedy_decode(b.src, b.src_pad, nn::kBosToken, nn::kEosToken, cols);
  int64_t right = 0, total = 0;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t t = 0; t < cols && b.tgt_out.at({i, t}) != nn::kPadToken; ++t, ++total)
      right += t < out.shape()[1] && out.at({i, t}) == b.tgt_out.at({i, t});
  return static_cast<double>(right) / static_cast<double>(total);
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
  const std::string path = (fs::path(lesson.out) / file).string();
  write_file_atomic(path, text);
  std::cout << "figure: " << path << "\n";
}

}  // namespace gradflow::lessons
