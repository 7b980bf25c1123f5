// inspect_checkpoint: what a safetensors checkpoint holds, without a model.
//
//   $ inspect_checkpoint model.safetensors
//   name                  dtype  shape      elements
//   embed.token.weight    F32    [16, 64]      1,024
//   ...
//   tensors: 42   parameters: 236,688   bytes: 946,752 (file: 949,248)
//
//   metadata:
//     step = 1500
//
// Every dtype of the format is listed (BF16, F16, I8, BOOL, F8_E4M3, ...:
// nn/io/safetensors_dtypes.h), not only those gradflow computes in. Every
// rule of the format is checked by nn::load_safetensors_header before anything
// is printed (which reads only the header, checking the tensors' sizes against
// the file's length, so a 3 GiB file costs its header's bytes), so a broken file (missing, a
// directory, empty, truncated, a bad header, overlapping data, ...) gives one line
// "inspect_checkpoint: error: REASON" on stderr and exit code 2, and a half-printed table never
// appears.
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "examples/toolkit/cli/args.h"
#include "nn/io/safetensors.h"

namespace {

using namespace gradflow;

// 1234567 -> "1,234,567".
std::string with_commas(uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string shape_text(const Shape& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

// Names and metadata come from the file: control characters are escaped so
// each entry stays on its own line and cannot move the terminal's cursor.
std::string printable(std::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c < 0x20 || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

// Display width of UTF-8 text, counting code points (names are mostly ASCII).
size_t width(std::string_view text) {
  return static_cast<size_t>(
      std::count_if(text.begin(), text.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

std::string pad_right(const std::string& text, size_t to) {
  return text + std::string(to > width(text) ? to - width(text) : 0, ' ');
}

std::string pad_left(const std::string& text, size_t to) {
  return std::string(to > width(text) ? to - width(text) : 0, ' ') + text;
}

struct Row {
  std::string name, dtype, shape, elements;
};

// file_bytes: the size on disk.
void print_report(const nn::SafetensorsHeader& file, uint64_t file_bytes) {
  std::vector<Row> rows;
  uint64_t parameters = 0, bytes = 0;
  Row header{"name", "dtype", "shape", "elements"};
  size_t w_name = width(header.name), w_dtype = width(header.dtype), w_shape = width(header.shape),
         w_elements = width(header.elements);
  for (const nn::SafetensorsEntry& tensor : file.tensors) {
    uint64_t n = 1;  // the reader checked that the sizes multiply within 2^63
    for (int64_t size : tensor.shape) n *= static_cast<uint64_t>(size);
    parameters += n;
    bytes += tensor.end - tensor.begin;
    Row row{printable(tensor.name), tensor.dtype, shape_text(tensor.shape), with_commas(n)};
    w_name = std::max(w_name, width(row.name));
    w_dtype = std::max(w_dtype, width(row.dtype));
    w_shape = std::max(w_shape, width(row.shape));
    w_elements = std::max(w_elements, width(row.elements));
    rows.push_back(std::move(row));
  }
  auto print_row = [&](const Row& r) {
    std::cout << pad_right(r.name, w_name) << "  " << pad_right(r.dtype, w_dtype) << "  "
              << pad_right(r.shape, w_shape) << "  " << pad_left(r.elements, w_elements) << '\n';
  };
  print_row(header);
  for (const Row& r : rows) print_row(r);
  std::cout << "\ntensors: " << with_commas(rows.size())
            << "   parameters: " << with_commas(parameters) << "   bytes: " << with_commas(bytes);
  std::cout << " (file: " << with_commas(file_bytes) << ")";
  std::cout << '\n';

  std::cout << "\nmetadata:";
  if (file.metadata.empty()) std::cout << " (none)";
  std::cout << '\n';
  for (const auto& [key, value] : file.metadata)
    std::cout << "  " << printable(key) << " = " << printable(value) << '\n';
}

int run(int argc, char** argv) {
  cli::ArgParser args("inspect_checkpoint",
                      "List the tensors (name, dtype, shape, elements), totals and metadata of a "
                      "safetensors checkpoint, in any of the format's dtypes. A file that breaks "
                      "the format is reported in one line with exit code 2.");
  std::string path;
  args.add_positional("FILE", &path, "the .safetensors file to inspect")
      .required()
      .check(cli::require_regular_file);
  args.parse(argc, argv);

  // A regular file (require_regular_file): only its header is read, and the
  // tensors' sizes are checked against its length.
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) throw cli::UsageError(cli::quote(path) + " vanished");
  print_report(nn::load_safetensors_header(path), static_cast<uint64_t>(info.st_size));
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return gradflow::cli::run_cli(argc, argv, run); }
