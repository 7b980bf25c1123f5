// The claims' criteria (examples/study/criteria.h) held to what they say:
//   - a statement's words are carried by tests that test them ("matches"
//     by an equivalence test, "collapses" by a fall against the start, ...);
//   - judge() refuses a criterion the row does not declare, or one left out,
//     and never counts a manipulation check;
//   - every criterion the train part measures is recomputed here from the
//     CSV files a small run writes, by the test's own reading of its
//     declaration (columns, window, contrast, logs, seeds);
//   - every number a finding states is a cell of criteria.csv.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "examples/study/claims.h"
#include "examples/study/parts.h"
#include "tensor/parallel.h"

namespace gradflow::study {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool says(const Claim& c, const std::string& words) {
  return lower(c.statement).find(words) != std::string::npos;
}

// What a two-arm contrast varies, from the arms table: the scale mode, how
// W_Q and W_K start, how fast they learn.
std::set<std::string> varied(const Criterion& k) {
  if (k.measure.contrast.size() != 2) return {};
  const Arm a = arm(k.measure.contrast[0].arm), b = arm(k.measure.contrast[1].arm);
  std::set<std::string> out;
  if (a.scale != b.scale) out.insert("scale");
  if (a.qk_init_power != b.qk_init_power) out.insert("start");
  if (a.qk_lr_power != b.qk_lr_power) out.insert("rate");
  return out;
}

TEST(StudyCriteria, AStatementsWordsAreCarriedByTestsOfThem) {
  for (const Claim& c : claims()) {
    const std::string name = c.id + (c.identity ? " (identity)" : "");
    std::set<std::string> ids;
    int evidence = 0;
    bool within = false, absolute = false, directional = false;
    for (const Criterion& k : c.criteria) {
      EXPECT_TRUE(ids.insert(k.id).second) << name << " declares " << k.id << " twice";
      // Each criterion names the words it tests, as they stand in the statement.
      EXPECT_NE(c.statement.find(k.tests), std::string::npos)
          << name << k.id << " tests \"" << k.tests << "\", not in the statement";
      EXPECT_FALSE(k.plain.empty()) << name << k.id;
      if (k.role == Role::Check) continue;
      ++evidence;
      within = within || k.test == study::Test::Within;
      absolute = absolute || k.absolute || k.measure.from_start;
      directional = directional || k.test == study::Test::Above || k.test == study::Test::Below;
      // A measure's fall against its start is an absolute criterion by construction.
      if (k.measure.from_start) {
        EXPECT_EQ(k.measure.contrast.size() == 1, k.absolute) << name << k.id;
      }
    }
    EXPECT_GT(evidence, 0) << name << " has no criterion that counts";
    // An identity (Var(q . k) = d_k) and words of equality need an equivalence test.
    if (c.identity || says(c, "not smaller") || says(c, "matches") || says(c, " the same ") ||
        says(c, "equal") || std::regex_search(lower(c.statement), std::regex("(^| )as .* does"))) {
      EXPECT_TRUE(within) << name << ": words of equality need an equivalence test";
    }
    if (says(c, "collapse") || says(c, "vanish") || says(c, "tends to 0")) {
      EXPECT_TRUE(absolute) << name
                            << ": \"collapses\" or \"vanishes\" needs a fall against the "
                               "start or a fixed level, not only a ratio to another arm";
    }
    // A comparison of outcomes needs a one-sided test. ("d_k^(-1/4) smaller"
    // describes an arm; "smaller than" compares.)
    if (says(c, "worse") || says(c, "better") || says(c, "less") || says(c, "more ") ||
        says(c, "sharper") || says(c, "flatter") ||
        std::regex_search(lower(c.statement), std::regex("(smaller|larger|lower|higher) than"))) {
      EXPECT_TRUE(directional) << name << ": a comparison needs a one-sided test";
    }
    if (says(c, "at least as")) {
      EXPECT_TRUE(std::any_of(
          c.criteria.begin(), c.criteria.end(),
          [](const Criterion& k) { return k.test != study::Test::Within && k.margin != 0; }))
          << name << ": \"at least as\" is a non-inferiority test with a margin";
    }
    // "Because of X, not Y": contrasts that vary each alone.
    if (says(c, "because") || says(c, ", not ") || says(c, "rather than")) {
      std::set<std::string> alone;
      for (const Criterion& k : c.criteria)
        if (k.role == Role::Evidence && varied(k).size() == 1) alone.insert(*varied(k).begin());
      EXPECT_GE(alone.size(), 2u) << name
                                  << ": a cause named against another needs a contrast "
                                     "that varies each alone";
    }
  }
}

// A criterion the train part measures reads columns its files have, arms the
// arms table has, and a window that is a window.
TEST(StudyCriteria, MeasuresNameColumnsTheFilesHave) {
  std::map<std::string, std::set<std::string>> columns;
  for (const CsvFile& f : train_csvs(TrainResult{}))
    columns[f.name].insert(f.columns.begin(), f.columns.end());
  for (const Claim& c : claims())
    for (const Criterion& k : c.criteria) {
      const Measure& m = k.measure;
      if (m.file.empty()) continue;
      const std::string name = c.id + k.id;
      ASSERT_TRUE(columns.count(m.file)) << name << ": " << m.file;
      const std::string column = m.column == "solved" ? "reached_99" : m.column;
      EXPECT_TRUE(columns[m.file].count(column)) << name << ": " << m.file << " has no " << column;
      EXPECT_FALSE(m.contrast.empty()) << name;
      for (const Term& t : m.contrast) EXPECT_TRUE(find_arm(t.arm).has_value()) << name << t.arm;
      EXPECT_TRUE(m.last < 0 || m.last >= m.first) << name;
      if (m.from_start) {
        EXPECT_GT(m.first, 0) << name;
      }
    }
}

TEST(StudyCriteria, JudgeRefusesWhatTheRowDoesNotDeclare) {
  // C13 declares a to d.
  std::vector<Outcome> all = {{.criterion = "a", .passed = true},
                              {.criterion = "b", .passed = true},
                              {.criterion = "c", .passed = true},
                              {.criterion = "d", .passed = false}};
  EXPECT_EQ(judge("C13", all, {}, "").verdict, "partly holds");
  std::vector<Outcome> extra = all;
  extra.push_back({.criterion = "e", .passed = true});
  EXPECT_THROW(judge("C13", extra, {}, ""), Error);
  std::vector<Outcome> short_of_one(all.begin(), all.begin() + 3);
  EXPECT_THROW(judge("C13", short_of_one, {}, ""), Error);
  // ... unless the part says it was not tested: then it is not counted.
  EXPECT_EQ(judge("C13", short_of_one, {}, "", false, {"d"}).verdict, "holds");
  // A missing interval: no verdict.
  all[0].missing = true;
  EXPECT_EQ(judge("C13", all, {}, "").verdict, "unclear");
  // C8's (c) is a check: it never counts, and when it fails the verdict is unclear.
  const Verdict checked = judge("C8",
                                {{.criterion = "a", .passed = true},
                                 {.criterion = "b", .passed = true},
                                 {.criterion = "c", .passed = true}},
                                {}, "");
  EXPECT_EQ(checked.verdict, "holds");
  EXPECT_NE(checked.checks.find("(c)"), std::string::npos);
  EXPECT_EQ(checked.reason.find("(c)"), std::string::npos);
  EXPECT_EQ(judge("C8",
                  {{.criterion = "a", .passed = false},
                   {.criterion = "b", .passed = false},
                   {.criterion = "c", .passed = true}},
                  {}, "")
                .verdict,
            "does not hold");
  EXPECT_EQ(judge("C8",
                  {{.criterion = "a", .passed = true},
                   {.criterion = "b", .passed = true},
                   {.criterion = "c", .passed = false}},
                  {}, "")
                .verdict,
            "unclear");
}

// ---- A small run, its files, and every measure recomputed from them ----

Settings two_threads() {
  Settings s;
  s.threads = 2;
  return s;
}

// Every arm a measure names, at one d_k, 3 seeds, long enough for the late
// window (step 60 on).
const TrainResult& small_run() {
  static const TrainResult r = [] {
    set_num_threads(1);
    TrainOptions o;
    o.d_ks = {8};
    std::set<std::string> arms;
    for (const Claim& c : claims())
      for (const Criterion& k : c.criteria)
        for (const Term& t : k.measure.contrast) arms.insert(t.arm);
    o.modes.assign(arms.begin(), arms.end());
    o.seeds = 3;
    o.criteria_seeds = false;
    o.steps = 70;
    o.eval_every = 10;
    o.eval_examples = 8;
    o.batch = 8;
    return run_train(two_threads(), o);
  }();
  return r;
}

using Columns = std::map<std::string, std::vector<std::string>>;
Columns columns_of(const std::vector<CsvFile>& files, const std::string& name) {
  for (const CsvFile& f : files)
    if (f.name == name) {
      Columns out;
      for (const CsvRow& row : f.rows)
        for (size_t i = 0; i < row.size(); ++i) out[f.columns[i]].push_back(row[i].text());
      return out;
    }
  ADD_FAILURE() << "no " << name;
  return {};
}

double number(const std::string& cell) { return cell.empty() ? NAN : std::stod(cell); }

// The measure's estimate on (task, d_k), from the files alone.
Interval recomputed(const Criterion& k, const Columns& layers, const Columns& finals,
                    const std::string& task, int64_t d_k) {
  const Measure& m = k.measure;
  auto f = [&](double v) { return m.log ? std::log(v) : v; };
  const std::string d = std::to_string(d_k);
  if (m.file == "final_metrics.csv") {
    // seed -> arm -> the row's value
    std::map<std::string, std::map<std::string, std::string>> at;
    for (size_t i = 0; i < finals.at("mode").size(); ++i)
      if (finals.at("task")[i] == task && finals.at("d_k")[i] == d)
        at[finals.at("seed")[i]][finals.at("mode")[i]] =
            finals.at(m.column == "solved" ? "reached_99" : m.column)[i];
    if (m.column == "solved") {
      int64_t hits[2] = {0, 0}, n[2] = {0, 0};
      for (const auto& [seed, arms] : at)
        for (int i = 0; i < 2; ++i)
          if (arms.count(m.contrast[i].arm))
            hits[i] += arms.at(m.contrast[i].arm) == "true", ++n[i];
      return proportion_difference(hits[0], n[0], hits[1], n[1],
                                   k.test == study::Test::Within ? 0.90 : 0.95);
    }
    std::vector<double> values;
    for (const auto& [seed, arms] : at) {
      double v = 0;
      bool all = true;
      for (const Term& t : m.contrast) {
        all = all && arms.count(t.arm);
        if (all) v += t.weight * f(number(arms.at(t.arm)));
      }
      if (all && std::isfinite(v)) values.push_back(v);
    }
    return values.empty() ? no_interval()
                          : t_interval(values, k.test == study::Test::Within ? 0.9 : 0.95);
  }
  // train_layers.csv, the key layer: seed -> arm -> step -> value
  std::map<std::string, std::map<std::string, std::map<int64_t, double>>> at;
  for (size_t i = 0; i < layers.at("mode").size(); ++i)
    if (layers.at("task")[i] == task && layers.at("d_k")[i] == d &&
        layers.at("layer")[i] == key_layer(task))
      at[layers.at("seed")[i]][layers.at("mode")[i]][std::stoll(layers.at("step")[i])] =
          number(layers.at(m.column)[i]);
  std::vector<double> values;
  for (const auto& [seed, arms] : at) {
    bool all = true;
    for (const Term& t : m.contrast) all = all && arms.count(t.arm);
    if (!all) continue;
    int64_t last = m.last;
    if (last < 0) {
      last = INT64_MAX;
      for (const Term& t : m.contrast) last = std::min(last, arms.at(t.arm).rbegin()->first);
    }
    std::vector<int64_t> steps;
    for (const auto& [step, v] : arms.at(m.contrast[0].arm)) {
      bool everywhere = step >= m.first && step <= last;
      for (const Term& t : m.contrast) everywhere = everywhere && arms.at(t.arm).count(step);
      if (everywhere) steps.push_back(step);
    }
    if (steps.empty()) continue;
    double v = 0;
    for (const Term& t : m.contrast) {
      double sum = 0;
      for (int64_t s : steps) sum += arms.at(t.arm).at(s);
      v += t.weight * (f(sum / static_cast<double>(steps.size())) -
                       (m.from_start ? f(arms.at(t.arm).at(0)) : 0.0));
    }
    if (std::isfinite(v)) values.push_back(v);
  }
  return values.empty() ? no_interval()
                        : t_interval(values, k.test == study::Test::Within ? 0.9 : 0.95);
}

TEST(StudyCriteria, EveryMeasureIsRecomputedFromTheFiles) {
  const TrainResult& r = small_run();
  const std::vector<CsvFile> files = train_csvs(r);
  const Columns layers = columns_of(files, "train_layers.csv"),
                finals = columns_of(files, "final_metrics.csv");
  int compared = 0;
  for (const Claim& c : claims())
    for (const Criterion& k : c.criteria) {
      if (k.measure.file.empty()) continue;
      for (const CriterionResult& res : evaluate(c.id, k, r)) {
        const Interval want = recomputed(k, layers, finals, res.task, res.d_k);
        const std::string what = c.id + k.id + " " + res.task;
        ASSERT_EQ(res.estimate.n, want.n) << what;
        if (!std::isfinite(want.mean)) continue;
        // The CSV cells are printed with 17 significant digits.
        EXPECT_NEAR(res.estimate.mean, want.mean, 1e-9 * (1 + std::abs(want.mean))) << what;
        if (std::isfinite(want.lo)) {
          EXPECT_NEAR(res.estimate.lo, want.lo, 1e-9 * (1 + std::abs(want.lo))) << what;
        }
        ++compared;
      }
    }
  EXPECT_GE(compared, 20);
  // A criterion read over other steps than it declares gives other numbers:
  // the recomputation would catch an evaluator that read a window wrong.
  Criterion shifted = criterion("C21", "c");
  shifted.measure.first += 2;
  const CriterionResult moved = evaluate("C21", shifted, r).front();
  EXPECT_NE(moved.estimate.mean,
            recomputed(criterion("C21", "c"), layers, finals, moved.task, moved.d_k).mean);
}

// Every number in a finding's text, but those of the claim's own words
// (its criteria's plain text and tests), is a cell of its rows of
// criteria.csv: an estimate, a bound, a d_k, an n.
TEST(StudyCriteria, FindingsQuoteOnlyCriteriaCsv) {
  const TrainResult& r = small_run();
  std::vector<Verdict> verdicts = mechanism_claims(r);
  ASSERT_GE(verdicts.size(), 6u);
  const CsvFile csv = criteria_csv(verdicts);
  const Columns cells = columns_of({csv}, "criteria.csv");
  static const std::regex number(R"((^|[^\w.^/(-])(-?[0-9]+(\.[0-9]+)?(e[-+][0-9]+)?)x?)");
  for (const Verdict& v : verdicts) {
    const Finding f = finding_from(v);
    std::string text = f.text;
    // A partial verdict opens with how many of criteria.csv's evidence rows passed.
    if (v.verdict == "partly holds") {
      int passed = 0, rows = 0;
      for (size_t i = 0; i < cells.at("claim").size(); ++i)
        if (cells.at("claim")[i] == v.id && cells.at("role")[i] == "evidence")
          ++rows, passed += cells.at("passed")[i] == "true";
      const std::string held =
          std::to_string(passed) + " of " + std::to_string(rows) + " tests held. ";
      ASSERT_TRUE(text.starts_with(held)) << v.id << ": " << text;
      text.erase(0, held.size());
    }
    // The claim's own words: each criterion's plain text and test, as declared.
    for (const Criterion& k : claim(v.id).criteria)
      for (const std::string& own : {k.plain, test_words(k, true), test_words(k, false)}) {
        std::string capital = own;
        if (!capital.empty()) capital[0] = static_cast<char>(std::toupper(capital[0]));
        for (const std::string& s : {own, capital})
          for (size_t at = text.find(s); !s.empty() && at != std::string::npos; at = text.find(s))
            text.erase(at, s.size());
      }
    std::vector<std::string> row_cells;
    for (size_t i = 0; i < cells.at("claim").size(); ++i)
      if (cells.at("claim")[i] == v.id)
        for (const char* col : {"d_k", "n", "shown_estimate", "shown_lo", "shown_hi"})
          row_cells.push_back(cells.at(col)[i]);
    int numbers = 0;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), number);
         it != std::sregex_iterator(); ++it) {
      const std::string shown = (*it)[2];
      const double value = std::stod(shown);
      // Printed to 2 significant digits: a cell rounds to it.
      const bool found = std::any_of(row_cells.begin(), row_cells.end(), [&](const std::string& c) {
        return !c.empty() && (c == shown || significant(std::stod(c), 2) == shown ||
                              std::abs(std::stod(c) - value) <= 1e-12);
      });
      EXPECT_TRUE(found) << v.id << ": " << shown << " in \"" << f.text << "\"";
      ++numbers;
    }
    EXPECT_GT(numbers, 0) << v.id << ": " << f.text;
    EXPECT_EQ(f.files.front(), "criteria.csv");
  }
}

}  // namespace
}  // namespace gradflow::study
