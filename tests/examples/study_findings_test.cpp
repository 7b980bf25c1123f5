// What a student reads first, held to the run's files: a small scaling_study
// of the default parts writes report.md, and every number of every finding
// in its "What this run shows", but those of the claim's own declared words,
// is a cell of that claim's rows of criteria.csv; every finding names the
// claim it rests on, and its title is the claim's plain words qualified by
// its verdict in criteria.csv.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "examples/study/claims.h"
#include "tests/examples/run_program.h"
#include "tests/examples/study_csv.h"

namespace gradflow::testing {
namespace {

using StudyFindings = ProgramTest;

// The findings of report.md: claim id -> the finding's line.
std::map<std::string, std::string> findings_of(const std::string& report) {
  std::map<std::string, std::string> out;
  const size_t start = report.find("## What this run shows");
  const size_t end = report.find("## The numbers behind the findings");
  EXPECT_NE(start, std::string::npos);
  std::istringstream lines(report.substr(start, end - start));
  static const std::regex item(R"(^[0-9]+\. \*\*(.*)\.\*\* \((C[0-9]+)\) (.*)$)");
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_match(line, m, item)) out[m[2]] = line;
  }
  return out;
}

TEST_F(StudyFindings, EveryNumberOfEveryFindingIsACellOfCriteriaCsv) {
  const std::string out = path("study");
  // The default parts, small: every part's claims are judged and the story's findings written.
  Result r = run(kScalingStudy, {"--parts", "init,train,sgd,depth", "--d-ks", "8", "--seeds", "2",
                                 "--steps", "70", "--out", out});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::vector<std::vector<std::string>> csv = read_csv_rows(out + "/criteria.csv");
  ASSERT_GT(csv.size(), 1u);
  std::map<std::string, size_t> column;
  for (size_t i = 0; i < csv[0].size(); ++i) column[csv[0][i]] = i;
  const std::map<std::string, std::string> findings = findings_of(read(out + "/report.md"));
  EXPECT_GE(findings.size(), 10u);
  static const std::regex number(R"((^|[^\w.^/(-])(-?[0-9]+(\.[0-9]+)?(e[-+][0-9]+)?)x?)");
  for (const auto& [id, line] : findings) {
    const study::Claim& c = study::claim(id);
    // Its rows in criteria.csv, and the verdict they give: the title says it.
    std::vector<std::string> cells;
    int evidence = 0, passed = 0;
    for (size_t i = 1; i < csv.size(); ++i) {
      if (csv[i][column["claim"]] != id) continue;
      for (const char* name : {"d_k", "n", "shown_estimate", "shown_lo", "shown_hi"})
        cells.push_back(csv[i][column[name]]);
      // A part-measured row names its setting in words ("d_k 256, lr 0.1"):
      // its numbers are cells too.
      const std::string& setting = csv[i][column["task"]];
      static const std::regex in_words(R"(-?[0-9]+(\.[0-9]+)?)");
      for (auto it = std::sregex_iterator(setting.begin(), setting.end(), in_words);
           it != std::sregex_iterator(); ++it)
        cells.push_back((*it)[0]);
      if (csv[i][column["role"]] == "evidence")
        ++evidence, passed += csv[i][column["passed"]] == "true";
    }
    ASSERT_GT(evidence, 0) << id;
    const std::string title = line.substr(line.find("**") + 2);
    const bool partly = title.starts_with("Partly: "), shown = title.starts_with("Not shown: "),
               unclear = title.starts_with("Unclear in this run: ");
    if (!unclear) {
      EXPECT_EQ(partly, passed > 0 && passed < evidence) << line;
      EXPECT_EQ(shown, passed == 0) << line;
    }
    EXPECT_NE(title.find(c.plain), std::string::npos)
        << id << ": the title is not the claim's words";
    // The text's numbers, but those of the claim's own declared words.
    std::string text = line.substr(line.find("(" + id + ") ") + id.size() + 3);
    text = text.substr(0, text.rfind(" See ["));
    if (partly) {
      const std::string held =
          std::to_string(passed) + " of " + std::to_string(evidence) + " tests held. ";
      ASSERT_TRUE(text.starts_with(held)) << line;
      text.erase(0, held.size());
    }
    for (const study::Criterion& k : c.criteria)
      for (const std::string& own :
           {k.plain, study::test_words(k, true), study::test_words(k, false)}) {
        std::string capital = own;
        if (!capital.empty()) capital[0] = static_cast<char>(std::toupper(capital[0]));
        for (const std::string& w : {own, capital})
          for (size_t at = text.find(w); !w.empty() && at != std::string::npos; at = text.find(w))
            text.erase(at, w.size());
      }
    int numbers = 0;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), number);
         it != std::sregex_iterator(); ++it) {
      const std::string shown_number = (*it)[2];
      const double value = std::stod(shown_number);
      const bool found = std::any_of(cells.begin(), cells.end(), [&](const std::string& cell) {
        return !cell.empty() &&
               (cell == shown_number || stats::significant(std::stod(cell), 2) == shown_number ||
                std::abs(std::stod(cell) - value) <= 1e-12);
      });
      EXPECT_TRUE(found) << id << ": " << shown_number << " is no cell of its rows in \"" << line
                         << "\"";
      ++numbers;
    }
    EXPECT_GT(numbers, 0) << line;
  }
}

}  // namespace
}  // namespace gradflow::testing
