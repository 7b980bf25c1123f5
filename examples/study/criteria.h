// A claim's criteria as data, declared in its row of the claims table
// (claims.h) before the runs that judge it, and the verdict computed from
// them alone (docs/study.md, "Declaring a claim before the run").
//
// A criterion names the quantity it reads (a column of a CSV file the run
// writes), the arms it contrasts, the steps it averages, the comparison
// (above or below a margin, within a margin: an equivalence test), the
// margin and the seeds it needs. For the train part's files the study
// computes it from those fields alone (evaluate); a test recomputes it from
// the files. Criteria of the other parts are declared the same way but
// measured by their part's own code (`measure` left empty), which reports
// each one's outcome by its id; judge() refuses an outcome for a criterion
// the row does not declare, or a declared one left out.
//
// A manipulation check (Role::Check) shows an arm was built as designed (a
// rate multiplied by d_k^(1/4) moves the logits about 4x further): it is
// printed apart and never counts as evidence, and a failed check makes the
// verdict "unclear", since the experiment was not the one declared.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "examples/study/stats/stats.h"

namespace gradflow::study {

using namespace gradflow::stats;

// One arm of a contrast and its weight: none - inv_sqrt_dk is {{"none", 1},
// {"inv_sqrt_dk", -1}}; a main effect of a 2 x 2 has four terms of +-1/2.
struct Term {
  std::string arm;
  double weight = 1;
};

// Where a criterion's estimate comes from, for the train part's runs. Each
// seed gives one value: the contrast of its arms' values (of their logs
// with `log`, so a difference of logs is a log ratio); the estimate is the
// mean over seeds with its interval.
struct Measure {
  // "train_layers.csv": the key layer's rows (key_layer), averaged within
  // each run over the steps from `first` to `last` (last < 0: until the
  // earliest last logged step of the contrasted runs), on the steps every
  // contrasted run logged. "final_metrics.csv": one value per run.
  std::string file{};
  std::string column{};  // the CSV column the value is read from
  std::vector<Term> contrast{};
  bool log = false;
  int64_t first = 0, last = -1;  // train_layers.csv only
  // train_layers.csv only: each run's mean over the steps minus its own
  // value at step 0, so a single arm's term is its change since the start
  // (an absolute fall or rise), not a comparison with another arm.
  bool from_start = false;
  std::string task{};   // one task, or "" for every task trained
  bool largest = true;  // each task at its largest d_k trained; false: at every d_k
  int64_t d_k = 0;      // one d_k only, where trained (0: as `largest` says)
};

enum class Test {
  Above,      // the whole 95% interval above the margin
  Below,      // the whole 95% interval below the margin
  Within,     // an equivalence test (TOST, level 0.05): the whole 90% interval inside +-margin
  ExactZero,  // every seed's value exactly 0 (arms that share their start)
};

enum class Role {
  Evidence,  // counts towards the verdict
  Check,     // a manipulation check: printed apart, never counted
};

struct Criterion {
  std::string id{};     // "a", "b", ...: the claim's id and this name it, "C20a"
  std::string tests{};  // the words of the statement it tests, as they stand there
  std::string plain{};  // what is measured, in a student's words (a noun phrase)
  Role role = Role::Evidence;
  Test test = Test::Above;
  double margin = 0;  // on the measure's scale (a log for a ratio)
  Measure measure{};  // empty file: measured by the part's own code
  // The seeds it needs, from the power calculation that docs/study.md
  // gives; 0: the part's own. Only the arms of its contrast train the extra seeds.
  int64_t seeds = 0;
  // A fall or rise of one arm against its own start ("collapses",
  // "vanishes"): set by measure.from_start, or by a part-measured criterion
  // that compares a quantity with its own earlier value.
  bool absolute = false;
};

// One criterion on one (task, d_k): its estimate over seeds and outcome.
struct CriterionResult {
  std::string claim_id{}, criterion{};  // "C20", "a"
  Role role = Role::Evidence;
  std::string task{};  // or a part-measured outcome's setting
  int64_t d_k = 0;
  Interval estimate = no_interval();  // on the measure's scale; for Within the 90% interval
  bool passed = false;
  bool missing = false;  // no interval (fewer than 2 seeds, or no finite value)
  std::string text{};    // a part-measured criterion's figures, in words
};

// A part-measured criterion's outcome on one setting (or over everything it
// compared, with `setting` empty). A criterion may have several, one per
// setting; like evaluate's rows, each counts once in the verdict.
struct Outcome {
  std::string criterion{};  // the declared id
  bool passed = false;
  bool missing = false;
  std::string setting{};              // "d_k 16", "post_ln": where, if it was measured per setting
  Interval estimate = no_interval();  // the number it rests on, when one does (criteria.csv)
  std::string text{};                 // what was measured, with its intervals, in words
};

// Whether `estimate` passes `test` at `margin` (ExactZero: mean and both
// bounds exactly 0, or one value of exactly 0).
bool passes(Test test, double margin, const Interval& estimate);
// The test in words: "the whole 95% interval below 1/4x", "equivalent within
// +-0.1 (TOST: ...)"; without `interval`, for a value that has none ("a
// value below 0.5": a count, a ratio of two means).
std::string test_words(const Criterion& c, bool interval = true);
// The arms of a contrast in words: "none - inv_sqrt_dk", "none_reparam - none_slow_qk -
// none_small_init + none" (weights +-1/2 as "(a + b - c - d) / 2").
std::string contrast_words(const std::vector<Term>& contrast);

}  // namespace gradflow::study
