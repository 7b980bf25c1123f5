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

}  // namespace gradflow::testing
