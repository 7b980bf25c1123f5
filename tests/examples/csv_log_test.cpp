#include "examples/toolkit/cli/csv_log.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <random>
#include <sstream>

#include "tensor/error.h"

namespace gradflow::cli {
namespace {

namespace fs = std::filesystem;

// Each test writes under its own directory in /tmp, removed afterwards.
class CsvLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("gradflow_csv_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// An independent RFC 4180 reader, to check that what is written reads back.
std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1);
  std::string field;
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rows.back().push_back(field);
      field.clear();
    } else if (c == '\n') {
      rows.back().push_back(field);
      field.clear();
      rows.emplace_back();
    } else {
      field += c;
    }
  }
  rows.pop_back();  // after the final newline
  return rows;
}

TEST(CsvField, QuotesOnlyWhenNeeded) {
  EXPECT_EQ(csv_field("plain"), "plain");
  EXPECT_EQ(csv_field(""), "");
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_field("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(csv_field("cr\r"), "\"cr\r\"");
  EXPECT_EQ(csv_field(" padded"), "\" padded\"");
  EXPECT_EQ(csv_field("inner space"), "inner space");
}

TEST(CsvCell, NumbersAreShortestRoundTrip) {
  EXPECT_EQ(CsvCell(0.1f).text(), "0.1");  // not 0.100000001 from widening to double
  EXPECT_EQ(CsvCell(0.1).text(), "0.1");
  EXPECT_EQ(CsvCell(1.0 / 3).text(), "0.3333333333333333");
  EXPECT_EQ(CsvCell(1e-7f).text(), "1e-07");
  EXPECT_EQ(CsvCell(1e20).text(), "1e+20");
  EXPECT_EQ(CsvCell(-5).text(), "-5");
  EXPECT_EQ(CsvCell(size_t{7}).text(), "7");
  EXPECT_EQ(CsvCell(int64_t{-9000000000}).text(), "-9000000000");
  EXPECT_EQ(CsvCell(true).text(), "true");
  EXPECT_EQ(CsvCell(-std::numeric_limits<double>::quiet_NaN()).text(), "nan");
  EXPECT_EQ(CsvCell(-std::numeric_limits<float>::infinity()).text(), "-inf");
  EXPECT_EQ(CsvCell("x,y").text(), "\"x,y\"");
}

TEST_F(CsvLogTest, WritesHeaderAndFlushesEachRow) {
  CsvLog log(path("run.csv"), {"step", "loss", "note"});
  EXPECT_EQ(slurp(path("run.csv")), "step,loss,note\n");
  log.row({1, 2.5f, "warmup"});
  // Readable while the log is still open: the row reached the file.
  EXPECT_EQ(slurp(path("run.csv")), "step,loss,note\n1,2.5,warmup\n");
}

TEST_F(CsvLogTest, RoundTripsNumbersAndAwkwardStrings) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> dist(-10, 10);
  std::vector<double> doubles;
  std::vector<float> floats;
  std::vector<std::string> texts = {"a,b", "q\"uote", "multi\nline", " lead", "", "plain"};
  {
    CsvLog log(path("sub/dir/run.csv"), {"step", "d", "f", "text"});  // creates sub/dir
    for (size_t i = 0; i < 50; ++i) {
      doubles.push_back(std::exp(dist(rng)) * (i % 2 ? -1 : 1));
      floats.push_back(static_cast<float>(dist(rng)) / 3);
      log.row({i, doubles.back(), floats.back(), texts[i % texts.size()]});
    }
  }
  auto rows = parse_csv(slurp(path("sub/dir/run.csv")));
  ASSERT_EQ(rows.size(), 51u);
  EXPECT_EQ(rows[0], (std::vector<std::string>{"step", "d", "f", "text"}));
  for (size_t i = 0; i < 50; ++i) {
    const auto& r = rows[i + 1];
    ASSERT_EQ(r.size(), 4u);
    EXPECT_EQ(r[0], std::to_string(i));
    EXPECT_EQ(std::strtod(r[1].c_str(), nullptr), doubles[i]) << r[1];
    EXPECT_EQ(std::strtof(r[2].c_str(), nullptr), floats[i]) << r[2];
    EXPECT_LE(r[2].size(), 15u) << "a float should not print with double's digits";
    EXPECT_EQ(r[3], texts[i % texts.size()]);
  }
}

