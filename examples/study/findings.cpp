// What the run shows, for a student: each finding is one claim's verdict in
// plain words. The title is the claim's plain statement, qualified by the
// verdict (and for a partial one by where it held); the text gives each
// criterion's estimate and outcome, every number as criteria.csv shows it.
// So a finding cannot say more than its claim tested: its words are the
// claim's, its numbers the criteria's (StudyCriteria.FindingsQuoteOnlyTheCsv
// checks the second).
#include <algorithm>
#include <cmath>

#include "examples/study/claims.h"

namespace gradflow::study {

double shown(const Criterion& c, double value) {
  return c.measure.log && std::isfinite(value) ? std::exp(value) : value;
}

std::string shown_text(const Criterion& c, double value) {
  if (!std::isfinite(value)) return "-";
  return significant(shown(c, value), 2) + (c.measure.log ? "x" : "");
}

namespace {

std::string where(const CriterionResult& r) {
  std::string out = r.task.empty() ? "" : (r.d_k > 0 ? "`" + r.task + "`" : r.task);
  if (r.d_k > 0) out += " at d_k " + std::to_string(r.d_k);
  return out;
}

// "0.15x [0.11, 0.2]" (n = 5)"; a bare estimate when it has no interval.
std::string estimate_text(const Criterion& c, const CriterionResult& r) {
  const Interval& e = r.estimate;
  if (!std::isfinite(e.mean)) return "";
  std::string out = shown_text(c, e.mean);
  if (std::isfinite(e.lo) && std::isfinite(e.hi))
    out += " [" + shown_text(c, e.lo) + ", " + shown_text(c, e.hi) + "]";
  if (e.n > 0) out += " (n = " + std::to_string(e.n) + ")";
  return out;
}

std::string capitalised(std::string s) {
  if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
  return s;
}

// How many of the verdict's tests held: "3 of 5 tests held", one per
// criterion and setting, as judge() counts them.
std::string tests_held(const Verdict& v) {
  int held = 0, all = 0;
  for (const CriterionResult& r : v.results)
    if (r.role == Role::Evidence) ++all, held += r.passed && !r.missing;
  return std::to_string(held) + " of " + std::to_string(all) + " tests held";
}

}  // namespace

std::string title_of(const Verdict& v) {
  const std::string plain = claim(v.id, v.identity).plain;
  if (v.verdict == "holds") return plain;
  if (v.verdict == "partly holds") return "Partly: " + plain;
  if (v.verdict == "does not hold") return "Not shown: " + plain;
  return "Unclear in this run: " + plain;
}

Finding finding_from(const Verdict& v) {
  const Claim& row = claim(v.id, v.identity);
  Finding f{
      .title = title_of(v), .figure = row.figure, .claim_id = v.id, .files = {"criteria.csv"}};
  // How much of a partial verdict held goes in the text: the title stays the
  // same while the verdict does.
  if (v.verdict == "partly holds") f.text = capitalised(tests_held(v)) + ".";
  std::string checks;
  for (const Criterion& c : row.criteria) {
    std::string rows;
    bool all = true, any = false;
    for (const CriterionResult& r : v.results) {
      if (r.criterion != c.id) continue;
      any = true;
      all = all && r.passed && !r.missing;
      const std::string e = estimate_text(c, r), w = where(r);
      const std::string piece = w + (w.empty() || e.empty() ? "" : " ") + e;
      if (!piece.empty()) rows += (rows.empty() ? "" : "; ") + piece;
    }
    if (!any) continue;
    if (!c.measure.file.empty() &&
        std::find(f.files.begin(), f.files.end(), c.measure.file) == f.files.end())
      f.files.push_back(c.measure.file);
    std::string outcome = all ? "yes" : "no";
    if (!all) {
      std::string which;
      for (const CriterionResult& r : v.results)
        if (r.criterion == c.id && !where(r).empty())
          which += (which.empty() ? "" : ", ") + where(r) + " " +
                   (r.missing ? "unclear" : yes_no(r.passed));
      if (!which.empty()) outcome = which;
    }
    bool interval = false;
    for (const CriterionResult& r : v.results)
      interval = interval || (r.criterion == c.id && std::isfinite(r.estimate.lo));
    const std::string sentence = capitalised(c.plain) + (rows.empty() ? "" : ": " + rows) +
                                 ". The claim asks for " + test_words(c, interval) + ": " +
                                 outcome + ".";
    if (c.role == Role::Check)
      checks += " " + sentence;
    else
      f.text += (f.text.empty() ? "" : " ") + sentence;
  }
  if (!checks.empty())
    f.text += " Checks that the arms were built as declared (not evidence):" + checks;
  // A claim measured only by its criteria has no summary line ("-"): say nothing for it.
  const std::string measured = v.measured == "-" ? "" : v.measured + ". ";
  f.detail = v.id + " " + v.verdict + ". " + measured + v.reason +
             (v.checks.empty() ? "" : ". Checks: " + v.checks) + ".";
  return f;
}

}  // namespace gradflow::study
