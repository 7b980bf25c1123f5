#include "examples/toolkit/cli/csv_log.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <unordered_set>

#include "examples/toolkit/cli/args.h"
#include "tensor/error.h"

namespace gradflow::cli {
namespace {

namespace fs = std::filesystem;

// std::to_chars without a precision gives the shortest text that parses
// back to the same value of that type: round-trippable and compact.
template <class F>
std::string shortest(F v) {
  // to_chars writes "-nan" for a negative NaN; readers only agree on "nan".
  if (std::isnan(v)) return "nan";
  char buf[64];
  auto [ptr, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, ec == std::errc{} ? ptr : buf);
}

std::string join(const std::vector<std::string>& parts, std::string_view sep, bool escape) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += sep;
    out += escape ? csv_field(parts[i]) : parts[i];
  }
  return out;
}

// Keeps an error message on one line when it quotes text from the file.
std::string printable(std::string text, size_t limit = 120) {
  if (text.size() > limit) text = text.substr(0, limit) + "...";
  for (char& c : text)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  return text;
}

}  // namespace

uint64_t log_digest(std::string_view text, uint64_t digest) {
  for (unsigned char c : text) {
    digest ^= c;
    digest *= 0x100000001b3ull;
  }
  return digest;
}

std::string digest_hex(uint64_t digest) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(digest));
  return buf;
}

std::string csv_field(std::string_view text) {
  bool quote = text.find_first_of(",\"\r\n") != std::string_view::npos ||
               (!text.empty() && (text.front() == ' ' || text.back() == ' '));
  if (!quote) return std::string(text);
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + '"';
}

CsvCell::CsvCell(float v) : text_(shortest(v)) {}
CsvCell::CsvCell(double v) : text_(shortest(v)) {}

CsvLog::CsvLog(std::string path, std::vector<std::string> columns, Mode mode)
    : path_(std::move(path)), columns_(std::move(columns)) {
  if (columns_.empty()) fail("csv_log: ", path_, ": no columns given");
  std::unordered_set<std::string> names;
  for (const auto& c : columns_)
    if (!names.insert(c).second) fail("csv_log: ", path_, ": column \"", c, "\" given twice");

  std::error_code ignored;  // if this fails, opening the file reports why
  fs::path parent = fs::path(path_).parent_path();
  if (!parent.empty()) fs::create_directories(parent, ignored);

  // Something other than a file in the log's place (a FIFO, whose opening
  // would block until a reader comes; a folder; a dangling symlink, through
  // which writing would create a file elsewhere) is refused, not written to.
  if (fs::symlink_status(path_, ignored).type() != fs::file_type::not_found) {
    try {
      require_regular_file(path_);
    } catch (const std::exception& e) {
      fail("csv_log: ", e.what());
    }
  }
  std::string header = join(columns_, ",", /*escape=*/true) + "\n";
  if (mode == Mode::kAppend && append_to_existing(header)) return;
  errno = 0;
  out_.open(path_, std::ios::out | std::ios::trunc | std::ios::binary);
  if (!out_.is_open()) fail("csv_log: cannot open ", path_, " for writing: ", std::strerror(errno));
  out_ << header << std::flush;
  if (!out_) fail("csv_log: ", path_, ": write failed");
  digest_ = log_digest(header);
}

bool CsvLog::append_to_existing(const std::string& header) {
  std::error_code ec;
  std::uintmax_t size = fs::file_size(path_, ec);
  if (ec || size == 0) return false;
  std::ifstream in(path_, std::ios::binary);
  if (!in) fail("csv_log: cannot open ", path_, " for reading: ", std::strerror(errno));
  std::string head(header.size(), '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  if (head != header) {
    in.clear();
    in.seekg(0);
    std::string first;
    std::getline(in, first);
    fail("csv_log: ", path_, ": existing header \"", printable(first),
         "\" does not match columns \"", printable(join(columns_, ",", true)), "\"");
  }
  // Rows are written whole and end in '\n', so anything after the last
  // newline is a row torn by a crash. Appending to it would glue two rows
  // together; cutting it off loses only what was lost already.
  in.clear();
  in.seekg(0);
  std::string all{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (all.back() != '\n') {
    all.resize(all.rfind('\n') + 1);  // the header's newline exists
    fs::resize_file(path_, all.size(), ec);
    if (ec) fail("csv_log: ", path_, ": cannot cut torn last row: ", ec.message());
  }
  digest_ = log_digest(all);
  errno = 0;
  out_.open(path_, std::ios::out | std::ios::app | std::ios::binary);
  if (!out_.is_open())
    fail("csv_log: cannot open ", path_, " for appending: ", std::strerror(errno));
  return true;
}

void CsvLog::row(const std::vector<CsvCell>& cells) {
  if (cells.size() != columns_.size())
    fail("csv_log: ", path_, ": row has ", cells.size(), " values, expected ", columns_.size(),
         " (", join(columns_, ", ", false), ")");
  // One write per row, so a crash tears at most this row.
  std::string line;
  for (size_t i = 0; i < cells.size(); ++i) {
    if (i > 0) line += ',';
    line += cells[i].text();
  }
  line += '\n';
  out_ << line << std::flush;
  if (!out_) fail("csv_log: ", path_, ": write failed");
  digest_ = log_digest(line, digest_);
}

}  // namespace gradflow::cli
