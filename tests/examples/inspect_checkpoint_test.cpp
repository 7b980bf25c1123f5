// Drives the real inspect_checkpoint binary (its path from the programs'
// list, tests/examples/run_program.h) on a valid checkpoint and on broken files.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "nn/io/safetensors.h"
#include "tensor/creation.h"
#include "tests/examples/run_program.h"

namespace gradflow {
namespace {

namespace fs = std::filesystem;

struct Result {
  int exit_code = -1;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

size_t count_lines(const std::string& text) {
  size_t n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

class InspectCheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "inspect_checkpoint_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs the binary with `args` (already shell-quoted) and captures both streams.
  Result run(const std::string& args) const {
    const fs::path out = dir_ / "stdout.txt", err = dir_ / "stderr.txt";
    const std::string command = "'" + testing::program_path("inspect_checkpoint") + "' " + args +
                                " >'" + out.string() + "' 2>'" + err.string() + "'";
    const int status = std::system(command.c_str());
    Result r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
  }

  fs::path write(const std::string& name, const std::string& bytes) const {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }

  static std::string quote(const fs::path& p) { return "'" + p.string() + "'"; }

  // Exit code 2 and exactly one line "inspect_checkpoint: error: ..." on stderr.
  void expect_one_line_error(const Result& r, const std::string& reason_part) const {
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(count_lines(r.err), 1u) << r.err;
    EXPECT_EQ(r.err.rfind("inspect_checkpoint: error: ", 0), 0u) << r.err;
    EXPECT_NE(r.err.find(reason_part), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
  }

  NamedTensors sample_tensors() const {
    return {{"encoder.layers.0.q_proj.weight", zeros({64, 32})},
            {"encoder.layers.0.q_proj.bias", zeros({64})},
            {"step_ids", arange(5, DType::Int64)},
            {"scale", scalar_tensor(2.0, DType::Float64)}};
  }

  fs::path dir_;
};

TEST_F(InspectCheckpointTest, ListsTensorsTotalsAndMetadata) {
  const fs::path p = dir_ / "model.safetensors";
  nn::save_safetensors(p.string(), sample_tensors(), {{"step", "1500"}, {"task", "reverse"}});
  const Result r = run(quote(p));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  for (const char* expected :
       {"encoder.layers.0.q_proj.weight", "[64, 32]", "2,048", "encoder.layers.0.q_proj.bias",
        "[64]", "step_ids", "I64", "[5]", "scale", "F64", "[]", "tensors: 4",
        "parameters: 2,118",  // 2048 + 64 + 5 + 1
        "bytes: 8,496",       // (2048 + 64) * 4 + (5 + 1) * 8
        "step = 1500", "task = reverse"})
    EXPECT_NE(r.out.find(expected), std::string::npos) << "missing " << expected << " in\n"
                                                       << r.out;
  // Names keep the file's order, and the columns line up.
  EXPECT_LT(r.out.find("q_proj.weight"), r.out.find("q_proj.bias"));
  EXPECT_LT(r.out.find("q_proj.bias"), r.out.find("step_ids"));
  std::istringstream lines(r.out);
  std::string header, first;
  std::getline(lines, header);
  std::getline(lines, first);
  EXPECT_EQ(header.find("dtype"), first.find("F32"));
}

TEST_F(InspectCheckpointTest, SaysWhenThereIsNoMetadata) {
  const fs::path p = dir_ / "plain.safetensors";
  nn::save_safetensors(p.string(), sample_tensors());
  const Result r = run(quote(p));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("metadata: (none)"), std::string::npos) << r.out;
}

TEST_F(InspectCheckpointTest, EscapesControlCharactersInMetadata) {
  const fs::path p = dir_ / "odd.safetensors";
  nn::save_safetensors(p.string(), sample_tensors(), {{"note", "two\nlines"}});
  const Result r = run(quote(p));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("note = two\\nlines"), std::string::npos) << r.out;
}

TEST_F(InspectCheckpointTest, HelpGoesToStdoutWithExitZero) {
  const Result r = run("--help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("FILE"), std::string::npos) << r.out;
  EXPECT_EQ(r.err, "");
}

TEST_F(InspectCheckpointTest, MissingArgumentIsAUsageError) {
  expect_one_line_error(run(""), "FILE");
}

TEST_F(InspectCheckpointTest, MissingFile) {
  expect_one_line_error(run(quote(dir_ / "nope.safetensors")), "nope.safetensors");
}

TEST_F(InspectCheckpointTest, Directory) { expect_one_line_error(run(quote(dir_)), "directory"); }

TEST_F(InspectCheckpointTest, EmptyFile) {
  expect_one_line_error(run(quote(write("empty.safetensors", ""))), "empty.safetensors");
}

TEST_F(InspectCheckpointTest, TruncatedFiles) {
  const std::string bytes = nn::encode_safetensors(sample_tensors(), {{"step", "1"}});
  // Cut inside the length word, inside the header, and inside the data.
  for (size_t keep : {size_t{4}, size_t{8}, size_t{20}, bytes.size() - 1}) {
    SCOPED_TRACE("keeping " + std::to_string(keep) + " of " + std::to_string(bytes.size()));
    expect_one_line_error(run(quote(write("cut.safetensors", bytes.substr(0, keep)))),
                          "cut.safetensors");
  }
}

TEST_F(InspectCheckpointTest, GarbageHeaders) {
  auto with_header = [](const std::string& json) {
    std::string out(8, '\0');
    for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((json.size() >> (8 * i)) & 0xff);
    return out + json;
  };
  const std::string cases[] = {
      with_header("this is not json"),
      with_header("{\"w\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}"),
      with_header("{\"w\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}}"),
      with_header("{\"w\": {\"dtype\": \"BF17\", \"shape\": [], \"data_offsets\": [0, 2]}}") + "ab",
      with_header("{\"w\": {\"dtype\": \"F4\", \"shape\": [3], \"data_offsets\": [0, 2]}}") + "ab",
      with_header("[1, 2, 3]"),
      std::string("\xff\xff\xff\xff\xff\xff\xff\xff{}", 10),  // a header length of 2^64 - 1
      "random bytes, no safetensors at all\n\n\n",
  };
  for (const std::string& bytes : cases) {
    SCOPED_TRACE(bytes);
    expect_one_line_error(run(quote(write("bad.safetensors", bytes))), "bad.safetensors");
  }
}

// Every dtype of the format is listed with its shape and element count, and
// its bytes count in the total; a valid BF16 file is a valid file.
TEST_F(InspectCheckpointTest, ListsEveryDtypeOfTheFormat) {
  struct Entry {
    const char* dtype;
    int elements, bytes;
  };
  const Entry entries[] = {{"F64", 2, 16},    {"I64", 1, 8},  {"U64", 1, 8},     {"C64", 1, 8},
                           {"F32", 3, 12},    {"I32", 2, 8},  {"U32", 1, 4},     {"F16", 2, 4},
                           {"BF16", 3, 6},    {"I16", 1, 2},  {"U16", 1, 2},     {"I8", 3, 3},
                           {"U8", 2, 2},      {"BOOL", 4, 4}, {"F8_E4M3", 2, 2}, {"F8_E5M2", 1, 1},
                           {"F8_E8M0", 1, 1}, {"F4", 4, 2},   {"F6_E2M3", 4, 3}, {"F6_E3M2", 4, 3}};
  std::string json = "{", data;
  for (const Entry& e : entries) {
    json += std::string(json.size() > 1 ? "," : "") + "\"t_" + e.dtype + "\":{\"dtype\":\"" +
            e.dtype + "\",\"shape\":[" + std::to_string(e.elements) + "],\"data_offsets\":[" +
            std::to_string(data.size()) + "," + std::to_string(data.size() + e.bytes) + "]}";
    data += std::string(static_cast<size_t>(e.bytes), '\x3c');
  }
  json += "}";
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((json.size() >> (8 * i)) & 0xff);
  const Result r = run(quote(write("dtypes.safetensors", bytes + json + data)));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  std::istringstream lines(r.out);
  std::string line;
  std::getline(lines, line);  // the header
  for (const Entry& e : entries) {
    ASSERT_TRUE(std::getline(lines, line));
    std::istringstream cells(line);
    std::string name, dtype, shape, elements;
    cells >> name >> dtype >> shape >> elements;
    EXPECT_EQ(name, std::string("t_") + e.dtype);
    EXPECT_EQ(dtype, e.dtype);
    EXPECT_EQ(shape, "[" + std::to_string(e.elements) + "]");
    EXPECT_EQ(elements, std::to_string(e.elements));
  }
  EXPECT_NE(r.out.find("tensors: 20   parameters: 43   bytes: 99"), std::string::npos) << r.out;
}

using InspectHeaderTest = testing::ProgramTest;

// A safetensors file of one F32 tensor of `bytes` bytes: its header, then the
// data left as a hole (a sparse file: no disk and no time to write).
std::string sparse_checkpoint(const std::string& file, uint64_t bytes, uint64_t length) {
  const std::string json = "{\"w\":{\"dtype\":\"F32\",\"shape\":[" + std::to_string(bytes / 4) +
                           "],\"data_offsets\":[0," + std::to_string(bytes) + "]}}";
  std::string head(8, '\0');
  for (int i = 0; i < 8; ++i) head[i] = static_cast<char>((json.size() >> (8 * i)) & 0xff);
  std::ofstream(file, std::ios::binary) << head << json;
  fs::resize_file(file, 8 + json.size() + length);
  return file;
}

// A valid 1.5 GiB file was read whole to print its header (3 GiB peaked at
// 3.1 GB resident); now only the header is read, and the tensor's size is
// checked against the file's length: one byte short is refused. (256 MiB
// leaves room for AddressSanitizer's shadow memory, about 110 MiB here.)
TEST_F(InspectHeaderTest, ReadsOnlyTheHeaderAndChecksSizesAgainstTheFilesLength) {
  const uint64_t bytes = uint64_t{3} << 29;
  const std::string whole = sparse_checkpoint(path("big.safetensors"), bytes, bytes);
  Result r = run(testing::program_path("inspect_checkpoint"), {whole});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("402,653,184"), std::string::npos) << r.out;  // elements of w
  EXPECT_LT(r.max_rss_kb, 256 * 1024) << "peak resident KiB";

  const std::string short_file = sparse_checkpoint(path("short.safetensors"), bytes, bytes - 1);
  r = run(testing::program_path("inspect_checkpoint"), {short_file});
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  EXPECT_LT(r.max_rss_kb, 256 * 1024) << "peak resident KiB";
}

}  // namespace
}  // namespace gradflow
