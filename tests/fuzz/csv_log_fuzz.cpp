// The log.csv a resume continues, on any bytes: CsvLog in kAppend mode (with the columns of a
// training run) opens it or throws a one-line Error. An opened log keeps the file up to its last
// newline (a row torn by a crash is cut off), appends whole rows after it, and its digest is
// that of the file's content.
//
// The other reader of log.csv on resume, rows_up_to in examples/toolkit/training/training.cpp (the
// rows up to the checkpoint's step, whose digest the checkpoint holds), is internal to that file
// and not fuzzed here; RunFolderTest.AResumeRefusesAnotherRunsLog and the resume tests exercise it.
#include <fstream>
#include <iterator>

#include "examples/toolkit/cli/csv_log.h"
#include "tensor/error.h"
#include "tests/fuzz/fuzz_input.h"

using namespace gradflow;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const fuzz::ScratchDir scratch;
  const std::string_view bytes = fuzz::text_of(data, size);
  const std::string path = scratch.write("log.csv", bytes);
  const std::vector<std::string> columns = {"step", "loss", "lr", "grad_norm", "skipped", "acc"};
  const std::string header = "step,loss,lr,grad_norm,skipped,acc\n";
  try {
    cli::CsvLog log(path, columns, cli::CsvLog::Mode::kAppend);
    const std::string kept = slurp(path);
    if (log.digest() != cli::log_digest(kept)) fuzz::broken("the digest is not the file's");
    const std::string expected =
        bytes.empty() ? header : std::string(bytes.substr(0, bytes.rfind('\n') + 1));
    if (kept != expected || !kept.starts_with(header))
      fuzz::broken("the opened log is not the file up to its last newline");
    log.row({7, 0.5, 1e-3, 2.0f, false, "a,\"b\""});
    const std::string after = slurp(path);
    const std::string row = "7,0.5,0.001,2,false,\"a,\"\"b\"\"\"\n";
    if (after != kept + row || log.digest() != cli::log_digest(after))
      fuzz::broken("the row was not appended whole: " + after.substr(kept.size()));
  } catch (const Error& e) {
    fuzz::check_one_line(e.what());
  }
  return 0;
}
