// Reading back the CSV files a scaling_study run wrote, for the tests that
// recompute a finding's numbers from them: a file's columns by name, and a
// cell as a number (an empty cell, the study's "not defined", is NaN).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace gradflow::testing {

using CsvColumns = std::map<std::string, std::vector<std::string>>;

// The file's columns, each a vector of its cells top to bottom. The files
// these tests read have no quoted cells (names, numbers, booleans); one that
// had would be read wrong, so it fails the test instead.
inline CsvColumns read_csv_columns(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  auto split = [](const std::string& line) {
    std::vector<std::string> cells;
    std::stringstream s(line);
    for (std::string cell; std::getline(s, cell, ',');) cells.push_back(cell);
    if (!line.empty() && line.back() == ',') cells.emplace_back();
    return cells;
  };
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> names = split(line);
  CsvColumns out;
  for (const std::string& name : names) out[name];
  while (std::getline(in, line)) {
    EXPECT_EQ(line.find('"'), std::string::npos) << path << ": a quoted cell in " << line;
    const std::vector<std::string> cells = split(line);
    EXPECT_EQ(cells.size(), names.size()) << path << ": " << line;
    for (size_t i = 0; i < names.size() && i < cells.size(); ++i) out[names[i]].push_back(cells[i]);
  }
  return out;
}

inline double csv_value(const std::string& cell) { return cell.empty() ? NAN : std::stod(cell); }

// A file whose cells may be quoted (RFC 4180: a quoted cell holds commas and
// doubled quotes; criteria.csv's settings and texts do), as rows of cells,
// the header first.
inline std::vector<std::vector<std::string>> read_csv_rows(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::ostringstream text;
  text << in.rdbuf();
  const std::string s = text.str();
  std::vector<std::vector<std::string>> rows(1);
  std::string cell;
  bool quoted = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (quoted && c == '"' && i + 1 < s.size() && s[i + 1] == '"') {
      cell += '"', ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (!quoted && c == ',') {
      rows.back().push_back(cell), cell.clear();
    } else if (!quoted && c == '\n') {
      rows.back().push_back(cell), cell.clear();
      rows.emplace_back();
    } else {
      cell += c;
    }
  }
  if (rows.back().empty()) rows.pop_back();
  return rows;
}

// The same as columns by name.
inline CsvColumns read_quoted_csv_columns(const std::string& path) {
  const std::vector<std::vector<std::string>> rows = read_csv_rows(path);
  CsvColumns out;
  if (rows.empty()) return out;
  for (size_t r = 1; r < rows.size(); ++r) {
    EXPECT_EQ(rows[r].size(), rows[0].size()) << path << ": row " << r;
    for (size_t i = 0; i < rows[0].size() && i < rows[r].size(); ++i)
      out[rows[0][i]].push_back(rows[r][i]);
  }
  return out;
}

}  // namespace gradflow::testing
