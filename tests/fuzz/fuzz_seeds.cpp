// Writes the seeds of the fuzz corpora with the project's own writers: fuzz_seeds DIR writes
// DIR/<harness>/seed-*, valid inputs each harness starts from (tests/fuzz/corpus holds them
// beside what the fuzzer found). The checkpoint seeds are saved from the run that
// checkpoint_fuzz.cpp loads into, so the fuzzer starts past the format's checks.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>

#include "examples/toolkit/cli/csv_log.h"
#include "nn/io/checkpoint.h"
#include "nn/io/json.h"
#include "nn/io/safetensors.h"
#include "tensor/creation.h"
#include "tests/fuzz/tiny_checkpoint.h"

using namespace gradflow;
using namespace gradflow::nn;
namespace fs = std::filesystem;

namespace {

void write(const fs::path& path, std::string_view bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A safetensors file with a header written by hand (dtypes gradflow does not compute in).
std::string file_with_header(const json::Value& header, std::string_view data) {
  std::string text = json::dump(header);
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((text.size() >> (8 * i)) & 0xff);
  return out + text + std::string(data);
}

json::Value entry(const char* dtype, json::Array shape, uint64_t begin, uint64_t end) {
  return json::Object{
      {"dtype", dtype}, {"shape", std::move(shape)}, {"data_offsets", json::Array{begin, end}}};
}

void json_seeds(const fs::path& dir) {
  const json::Value header = json::Object{{"__metadata__", json::Object{{"format", "pt"}}},
                                          {"w", entry("F32", {2, 3}, 0, 24)}};
  write(dir / "seed-header", json::dump(header));
  write(dir / "seed-numbers",
        json::dump(json::Array{0, -1, int64_t{-9223372036854775807} - 1,
                               uint64_t{18446744073709551615u}, 0.5, -2.5e-300, 1e300, 3.0}));
  write(dir / "seed-strings",
        json::dump(json::Array{"", "plain", "quote \" backslash \\ tab \t", "caf\xc3\xa9",
                               "\xf0\x9f\x98\x80", std::string("nul\0byte", 8)}));
  write(dir / "seed-literals", "[true,false,null,{},[],{\"a\":[{\"b\":null}]}]");
  // What dump never writes: spaces, escapes of every kind, exponents.
  write(dir / "seed-spaced",
        " { \"a\" : [ 1 , 2.5E+3 , -0.0e-1 ] ,\n\t\"\\u00e9\\ud83d\\ude00\\/\\b\\f\\n\\r\" : \"x\" "
        "} ");
}

void safetensors_seeds(const fs::path& dir) {
  Tensor f32 = from_vector({1, -2, 3.5, 0, 1e-8, 6}, {2, 3});
  Tensor f64 = from_vector({0.25, -1}, {2}, DType::Float64);
  Tensor i64 = from_indices({7, -3, 0}, {3});
  write(dir / "seed-empty", encode_safetensors({}));
  write(dir / "seed-f32", encode_safetensors({{"w", f32}}));
  write(dir / "seed-mixed", encode_safetensors({{"a.weight", f32}, {"b", f64}, {"steps", i64}},
                                               {{"format", "pt"}, {"step", "5"}}));
  write(dir / "seed-scalar-and-empty",
        encode_safetensors({{"s", scalar_tensor(2)}, {"e", zeros({0, 4})}}));
  // F16 and BF16 (widened by load_weights), and dtypes that are only listed.
  write(dir / "seed-half", file_with_header(json::Object{{"h", entry("F16", {2}, 0, 4)},
                                                         {"b", entry("BF16", {1, 2}, 4, 8)}},
                                            std::string("\x00\x3c\x00\xc0\x80\x3f\x80\x7f", 8)));
  write(dir / "seed-packed", file_with_header(json::Object{{"q", entry("F4", {4}, 0, 2)},
                                                           {"u", entry("U8", {3}, 2, 5)},
                                                           {"f", entry("F6_E2M3", {4}, 5, 8)}},
                                              "\x12\x34\x01\x02\x03\xaa\xbb\xcc"));
}

void checkpoint_seeds(const fs::path& dir) {
  fs::create_directories(dir);
  const fs::path tmp = dir / "tmp.safetensors";
  fuzz::TinyRun run;
  save_checkpoint(tmp.string(), run.model, run.optimizer, run.generators(), 5,
                  {{"config.d_model", "3"}, {"log_digest", "0123456789abcdef"}});
  fs::rename(tmp, dir / "seed-checkpoint");
  save_checkpoint(tmp.string(), run.model, run.optimizer, run.generators(), 0);
  fs::rename(tmp, dir / "seed-checkpoint-step0");
  save_weights(tmp.string(), run.model, {{"config.d_model", "3"}});
  fs::rename(tmp, dir / "seed-weights");
}

void csv_log_seeds(const fs::path& dir) {
  const fs::path path = dir / "seed-log";
  {
    fs::create_directories(dir);
    cli::CsvLog log(path.string(), {"step", "loss", "lr", "grad_norm", "skipped", "acc"});
    log.row({1, 2.5f, 1e-3, 0.75, false, 0.125});
    log.row({2, std::nan(""), 1e-3, std::nan(""), true, "n/a, \"none\""});
  }
  std::ifstream in(path, std::ios::binary);
  const std::string whole{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  write(dir / "seed-log-torn", whole.substr(0, whole.size() - 5));  // a crash mid-row
  write(dir / "seed-log-header", whole.substr(0, whole.find('\n') + 1));
  write(dir / "seed-log-other-header", "step,loss\n1,2\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: fuzz_seeds DIR\n";
    return 2;
  }
  const fs::path dir = argv[1];
  json_seeds(dir / "json");
  safetensors_seeds(dir / "safetensors");
  checkpoint_seeds(dir / "checkpoint");
  csv_log_seeds(dir / "csv_log");
  std::cout << "seeds written under " << dir << "\n";
}
