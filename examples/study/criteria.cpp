// A verdict from its declared criteria, by one rule for every claim
// (criteria.h): each criterion's test applied to its estimate, the
// manipulation checks apart, and the outcomes in words.
#include "examples/study/criteria.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "examples/study/claims.h"
#include "tensor/error.h"

namespace gradflow::study {

bool passes(Test test, double margin, const Interval& e) {
  switch (test) {
    case Test::Above:
      return has_interval(e) && e.lo > margin;
    case Test::Below:
      return has_interval(e) && e.hi < margin;
    case Test::Within:
      return has_interval(e) && e.lo > -margin && e.hi < margin;
    case Test::ExactZero:
      return e.n > 0 && e.mean == 0 && (!std::isfinite(e.lo) || (e.lo == 0 && e.hi == 0));
  }
  return false;
}

namespace {

// A margin on a log scale as the ratio it stands for: log(1/4) -> "1/4", log 2 -> "2".
std::string ratio_words(double log_margin) {
  const double r = std::exp(log_margin);
  if (r < 1 && std::abs(1 / r - std::round(1 / r)) < 1e-9)
    return "1/" + significant(std::round(1 / r));
  return significant(r, 3);
}

}  // namespace

std::string test_words(const Criterion& c, bool interval) {
  const bool ratio = c.measure.log;
  const std::string m = ratio ? ratio_words(c.margin) + "x" : significant(c.margin, 3);
  const std::string what = interval ? "the whole 95% interval " : "a value ";
  switch (c.test) {
    case Test::Above:
      return what + "above " + m;
    case Test::Below:
      return what + "below " + m;
    case Test::Within:
      return "equivalent within " +
             (ratio ? ratio_words(-c.margin) + "x to " + ratio_words(c.margin) + "x"
                    : "+-" + significant(c.margin, 3)) +
             (interval ? " (TOST: the whole 90% interval inside)" : "");
    case Test::ExactZero:
      return "exactly 0 at every seed";
  }
  return "";
}

std::string contrast_words(const std::vector<Term>& contrast) {
  if (contrast.empty()) return "";
  if (contrast.size() == 1) return contrast[0].arm;
  const bool halves = std::all_of(contrast.begin(), contrast.end(),
                                  [](const Term& t) { return std::abs(t.weight) == 0.5; });
  std::string out;
  for (const Term& t : contrast) {
    const bool minus = t.weight < 0;
    if (out.empty())
      out += minus ? "-" : "";
    else
      out += minus ? " - " : " + ";
    out += t.arm;
  }
  return halves ? "(" + out + ") / 2" : out;
}

const Criterion& criterion(const std::string& id, const std::string& name, bool identity) {
  for (const Criterion& c : claim(id, identity).criteria)
    if (c.id == name) return c;
  fail("study claims: ", id, " declares no criterion '", name, "' (examples/study/claims.cpp)");
}

Verdict judge(const std::string& id, const std::vector<Outcome>& outcomes,
              const std::vector<CriterionResult>& results, const std::string& measured,
              bool identity, const std::vector<std::string>& untested) {
  const Claim& row = claim(id, identity);
  Verdict v = verdict_for(id, identity);
  v.measured = measured.empty() ? "-" : measured;
  std::set<std::string> declared;
  for (const Criterion& c : row.criteria) declared.insert(c.id);
  for (const Outcome& o : outcomes)
    if (!declared.count(o.criterion))
      fail("study claims: a part judged ", id, " on '", o.criterion,
           "', which its row does not declare (examples/study/claims.cpp)");
  for (const CriterionResult& r : results)
    if (!declared.count(r.criterion) || r.claim_id != id)
      fail("study claims: a result for ", r.claim_id, r.criterion, " was handed to ", id);
  // Every outcome becomes a row, as evaluate's are: one per setting.
  std::vector<CriterionResult> rows = results;
  for (const Outcome& o : outcomes) {
    const Criterion& c = criterion(id, o.criterion, identity);
    rows.push_back({.claim_id = id,
                    .criterion = o.criterion,
                    .role = c.role,
                    .task = o.setting,
                    .estimate = o.estimate,
                    .passed = o.passed,
                    .missing = o.missing,
                    .text = o.text});
  }
  int evidence = 0, passed = 0;
  bool missing = false, check_failed = false;
  for (const Criterion& c : row.criteria) {
    std::string said;
    int here = 0, ok = 0, absent = 0;
    for (const CriterionResult& r : rows) {
      if (r.criterion != c.id) continue;
      ++here, ok += r.passed && !r.missing, absent += r.missing;
      const std::string where = r.task + (r.d_k > 0 ? " d_k " + std::to_string(r.d_k) : "");
      said += (said.empty() ? "" : ", ") + (r.text.empty() ? "" : r.text + " ") +
              (where.empty() ? "" : where + " ") + (r.missing ? "unclear" : yes_no(r.passed));
    }
    const bool tested = here > 0;
    if (!tested && std::find(untested.begin(), untested.end(), c.id) == untested.end())
      fail("study claims: ", id, "'s criterion ", c.id, " was declared but not judged");
    const std::string line = "(" + c.id + ") " + c.tests + " [" + test_words(c) +
                             "]: " + (tested ? said : "not tested in this run");
    if (c.role == Role::Check) {
      v.checks += (v.checks.empty() ? "" : "; ") + line;
      check_failed = check_failed || ok + absent < here;
      missing = missing || absent > 0;
      continue;
    }
    v.reason += (v.reason.empty() ? "" : "; ") + line;
    evidence += here, passed += ok;
    missing = missing || absent > 0;
  }
  v.results = rows;
  if (evidence == 0) {
    v.verdict = "unclear";
    if (v.reason.empty()) v.reason = "nothing was tested in this run";
  } else if (missing) {
    v.verdict = "unclear";
  } else if (check_failed) {
    v.verdict = "unclear";
    v.reason += "; a manipulation check failed, so the arms were not as declared";
  } else {
    v.verdict = verdict_of(passed, evidence);
  }
  return v;
}

}  // namespace gradflow::study
