// Checkpoints written by the code before --norm-type and --ffn existed
// resume with today's: their model reads as the LayerNorm and MLP model they
// were (each config field's `absent`, nn/model_config.h), it trains on as
// that code trained it, and a flag of the new fields that contradicts them
// is refused.
//
// The fixtures, tests/data/old_checkpoints/<program>/, were written by the
// training programs of commit 186c3e3 (2 steps of the smallest model):
//   <program> --d-model 4 --heads 2 --layers 1 --d-ff 4 --batch 4 --steps 2
//             --eval-every 0 --seed 3 <data and evaluation flags> --out DIR
// with seq2seq --max-len 4 --eval-examples 16, charlm --corpus-chars 3000
// --context 16 --eval-batches 1, classify --max-len 6 --eval-examples 32,
// recall --keys 8 --pairs 3 --queries 2 --eval-examples 16. Each folder
// keeps the checkpoint and log.csv, and resumed_log.csv: the log that code
// wrote when it resumed the same checkpoint to step 4 (--resume DIR --steps 4),
// its steps 3 and 4 written again since a resume that raises --steps keeps the
// cosine's first span (steps past it at its final learning rate, lr / 10)
// where that code started a new cosine over 4 steps.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "nn/io/checkpoint.h"
#include "nn/io/safetensors.h"
#include "tests/examples/run_program.h"

namespace gradflow::testing {
namespace {

namespace fs = std::filesystem;

using OldCheckpointTest = ProgramTest;

const fs::path kFixtures = fs::path(GRADFLOW_SOURCE_DIR) / "tests/data/old_checkpoints";

std::vector<std::vector<std::string>> csv_rows(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::vector<std::string> cells;
    std::istringstream fields(line);
    for (std::string cell; std::getline(fields, cell, ',');) cells.push_back(cell);
    if (!line.empty() && line.back() == ',') cells.push_back("");
    rows.push_back(cells);
  }
  return rows;
}

// The resumed log against the old code's: the same header, rows and steps,
// every other number within 1e-5 relative. On the machine that wrote the
// fixtures they are equal to the last digit; the margin is for another CPU's
// kernels, which add float32 products in another order (1 and 2 threads
// agree to the same 1e-5, determinism_test.cpp). Another model (a norm
// without its bias, another feed-forward) could not even load the weights.
void expect_same_log(const std::string& got, const std::string& want) {
  const auto g = csv_rows(got), w = csv_rows(want);
  ASSERT_EQ(g.size(), w.size()) << got;
  for (size_t r = 0; r < w.size(); ++r) {
    ASSERT_EQ(g[r].size(), w[r].size()) << "row " << r << "\n" << got;
    for (size_t c = 0; c < w[r].size(); ++c) {
      char* end = nullptr;
      const double want_value = std::strtod(w[r][c].c_str(), &end);
      const bool number = !w[r][c].empty() && *end == '\0' && r > 0;
      if (!number || c == 0) {
        EXPECT_EQ(g[r][c], w[r][c]) << "row " << r << " column " << w[0][c];
        continue;
      }
      EXPECT_NEAR(std::strtod(g[r][c].c_str(), nullptr), want_value,
                  1e-5 * std::max(1.0, std::abs(want_value)))
          << "row " << r << " column " << w[0][c];
    }
  }
}

TEST_F(OldCheckpointTest, EveryTrainingProgramResumesACheckpointFromBeforeNormTypeAndFfn) {
  std::vector<std::string> seen;
  for (const ListedProgram& p : programs_of_kind("training")) {
    const fs::path fixture = kFixtures / p.name;
    if (!fs::exists(fixture)) continue;
    SCOPED_TRACE(p.name);
    seen.push_back(p.name);
    const std::string out = path(p.name), checkpoint = out + "/checkpoint.safetensors";
    fs::create_directories(out);
    for (const char* file : {"checkpoint.safetensors", "log.csv"})
      fs::copy_file(fixture / file, fs::path(out) / file);
    const auto metadata = nn::load_safetensors_header(checkpoint).metadata;
    for (const auto& [key, value] : metadata)
      ASSERT_TRUE(key.find("norm_type") == std::string::npos &&
                  key.find("ffn") == std::string::npos)
          << "the fixture is not from before the fields: " << key;

    const std::string display = p.name == "charlm" ? "--sample-tokens" : "--show";
    // Another norm or feed-forward than the checkpoint's is refused...
    expect_usage_error(p.path, {"--resume", out, "--steps", "4", "--norm-type", "rmsnorm"});
    expect_usage_error(p.path, {"--resume", out, "--steps", "4", "--ffn", "swiglu"});
    // ...and without, it resumes as the LayerNorm and MLP model it was.
    Result r = run(p.path, {"--resume", out, "--steps", "4", display, "0"});
    ASSERT_EQ(r.code, 0) << r.err;
    expect_same_log(read(out + "/log.csv"), read((fixture / "resumed_log.csv").string()));
    const auto resumed = nn::load_safetensors_header(checkpoint).metadata;
    EXPECT_EQ(nn::metadata_value(resumed, "config.norm_type"), "layernorm");
    EXPECT_EQ(nn::metadata_value(resumed, "config.ffn"), "mlp");
    EXPECT_EQ(nn::metadata_value(resumed, "flag.--ffn"), "mlp");
    EXPECT_EQ(nn::metadata_value(resumed, "step"), "4");
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(seen, (std::vector<std::string>{"charlm", "classify", "recall", "seq2seq"}));
}

}  // namespace
}  // namespace gradflow::testing
