// The study's claims as one table: each claim's id, its statement, why it
// should hold, the heading of docs/study.md that explains it, and its
// criteria, declared as data before the runs that judge them (criteria.h).
//
// A part judges claims; it does not word them or choose their tests. The
// train part computes each criterion with a measure from the row alone
// (evaluate, train_criteria.cpp); the other parts measure theirs and report
// each declared criterion's outcome by its id; judge() turns the outcomes
// into the verdict, by one rule for every claim: holds when every evidence
// criterion passed, does not hold when none did, partly holds otherwise,
// unclear when one had no interval or a manipulation check failed. So a
// claim is worded once, here, and docs/study.md states it in the same words
// as a bold line,
//
//   **C3. <statement>.**               a claim
//   **C3 (identity). <statement>.**    the identity beside it (C1 to C4)
//
// under the heading `section`. StudyClaims (tests/examples/study_claims_test.cpp)
// holds the table, the parts and docs/study.md together: every statement is
// such a line of the page under its section, every id a part judges is a row,
// every pointer into docs/study.md in the code names a heading it has, and a
// statement's words are carried by its criteria ("not smaller" and "matches"
// by an equivalence test, "collapses" by a fall against the start, "because
// of X, not Y" by contrasts that vary each alone).
#pragma once

#include <string>
#include <vector>

#include "examples/study/criteria.h"
#include "examples/study/study.h"

namespace gradflow::study {

struct Claim {
  std::string id;         // "C3"
  bool identity = false;  // C1 to C4's variances, judged by an equivalence test
  std::string statement;  // one sentence without its final full stop, as the report prints it
  std::string why;        // the argument in plain words, for the report's "Why it should hold"
  std::string section;    // the heading of docs/study.md (without its #s) that explains it
  // The statement for a student, in plain words that say no more than it
  // does: a finding's title when the claim holds (findings.cpp).
  std::string plain{};
  std::vector<Criterion> criteria{};
  std::string figure{};  // the run's figure that shows it, for its finding ("" : none)
  // When and why the criteria last changed, or empty: docs/study.md's
  // "History of the criteria" gives the reason under the claim's id.
  std::string changed{};
};

// Every claim, in id order; C1 to C4 have an identity row (identity = true)
// before their claim row, and C1 and C2 are identities only.
const std::vector<Claim>& claims();

// The table's rows, in three files by the parts that measure them:
// claims.cpp (C1 to C8: initialisation, training's balance), claims_parts.cpp
// (C9 to C19: the --full parts, sgd, depth, length), claims_mechanism.cpp
// (C20 on: the train part's mechanism, each criterion a measure of its files).
std::vector<Claim> claims_at_init_and_training();
std::vector<Claim> claims_of_other_parts();
std::vector<Claim> claims_of_the_mechanism();
std::vector<Claim> claims_of_the_qk_rate();  // claims_qk_rate.cpp: C28 to C30

// The headings of docs/study.md's "The claims" that the rows point to, one
// per group of claims, in the page's order.
inline constexpr const char* kAtInit = "Claims at initialisation";
inline constexpr const char* kTraining = "Claims about training";
inline constexpr const char* kFull = "Claims of the `--full` training parts";
inline constexpr const char* kSgd = "Claims under plain SGD";
inline constexpr const char* kDepth = "Claims about depth";
inline constexpr const char* kKeys = "Claims about the number of keys";
inline constexpr const char* kQkRate = "Claims about the Q/K learning rate";

// The row (id, identity); Error naming the id when the table has none.
const Claim& claim(const std::string& id, bool identity = false);

// A verdict on that claim with its id, claim (the statement), why and
// identity filled from the table, and nothing measured or judged yet. Error
// for an id not in the table.
Verdict verdict_for(const std::string& id, bool identity = false);

// The declared criterion `name` of claim `id` (Error when the row has none):
// a part reads its margin and test from here, not from a constant of its own.
const Criterion& criterion(const std::string& id, const std::string& name, bool identity = false);

// The verdict on claim `id` from its criteria's outcomes: each declared
// criterion exactly once, either an Outcome (part-measured) or its rows in
// `results` (evaluate). A criterion the row does not declare, or one left
// out, is an Error (the part would be judging something else). An outcome
// with `missing` makes the verdict unclear; one not tested in this run (its
// arms not trained) has no rows and no outcome when `untested` names it.
// `measured` is what the part measured, in words, printed beside.
Verdict judge(const std::string& id, const std::vector<Outcome>& outcomes,
              const std::vector<CriterionResult>& results, const std::string& measured,
              bool identity = false, const std::vector<std::string>& untested = {});

// The claims whose verdicts open the report ("What this run shows"), in the
// order a student should read them: what fails, where the gradient goes,
// what the arms that take 1/sqrt(d_k) apart show, the other scales, SGD,
// depth. A claim not listed is in the claims table only.
const std::vector<std::string>& story();

// findings.cpp: a claim's verdict as a finding for the report's first
// section (study.h, Finding): the title from the verdict and the claim's
// plain words, the text from its criteria's rows.
Finding finding_from(const Verdict& v);
std::string title_of(const Verdict& v);
// A criterion's value as a finding and criteria.csv's `shown` columns show
// it: a log ratio as the ratio (exp), anything else as it is.
double shown(const Criterion& c, double value);
std::string shown_text(const Criterion& c, double value);

}  // namespace gradflow::study
