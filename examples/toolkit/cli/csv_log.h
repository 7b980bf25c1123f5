// CSV logs of training curves, readable by pandas, R or a spreadsheet.
//
//   cli::CsvLog log("runs/seq2seq.csv", {"step", "loss", "accuracy"});
//   log.row({step, loss, acc});
//
// Numbers are written in the shortest form that reads back to the same
// value (a float as a float, so 0.1f is "0.1", not "0.100000001"); strings
// are quoted per RFC 4180 only when they need it. Each row is flushed as it
// is written, so a crash loses at most the row being written.
#pragma once

#include <concepts>
#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace gradflow::cli {

// FNV-1a (64 bits) of `text`, continuing from `digest`: CsvLog::digest() is
// log_digest(the file's whole content).
inline constexpr uint64_t kLogDigestStart = 0xcbf29ce484222325ull;
uint64_t log_digest(std::string_view text, uint64_t digest = kLogDigestStart);
std::string digest_hex(uint64_t digest);  // 16 hex digits

// A field as CSV text: quoted, with quotes doubled, if it contains a comma,
// quote, CR or LF, or starts or ends with a space (which readers may trim).
std::string csv_field(std::string_view text);

// One value of a row, formatted on construction; converts implicitly from
// strings, integers, bool ("true"/"false"), float and double.
class CsvCell {
 public:
  CsvCell(std::string_view text) : text_(csv_field(text)) {}
  CsvCell(const char* text) : CsvCell(std::string_view(text)) {}
  CsvCell(const std::string& text) : CsvCell(std::string_view(text)) {}
  CsvCell(bool v) : text_(v ? "true" : "false") {}
  template <std::signed_integral T>
  CsvCell(T v) : text_(std::to_string(static_cast<long long>(v))) {}
  template <std::unsigned_integral T>
  CsvCell(T v) : text_(std::to_string(static_cast<unsigned long long>(v))) {}
  CsvCell(float v);
  CsvCell(double v);
  CsvCell(long double v) : CsvCell(static_cast<double>(v)) {}

  const std::string& text() const { return text_; }  // already quoted if needed

 private:
  std::string text_;
};

class CsvLog {
 public:
  enum class Mode {
    kTruncate,  // start a new file
    // Continue a resumed run: an existing file must have exactly this
    // header; a torn last row from a crash is cut off. A missing or empty
    // file is started afresh.
    kAppend,
  };

  // Creates missing parent directories. Throws gradflow::Error naming the
  // path if the file cannot be opened, the header differs (kAppend), or the
  // columns are empty or repeated.
  CsvLog(std::string path, std::vector<std::string> columns, Mode mode = Mode::kTruncate);
  CsvLog(const CsvLog&) = delete;
  CsvLog& operator=(const CsvLog&) = delete;
  CsvLog(CsvLog&&) = default;
  CsvLog& operator=(CsvLog&&) = default;

  // REQUIRES: one cell per column, else throws gradflow::Error.
  void row(const std::vector<CsvCell>& cells);

  const std::string& path() const { return path_; }
  const std::vector<std::string>& columns() const { return columns_; }
  // log_digest of everything the file holds now (header and rows), kept up to
  // date as rows are written: a checkpoint saved beside the log records it, so
  // a resume can tell the run's own log from another's.
  uint64_t digest() const { return digest_; }

 private:
  // kAppend: checks the header and opens for appending; false if there is
  // no file (or an empty one) to continue.
  bool append_to_existing(const std::string& header);

  std::string path_;
  std::vector<std::string> columns_;
  std::ofstream out_;
  uint64_t digest_ = kLogDigestStart;
};

}  // namespace gradflow::cli