TEST_F(CsvLogTest, WrongColumnCountNamesPathAndColumns) {
  CsvLog log(path("run.csv"), {"step", "loss"});
  try {
    log.row({1});
    ADD_FAILURE() << "no Error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "csv_log: " + path("run.csv") + ": row has 1 values, expected 2 (step, loss)");
  }
  EXPECT_THROW(CsvLog(path("x.csv"), {}), Error);
  EXPECT_THROW(CsvLog(path("x.csv"), {"a", "b", "a"}), Error);
}

TEST_F(CsvLogTest, UnopenablePathIsOneLineNamingIt) {
  std::ofstream(path("file")) << "not a directory";
  std::string bad = path("file") + "/run.csv";
  try {
    CsvLog log(bad, {"step"});
    ADD_FAILURE() << "no Error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "csv_log: cannot open " + bad + " for writing: Not a directory");
  }
}

TEST_F(CsvLogTest, AppendContinuesAMatchingFile) {
  {
    CsvLog log(path("run.csv"), {"step", "loss"});
    log.row({1, 0.5});
  }
  {
    CsvLog log(path("run.csv"), {"step", "loss"}, CsvLog::Mode::kAppend);
    log.row({2, 0.25});
  }
  EXPECT_EQ(slurp(path("run.csv")), "step,loss\n1,0.5\n2,0.25\n");
  // A missing file in append mode simply starts a new log.
  CsvLog fresh(path("new.csv"), {"step"}, CsvLog::Mode::kAppend);
  EXPECT_EQ(slurp(path("new.csv")), "step\n");
}

TEST_F(CsvLogTest, AppendRejectsADifferentHeader) {
  std::ofstream(path("run.csv")) << "step,loss\n1,0.5\n";
  try {
    CsvLog log(path("run.csv"), {"step", "loss", "acc"}, CsvLog::Mode::kAppend);
    ADD_FAILURE() << "no Error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "csv_log: " + path("run.csv") +
                                         ": existing header \"step,loss\" does not match "
                                         "columns \"step,loss,acc\"");
  }
  EXPECT_EQ(slurp(path("run.csv")), "step,loss\n1,0.5\n") << "must not touch a mismatched file";
}

TEST_F(CsvLogTest, AppendCutsARowTornByACrash) {
  std::ofstream(path("run.csv")) << "step,loss\n1,0.5\n2,0.2";
  CsvLog log(path("run.csv"), {"step", "loss"}, CsvLog::Mode::kAppend);
  log.row({2, 0.25});
  EXPECT_EQ(slurp(path("run.csv")), "step,loss\n1,0.5\n2,0.25\n");
}

// digest() is always that of the file's bytes, so a checkpoint can record
// which log it was saved beside; FNV-1a 64 ("" gives its offset basis).
TEST_F(CsvLogTest, DigestIsThatOfTheFilesBytes) {
  EXPECT_EQ(log_digest(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(digest_hex(log_digest("a")), "af63dc4c8601ec8c");
  {
    CsvLog log(path("run.csv"), {"step", "loss"});
    EXPECT_EQ(log.digest(), log_digest(slurp(path("run.csv"))));
    log.row({1, 0.5});
    EXPECT_EQ(log.digest(), log_digest(slurp(path("run.csv"))));
  }
  std::ofstream(path("run.csv"), std::ios::app) << "2,0.2";  // torn
  CsvLog log(path("run.csv"), {"step", "loss"}, CsvLog::Mode::kAppend);
  EXPECT_EQ(log.digest(), log_digest("step,loss\n1,0.5\n"));
  log.row({2, 0.25});
  EXPECT_EQ(log.digest(), log_digest(slurp(path("run.csv"))));
}

}  // namespace
}  // namespace gradflow::cli
