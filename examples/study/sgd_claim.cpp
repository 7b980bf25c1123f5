// The sgd part's claim, C13: none against 1/sqrt(d_k) under plain SGD,
// paired by comparison seed (parts.h, "sgd", says how the seeds are split).
// This file holds the comparison seeds' runs and their figures, C13Numbers
// (everything C13, its finding and the no-clip paragraph read) and the
// verdict; sgd_report.cpp words them.
//
// Claim judged here: C13.
#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "examples/study/claims.h"
#include "examples/study/parts.h"
#include "examples/study/sgd.h"

namespace gradflow::study {

std::vector<const FinalRow*> compared_runs(const std::vector<SgdRow>& rows, const std::string& mode,
                                           int64_t d_k, double lr, bool clipped) {
  std::vector<const FinalRow*> out;
  for (const SgdRow& r : rows)
    if (!r.selection && (r.clip > 0) == clipped && r.final.run.mode == mode &&
        r.final.run.d_k == d_k && r.final.lr == lr)
      out.push_back(&r.final);
  std::sort(out.begin(), out.end(),
            [](const FinalRow* x, const FinalRow* y) { return x->run.seed < y->run.seed; });
  return out;
}

namespace {

// a - b paired by seed over the seeds where both values are finite; n = 0
// when none are.
Interval paired(const std::vector<const FinalRow*>& a, const std::vector<const FinalRow*>& b,
                Value value) {
  std::vector<double> x, y;
  for (const FinalRow* ra : a)
    for (const FinalRow* rb : b)
      if (ra->run.seed == rb->run.seed && std::isfinite(value(*ra)) && std::isfinite(value(*rb)))
        x.push_back(value(*ra)), y.push_back(value(*rb));
  return x.empty() ? no_interval() : paired_difference(x, y);
}

}  // namespace

Interval over_runs(const std::vector<const FinalRow*>& runs, Value value) {
  std::vector<double> v;
  for (const FinalRow* r : runs) v.push_back(value(*r));
  return interval_of_finite(v);
}

int64_t diverged(const std::vector<const FinalRow*>& runs) {
  int64_t n = 0;
  for (const FinalRow* r : runs) n += r->diverged;
  return n;
}

double log_ratio(const FinalRow& r) {
  return r.grad_ratio_qv > 0 ? std::log10(r.grad_ratio_qv) : kNaN;
}
double accuracy(const FinalRow& r) { return r.diverged ? kNaN : r.final_accuracy; }
double clipped(const FinalRow& r) { return r.clipped_fraction; }
double qk_share(const FinalRow& r) { return r.qk_grad_share; }

std::string percent(double fraction) {
  return std::isfinite(fraction) ? std::to_string(std::lround(100 * fraction)) + "%" : "-";
}

C13Numbers c13_numbers(const std::vector<SgdRow>& rows) {
  C13Numbers c;
  const std::vector<SgdBest> best = sgd_best(rows);
  c.complete = true;
  for (auto [to, mode, d_k] : {std::tuple{&c.none_256, "none", kSgdLargeDk},
                               {&c.ref_256, kDefaultMode, kSgdLargeDk},
                               {&c.none_16, "none", kSgdSmallDk},
                               {&c.ref_16, kDefaultMode, kSgdSmallDk}}) {
    const SgdBest* b = find_best(best, mode, d_k);
    if (b) *to = *b;
    c.complete = c.complete && b;
  }
  if (!c.complete) return c;
  auto at = [&](const SgdBest& b, bool clipped) {
    return compared_runs(rows, b.mode, b.d_k, b.best_lr, clipped);
  };
  const auto none_256 = at(c.none_256, true), ref_256 = at(c.ref_256, true),
             none_16 = at(c.none_16, true), ref_16 = at(c.ref_16, true);
  c.ratio_common =
      paired(compared_runs(rows, "none", kSgdLargeDk, kSgdCommonLr, true),
             compared_runs(rows, kDefaultMode, kSgdLargeDk, kSgdCommonLr, true), &log_ratio);
  c.ratio_chosen = paired(none_256, ref_256, &log_ratio);
  c.gap_256 = paired(none_256, ref_256, &capped_loss);
  c.gap_16 = paired(none_16, ref_16, &capped_loss);
  {  // seed by seed, over the seeds with all four runs
    std::map<int64_t, std::vector<double>> by_seed;
    for (const auto* runs : {&none_256, &ref_256, &none_16, &ref_16})
      for (const FinalRow* r : *runs) by_seed[r->run.seed].push_back(capped_loss(*r));
    std::vector<double> large, small;
    for (const auto& [seed, v] : by_seed)
      if (v.size() == 4) large.push_back(v[0] - v[1]), small.push_back(v[2] - v[3]);
    c.gap_growth = large.empty() ? no_interval() : paired_difference(large, small);
  }
  c.share_gap = paired(none_256, ref_256, &qk_share);
  c.clipped_none = over_runs(none_256, &clipped), c.clipped_ref = over_runs(ref_256, &clipped);
  c.share_none = over_runs(none_256, &qk_share), c.share_ref = over_runs(ref_256, &qk_share);
  c.accuracy_none = over_runs(none_256, &accuracy), c.accuracy_ref = over_runs(ref_256, &accuracy);
  const auto free_none_256 = at(c.none_256, false), free_ref_256 = at(c.ref_256, false);
  c.free_accuracy_none = over_runs(free_none_256, &accuracy);
  c.free_accuracy_ref = over_runs(free_ref_256, &accuracy);
  c.free_gap_256 = paired(free_none_256, free_ref_256, &capped_loss);
  c.free_ratio = paired(free_none_256, free_ref_256, &log_ratio);
  c.free_change_none = paired(free_none_256, none_256, &capped_loss);
  c.free_change_ref = paired(free_ref_256, ref_256, &capped_loss);
  c.free_diverged_none = diverged(free_none_256), c.free_diverged_ref = diverged(free_ref_256);
  c.free_runs = static_cast<int64_t>(free_none_256.size());
  return c;
}

namespace {

// Whose W_Q and W_K hold the larger share of the squared gradient norm, by
// the paired interval: "none's", "1/sqrt(d_k)'s" or "neither's detectably".
std::string larger_share(const Interval& share_gap) {
  if (!has_interval(share_gap)) return "neither's detectably";
  return share_gap.lo > 0 ? "none's" : share_gap.hi < 0 ? "1/sqrt(d_k)'s" : "neither's detectably";
}

}  // namespace

std::string premise_text(const C13Numbers& c) {
  return "at d_k 256 the clip fired in " + percent(c.clipped_none.mean) + " of none's steps and " +
         percent(c.clipped_ref.mean) +
         " of 1/sqrt(d_k)'s (means over seeds; a clipped gradient is cut to norm 1, so its "
         "step, momentum aside, has length lr), and W_Q and W_K held " +
         percent(c.share_none.mean) + " of none's squared gradient norm against " +
         percent(c.share_ref.mean) + " (paired difference " + format_bounds(c.share_gap) +
         "): the larger share is " + larger_share(c.share_gap);
}

std::string no_clip_text(const C13Numbers& c) {
  return "without the clip, at d_k 256 and the same rates: capped loss none - 1/sqrt(d_k) " +
         format_bounds(c.free_gap_256) + " nats; log10 W_Q/W_V ratio difference " +
         format_bounds(c.free_ratio) + "; unclipped - clipped capped loss " +
         format_bounds(c.free_change_none) + " for none, " + format_bounds(c.free_change_ref) +
         " for 1/sqrt(d_k); diverged " + std::to_string(c.free_diverged_none) + " and " +
         std::to_string(c.free_diverged_ref) + " of " + std::to_string(c.free_runs);
}

Verdict sgd_claim(const std::vector<SgdRow>& rows) {
  const C13Numbers c = c13_numbers(rows);
  const std::vector<std::string> all = {"a", "b", "c", "d"};
  if (!c.complete)
    return judge("C13", {}, {}, "the selection lacks none or inv_sqrt_dk at d_k 16 or 256", false,
                 all);
  auto chosen = [](const SgdBest& b) {
    return b.mode + " " + significant(b.best_lr, 2) + " at d_k " + std::to_string(b.d_k) +
           " (capped loss " + significant(b.best_loss) + ")";
  };
  const std::string measured =
      "learning rates chosen on " + std::to_string(c.none_256.seeds) +
      " selection seeds: " + chosen(c.none_256) + ", " + chosen(c.ref_256) + ", " +
      chosen(c.none_16) + ", " + chosen(c.ref_16) +
      "; on the comparison seeds, none - 1/sqrt(d_k) paired by seed: log10 W_Q/W_V "
      "gradient ratio at d_k 256 " +
      format_bounds(c.ratio_common) + " at the common lr " + significant(kSgdCommonLr) + ", " +
      format_bounds(c.ratio_chosen) + " at the chosen ones; capped loss " +
      format_bounds(c.gap_256) + " nats at d_k 256, " + format_bounds(c.gap_16) +
      " at d_k 16, their difference seed by seed " + format_bounds(c.gap_growth) + "; " +
      no_clip_text(c) + ". The premise, not a criterion: " + premise_text(c) +
      ", so a step was not as large as its gradient in " + percent(c.clipped_none.mean) +
      " of none's steps";
  auto row = [](const char* name, const Interval& e, const std::string& setting) {
    const Criterion& k = criterion("C13", name);
    return Outcome{.criterion = name,
                   .passed = passes(k.test, k.margin, e),
                   .missing = !has_interval(e),
                   .setting = setting,
                   .estimate = e};
  };
  return judge("C13",
               {row("a", c.ratio_common, "d_k 256, lr " + significant(kSgdCommonLr)),
                row("b", c.ratio_chosen, "d_k 256, chosen lr"), row("c", c.gap_256, "d_k 256"),
                row("d", c.gap_growth, "d_k 256 - 16")},
               {}, measured);
}

}  // namespace gradflow::study
