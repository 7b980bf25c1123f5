// The train part's mechanism: what happens inside the layer where each task
// looks its answer up, and the arms that take 1/sqrt(d_k) apart (C20 on,
// claims_mechanism.cpp). Every criterion of these claims is a measure of the
// part's files, declared in its row; this file only asks for each claim's
// verdict on the runs (judge_on_runs, train_criteria.cpp's evaluate), so no
// threshold, window or arm of a verdict is written here.
//
//   C20  the gradient at the softmax's input, against its own start
//   C21  two arms that start soft, differing only in W_Q and W_K's rate
//   C22  unscaled attention against 1/sqrt(d_k) at the largest d_k
//   C23  what the softmax passes on (||dL/dS|| over ||dL/dP||), and growth
//   C24  the start and the rate of W_Q and W_K crossed: their interaction
//   C25  none_reparam against 1/sqrt(d_k): an equivalence test
//   C26  qk_norm against 1/sqrt(d_k): non-inferiority
//   C27  C21's arms on recall: the weight on the key that holds the answer
#include "examples/study/claims.h"
#include "examples/study/parts.h"

namespace gradflow::study {

Verdict judge_on_runs(const std::string& id, const TrainResult& r,
                      const std::vector<Outcome>& outcomes, const std::string& measured) {
  std::vector<CriterionResult> results;
  std::vector<std::string> untested;
  for (const Criterion& c : claim(id).criteria) {
    if (c.measure.file.empty()) continue;  // the caller's outcome
    const std::vector<CriterionResult> rows = evaluate(id, c, r);
    if (rows.empty()) untested.push_back(c.id);
    results.insert(results.end(), rows.begin(), rows.end());
  }
  return judge(id, outcomes, results, measured, false, untested);
}

std::vector<Verdict> mechanism_claims(const TrainResult& r) {
  std::vector<Verdict> out;
  if (r.layers.empty()) return out;
  for (const Claim& c : claims_of_the_mechanism()) {
    Verdict v = judge_on_runs(c.id, r);
    const bool tested = std::any_of(v.results.begin(), v.results.end(),
                                    [](const auto& x) { return x.role == Role::Evidence; });
    if (tested) out.push_back(v);  // a run without the claim's arms does not mention it
  }
  return out;
}

}  // namespace gradflow::study
