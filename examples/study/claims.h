// The study's claims as one table: each claim's id, its statement, why it
// should hold, and the heading of docs/study.md that explains it.
//
// A part judges claims; it does not word them. It starts each Verdict from
// verdict_for(id), which fills the id, the statement (Verdict::claim) and the
// argument (Verdict::why) from this table, and adds only what it measured and
// the criterion (measured, verdict, reason). So a claim is worded once, here,
// and docs/study.md states it in the same words as a bold line,
//
//   **C3. <statement>.**               a claim
//   **C3 (identity). <statement>.**    the identity beside it (C1 to C4)
//
// under the heading `section`. StudyClaims (tests/examples/study_claims_test.cpp)
// holds the table, the parts and docs/study.md together: every statement is
// such a line of the page under its section, every id a part judges is a row,
// and every pointer into docs/study.md in the code names a heading it has.
#pragma once

#include <string>
#include <vector>

#include "examples/study/study.h"

namespace gradflow::study {

struct Claim {
  std::string id;         // "C3"
  bool identity = false;  // C1 to C4's variances, judged by an equivalence test
  std::string statement;  // one sentence without its final full stop, as the report prints it
  std::string why;        // the argument in plain words, for the report's "Why it should hold"
  std::string section;    // the heading of docs/study.md (without its #s) that explains it
};

// Every claim, in id order; C1 to C4 have an identity row (identity = true)
// before their claim row, and C1 and C2 are identities only.
const std::vector<Claim>& claims();

// The row (id, identity); Error naming the id when the table has none.
const Claim& claim(const std::string& id, bool identity = false);

// A verdict on that claim with its id, claim (the statement), why and
// identity filled from the table, and nothing measured or judged yet: the
// part fills measured, verdict and reason. Error for an id not in the table.
Verdict verdict_for(const std::string& id, bool identity = false);

}  // namespace gradflow::study
