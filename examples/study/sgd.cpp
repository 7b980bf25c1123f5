// The sgd part: the attention scale under plain SGD with momentum. Every
// other training part uses AdamW, whose step does not depend on the
// gradient's size; the textbook story ("without 1/sqrt(d_k) the softmax
// saturates, the gradient to W_Q and W_K vanishes, so the layer cannot
// learn") is about a step that is as large as its gradient, which is SGD's.
// Its premise is checked, not assumed: with the gradient clipped at norm 1
// a clipped step has length lr (momentum aside) whatever the gradient's size
// (normalised SGD),
// so the part reports how often the clip fired and W_Q's and W_K's share of
// the gradient, and runs the comparison once more without the clip.
//
// Three arms (none, inv_sqrt_dk, inv_dk) at d_k 16 and 256 on the reverse
// task over a small grid of learning rates on the selection seeds; each
// (mode, d_k) takes the rate that did best there, and none and inv_sqrt_dk
// are then compared at those rates on other seeds (parts.h says which).
//
// This file holds the options and the runs: the selection, each (mode,
// d_k)'s chosen rate and the comparison. sgd_claim.cpp judges C13 on them;
// sgd_report.cpp words the finding and writes the tables and the section.
#include <algorithm>
#include <limits>
#include <map>

#include "examples/study/claims.h"
#include "examples/study/parts.h"
#include "examples/study/sgd.h"

namespace gradflow::study {

TaskSetup sgd_task() {
  TaskSetup t = reverse_setup();
  t.steps = 150;
  return t;
}

SgdOptions sgd_options(const Settings& settings) {
  SgdOptions o;
  // The comparison seeds C13's criteria need (claims_parts.cpp), if more.
  for (const Criterion& c : claim("C13").criteria) o.seeds = std::max(o.seeds, c.seeds);
  if (settings.full) o.seeds = std::max<int64_t>(o.seeds, 10), o.selection_seeds = 3;
  if (settings.full) o.compared = o.modes;
  if (settings.seeds > 0)
    o.seeds = settings.seeds, o.selection_seeds = std::min(o.selection_seeds, settings.seeds);
  o.selection_first_seed = std::max<int64_t>(100, o.seeds);
  if (settings.steps > 0) o.task.steps = settings.steps;
  return o;
}

namespace {

RunSpec sgd_spec(const Settings& settings, const SgdOptions& o, const std::string& mode,
                 int64_t d_k, double lr, int64_t seed, double clip) {
  RunSpec spec;
  spec.key = {o.task.task, mode, d_k, seed};
  spec.task = o.task;
  spec.task.lr = lr;
  spec.seed = settings.seed;
  spec.optimizer = "sgd";
  spec.clip = clip;
  return spec;
}

}  // namespace

const SgdBest* find_best(const std::vector<SgdBest>& best, const std::string& mode, int64_t d_k) {
  for (const SgdBest& b : best)
    if (b.mode == mode && b.d_k == d_k) return &b;
  return nullptr;
}

std::vector<RunSpec> sgd_selection_runs(const Settings& settings, const SgdOptions& o) {
  std::vector<RunSpec> runs;
  for (int64_t d_k : o.d_ks)
    for (const std::string& mode : o.modes)
      for (double lr : o.lrs)
        for (int64_t i = 0; i < o.selection_seeds; ++i)
          runs.push_back(sgd_spec(settings, o, mode, d_k, lr, o.selection_first_seed + i, o.clip));
  return runs;
}

std::vector<SgdBest> sgd_best(const std::vector<SgdRow>& rows) {
  // (mode, d_k) -> lr -> capped losses, in the order they came.
  std::map<std::pair<std::string, int64_t>, std::map<double, std::vector<double>>> at;
  std::vector<std::pair<std::string, int64_t>> order;
  for (const SgdRow& r : rows) {
    if (!r.selection) continue;
    std::pair<std::string, int64_t> key{r.final.run.mode, r.final.run.d_k};
    if (std::find(order.begin(), order.end(), key) == order.end()) order.push_back(key);
    at[key][r.final.lr].push_back(capped_loss(r.final));
  }
  std::vector<SgdBest> out;
  for (const auto& [mode, d_k] : order) {
    SgdBest b{mode, d_k, 0, std::numeric_limits<double>::infinity(), 0};
    for (const auto& [lr, losses] : at[{mode, d_k}]) {
      const double m = mean(losses);
      if (m < b.best_loss)
        b.best_loss = m, b.best_lr = lr, b.seeds = static_cast<int64_t>(losses.size());
    }
    out.push_back(b);
  }
  return out;
}

std::vector<RunSpec> sgd_comparison_runs(const Settings& settings, const SgdOptions& o,
                                         const std::vector<SgdBest>& best) {
  std::vector<RunSpec> runs;
  for (int64_t d_k : o.d_ks)
    for (const std::string& mode : o.compared) {
      const SgdBest* b = find_best(best, mode, d_k);
      if (!b) continue;
      for (int64_t seed = 0; seed < o.seeds; ++seed) {
        runs.push_back(sgd_spec(settings, o, mode, d_k, b->best_lr, seed, o.clip));
        if (d_k != kSgdLargeDk) continue;
        runs.push_back(sgd_spec(settings, o, mode, d_k, b->best_lr, seed, 0.0));
        if (!(b->best_lr == kSgdCommonLr))  // NaN: not yet chosen
          runs.push_back(sgd_spec(settings, o, mode, d_k, kSgdCommonLr, seed, o.clip));
      }
    }
  return runs;
}

std::vector<RunSpec> sgd_runs(const Settings& settings, const SgdOptions& o) {
  std::vector<RunSpec> runs = sgd_selection_runs(settings, o);
  std::vector<SgdBest> not_chosen;
  for (int64_t d_k : o.d_ks)
    for (const std::string& mode : o.compared) not_chosen.push_back({mode, d_k, kNaN, kNaN, 0});
  for (RunSpec& r : sgd_comparison_runs(settings, o, not_chosen)) runs.push_back(r);
  return runs;
}

std::vector<SgdRow> run_sgd(const Settings& settings, const SgdOptions& o) {
  const ProgressFn progress = settings.progress_for("sgd: plain SGD", "run");
  std::vector<SgdRow> rows;
  auto train = [&](const std::vector<RunSpec>& runs) {
    std::vector<RunOutput> out = train_all("sgd", runs, settings, progress);
    for (size_t i = 0; i < runs.size(); ++i)
      rows.push_back({out[i].final, runs[i].key.seed >= o.selection_first_seed, runs[i].clip});
  };
  train(sgd_selection_runs(settings, o));
  train(sgd_comparison_runs(settings, o, sgd_best(rows)));
  return rows;
}

}  // namespace gradflow::study
