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
// Claim judged here: C13.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>
#include <tuple>

#include "examples/study/claims.h"
#include "examples/study/parts.h"

namespace gradflow::study {

TaskSetup sgd_task() {
  TaskSetup t = reverse_setup();
  t.steps = 150;
  return t;
}

SgdOptions sgd_options(const Settings& settings) {
  SgdOptions o;
  if (settings.full) o.seeds = 10, o.selection_seeds = 3, o.compared = o.modes;
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

const SgdBest* find_best(const std::vector<SgdBest>& best, const std::string& mode, int64_t d_k) {
  for (const SgdBest& b : best)
    if (b.mode == mode && b.d_k == d_k) return &b;
  return nullptr;
}

}  // namespace

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

namespace {

// The comparison seeds' runs of (mode, d_k) at lr, clipped or not, by seed.
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

using Value = double (*)(const FinalRow&);

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

// log10 of the W_Q / W_V gradient ratio: it spreads over decades (NaN when
// not positive).
double log_ratio(const FinalRow& r) {
  return r.grad_ratio_qv > 0 ? std::log10(r.grad_ratio_qv) : kNaN;
}
double accuracy(const FinalRow& r) { return r.diverged ? kNaN : r.final_accuracy; }
double clipped(const FinalRow& r) { return r.clipped_fraction; }
double qk_share(const FinalRow& r) { return r.qk_grad_share; }

// "0.012 [0.008, 0.019]": a geometric mean and its interval, from an
// interval of log10 values.
std::string ratio_text(const Interval& log10) {
  if (log10.n == 0) return "-";
  std::string out = significant(std::pow(10.0, log10.mean), 2);
  if (std::isfinite(log10.lo))
    out += " [" + significant(std::pow(10.0, log10.lo), 2) + ", " +
           significant(std::pow(10.0, log10.hi), 2) + "]";
  return out;
}

// A fraction as whole percent, "69%"; "-" for none.
std::string percent(double fraction) {
  return std::isfinite(fraction) ? std::to_string(std::lround(100 * fraction)) + "%" : "-";
}

// Everything C13, its finding and the no-clip paragraph read.
struct C13Numbers {
  SgdBest none_256, ref_256, none_16, ref_16;  // the chosen rates (when complete)
  // Clipped runs, none - inv_sqrt_dk paired by seed, d_k 256 unless said.
  Interval ratio_common, ratio_chosen, gap_256, gap_16;
  Interval gap_growth;  // gap_256 - gap_16 seed by seed
  Interval share_gap;   // W_Q and W_K's share of the squared gradient norm
  // Each arm at its chosen rate, d_k 256: clipped, then unclipped.
  Interval clipped_none, clipped_ref, share_none, share_ref, accuracy_none, accuracy_ref;
  Interval free_accuracy_none, free_accuracy_ref;
  Interval free_gap_256, free_ratio;           // the criteria's comparisons unclipped
  Interval free_change_none, free_change_ref;  // capped loss unclipped - clipped, per arm
  int64_t free_diverged_none = 0, free_diverged_ref = 0, free_runs = 0;
  bool complete = false;  // both arms chosen at both d_k
};

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

// Whose W_Q and W_K hold the larger share of the squared gradient norm, by
// the paired interval: "none's", "1/sqrt(d_k)'s" or "neither's detectably".
std::string larger_share(const Interval& share_gap) {
  if (!has_interval(share_gap)) return "neither's detectably";
  return share_gap.lo > 0 ? "none's" : share_gap.hi < 0 ? "1/sqrt(d_k)'s" : "neither's detectably";
}

// What clipping did at d_k 256: how often it fired and whose W_Q/W_K held
// the larger share of the gradient.
std::string premise_text(const C13Numbers& c) {
  return "at d_k 256 the clip fired in " + percent(c.clipped_none.mean) + " of none's steps and " +
         percent(c.clipped_ref.mean) +
         " of 1/sqrt(d_k)'s (means over seeds; a clipped gradient is cut to norm 1, so its "
         "step, momentum aside, has length lr), and W_Q and W_K held " +
         percent(c.share_none.mean) + " of none's squared gradient norm against " +
         percent(c.share_ref.mean) + " (paired difference " + format_bounds(c.share_gap) +
         "): the larger share is " + larger_share(c.share_gap);
}

// The no-clip variant at d_k 256, for the reviewer.
std::string no_clip_text(const C13Numbers& c) {
  return "without the clip, at d_k 256 and the same rates: capped loss none - 1/sqrt(d_k) " +
         format_bounds(c.free_gap_256) + " nats; log10 W_Q/W_V ratio difference " +
         format_bounds(c.free_ratio) + "; unclipped - clipped capped loss " +
         format_bounds(c.free_change_none) + " for none, " + format_bounds(c.free_change_ref) +
         " for 1/sqrt(d_k); diverged " + std::to_string(c.free_diverged_none) + " and " +
         std::to_string(c.free_diverged_ref) + " of " + std::to_string(c.free_runs);
}

}  // namespace

Verdict sgd_claim(const std::vector<SgdRow>& rows) {
  Verdict v = verdict_for("C13");
  const C13Numbers c = c13_numbers(rows);
  if (!c.complete) {
    v.verdict = "unclear";
    v.measured = "the selection lacks none or inv_sqrt_dk at d_k 16 or 256";
    v.reason = "both arms at both d_k are needed";
    return v;
  }
  if (!has_interval(c.ratio_common) || !has_interval(c.ratio_chosen) || !has_interval(c.gap_256) ||
      !has_interval(c.gap_growth)) {
    v.verdict = "unclear";
    v.measured = "paired comparison seeds per criterion: " + std::to_string(c.ratio_common.n) +
                 ", " + std::to_string(c.ratio_chosen.n) + ", " + std::to_string(c.gap_256.n) +
                 ", " + std::to_string(c.gap_growth.n);
    v.reason =
        "each criterion needs an interval, so two or more comparison seeds paired at the "
        "rates compared";
    return v;
  }
  const bool lower_common = c.ratio_common.hi < 0;
  const bool lower_chosen = c.ratio_chosen.hi < 0;
  const bool worse = c.gap_256.lo > kSgdGapMargin;
  const bool grows = c.gap_growth.lo > 0;
  auto chosen = [](const SgdBest& b) {
    return b.mode + " " + significant(b.best_lr, 2) + " at d_k " + std::to_string(b.d_k) +
           " (capped loss " + significant(b.best_loss) + ")";
  };
  v.measured = "learning rates chosen on " + std::to_string(c.none_256.seeds) +
               " selection seeds: " + chosen(c.none_256) + ", " + chosen(c.ref_256) + ", " +
               chosen(c.none_16) + ", " + chosen(c.ref_16) +
               "; on the comparison seeds, none - 1/sqrt(d_k) paired by seed: log10 W_Q/W_V "
               "gradient ratio at d_k 256 " +
               format_bounds(c.ratio_common) + " at the common lr " + significant(kSgdCommonLr) +
               ", " + format_bounds(c.ratio_chosen) + " at the chosen ones; capped loss " +
               format_bounds(c.gap_256) + " nats at d_k 256, " + format_bounds(c.gap_16) +
               " at d_k 16, their difference seed by seed " + format_bounds(c.gap_growth) + "; " +
               no_clip_text(c);
  v.verdict = verdict_of(lower_common + lower_chosen + worse + grows, 4);
  v.reason = "(a) at d_k 256 and the common lr " + significant(kSgdCommonLr) +
             ", none's W_Q/W_V gradient ratio lower (95% interval of the log10 difference below "
             "0): " +
             yes_no(lower_common) +
             "; (b) the same at each arm's chosen lr: " + yes_no(lower_chosen) +
             "; (c) at d_k 256 none's capped loss higher by more than " +
             significant(kSgdGapMargin) + " nats (whole 95% interval above it): " + yes_no(worse) +
             "; (d) the gap larger at d_k 256 than at 16 (95% interval of the difference above "
             "0): " +
             yes_no(grows) + ". The premise, not a criterion: " + premise_text(c) +
             ", so a step was not as large as its gradient in " + percent(c.clipped_none.mean) +
             " of none's steps";
  return v;
}

namespace {

// The finding: its title from the verdict's intervals, its text in words.
Finding sgd_finding(const Verdict& v, const C13Numbers& c) {
  Finding f{.figure = "sgd_lr.svg"};
  f.detail = "C13 " + v.verdict + ". " + v.measured + ". " + v.reason + ".";
  if (v.verdict == "unclear" || !c.complete) {
    f.title = "Under plain SGD the textbook story is unclear in this run";
    f.text =
        "The run has too few seeds or arms to compare unscaled attention with 1/sqrt(d_k) "
        "under plain SGD.";
    return f;
  }
  const bool worse = c.gap_256.lo > kSgdGapMargin;
  const bool qk_larger = has_interval(c.share_gap) && c.share_gap.lo > 0;
  const bool qk_smaller = has_interval(c.share_gap) && c.share_gap.hi < 0;
  f.title = std::string("Under plain SGD unscaled attention ") +
            (worse ? "learns worse at d_k 256" : "is not shown worse at d_k 256") +
            (qk_larger    ? ", with the larger W_Q and W_K gradients, not vanishing ones"
             : qk_smaller ? ", with the smaller W_Q and W_K gradients"
                          : "");
  std::ostringstream t;
  t << "Trained with plain SGD on the reverse task at d_k 256, each at the learning rate that "
       "did best on other seeds, unscaled attention reached "
    << percent(c.accuracy_none.mean) << " token accuracy and 1/sqrt(d_k) "
    << percent(c.accuracy_ref.mean)
    << ". The textbook story says that without the scale W_Q "
       "and W_K get almost no gradient, so SGD hardly moves them. ";
  if (qk_larger)
    t << "Here it was the other way round: W_Q and W_K held ";
  else
    t << "Here W_Q and W_K held ";
  t << percent(c.share_none.mean) << " of the unscaled model's gradient (squared) against "
    << percent(c.share_ref.mean) << " with 1/sqrt(d_k). And the gradient clip shortened "
    << percent(c.clipped_none.mean) << " of its steps (" << percent(c.clipped_ref.mean)
    << " with 1/sqrt(d_k)) to one fixed length, whatever the gradient's size: those steps did "
       "not follow the gradient's size as the story assumes. Without the clip, unscaled attention ";
  if (c.free_diverged_none > 0)
    t << "diverged in " << c.free_diverged_none << " of " << c.free_runs << " runs and ";
  t << "reached " << percent(c.free_accuracy_none.mean) << " (1/sqrt(d_k) "
    << percent(c.free_accuracy_ref.mean);
  if (c.free_diverged_ref > 0)
    t << ", " << c.free_diverged_ref << " of " << c.free_runs << " runs diverged";
  t << ")";
  if (has_interval(c.free_gap_256))
    t << (c.free_gap_256.lo > kSgdGapMargin ? ": the gap stays without it"
                                            : ": without it the gap is not shown");
  t << ".";
  f.text = t.str();
  return f;
}

// One table row's figures over `runs`.
void table_cells(std::ostringstream& md, const std::vector<const FinalRow*>& runs) {
  std::vector<double> loss;
  for (const FinalRow* r : runs) loss.push_back(capped_loss(*r));
  md << interval_text(over_runs(runs, &accuracy), 3) << " | "
     << interval_text(interval_of_finite(loss), 3) << " | "
     << ratio_text(over_runs(runs, &log_ratio)) << " | "
     << interval_text(over_runs(runs, &clipped), 0, 100) << " | "
     << interval_text(over_runs(runs, &qk_share), 0, 100) << " | " << diverged(runs) << " of "
     << runs.size() << " |\n";
}

std::string seed_range(int64_t first, int64_t count) {
  return count == 1 ? std::to_string(first)
                    : std::to_string(first) + " to " + std::to_string(first + count - 1);
}

void sgd_tables(std::ostringstream& md, const SgdOptions& o, const std::vector<SgdRow>& rows,
                const std::vector<SgdBest>& best) {
  md << "**The grid, on the selection seeds** ("
     << seed_range(o.selection_first_seed, o.selection_seeds)
     << "), clipped. Per learning rate: the final held-out token accuracy and loss (capped at "
        "the initial loss; a diverged run counts at its initial loss), mean +- the 95% "
        "t-interval over seeds; the smallest W_Q / W_V gradient ratio among the attention "
        "layers over the last 10% of evaluations (geometric mean over seeds [95% interval]); "
        "the steps whose gradient the clip shortened and W_Q's and W_K's share of the squared "
        "gradient norm (averaged over the steps), in percent. Chosen lr, in bold: the lowest "
        "capped loss averaged over these seeds.\n\n"
     << "| d_k | mode | lr | accuracy | loss (nats) | W_Q/W_V grad ratio | clipped (%) | "
        "W_Q, W_K share (%) | diverged |\n|---|---|---|---|---|---|---|---|---|\n";
  for (int64_t d_k : o.d_ks)
    for (const std::string& mode : o.modes)
      for (double lr : o.lrs) {
        std::vector<const FinalRow*> runs;
        for (const SgdRow& r : rows)
          if (r.selection && r.final.run.d_k == d_k && r.final.run.mode == mode && r.final.lr == lr)
            runs.push_back(&r.final);
        if (runs.empty()) continue;
        const SgdBest* b = find_best(best, mode, d_k);
        const bool is_best = b && b->best_lr == lr;
        md << "| " << d_k << " | " << mode << " | " << (is_best ? "**" : "") << significant(lr, 2)
           << (is_best ? "** (chosen)" : "") << " | ";
        table_cells(md, runs);
      }
  md << "\n**The comparison, on the comparison seeds** (" << seed_range(0, o.seeds)
     << "): each compared arm at its chosen lr, clipped; at d_k " << kSgdLargeDk
     << " also not clipped (clip none) and at the common lr " << significant(kSgdCommonLr)
     << " (C13's criterion (a)).\n\n"
     << "| d_k | mode | lr | clip | accuracy | loss (nats) | W_Q/W_V grad ratio | clipped (%) | "
        "W_Q, W_K share (%) | diverged |\n|---|---|---|---|---|---|---|---|---|---|\n";
  for (int64_t d_k : o.d_ks)
    for (const std::string& mode : o.compared) {
      const SgdBest* b = find_best(best, mode, d_k);
      if (!b) continue;
      auto row = [&](double lr, const char* which, bool clipped) {
        const std::vector<const FinalRow*> runs = compared_runs(rows, mode, d_k, lr, clipped);
        if (runs.empty()) return;
        md << "| " << d_k << " | " << mode << " | " << significant(lr, 2) << " (" << which << ") | "
           << (clipped ? significant(o.clip) : "none") << " | ";
        table_cells(md, runs);
      };
      row(b->best_lr, "chosen", true);
      row(b->best_lr, "chosen", false);
      if (b->best_lr != kSgdCommonLr) row(kSgdCommonLr, "common", true);
    }
  md << "\n";
}

// The grid's figures per d_k, on the selection seeds: mean over seeds with
// its 95% interval of `value` against the learning rate.
std::vector<plot::Figure> grid_panels(const SgdOptions& o, const std::vector<SgdRow>& rows,
                                      const std::string& y, bool log_y, Value value) {
  std::vector<std::string> modes;
  for (const std::string& mode : study_modes())
    if (std::find(o.modes.begin(), o.modes.end(), mode) != o.modes.end()) modes.push_back(mode);
  const auto groups = mode_panels(modes);
  std::vector<plot::Figure> panels;
  for (int64_t d_k : o.d_ks)
    for (size_t g = 0; g < groups.size(); ++g) {
      plot::Figure f = figure("d_k = " + std::to_string(d_k) + panel_suffix(g, groups.size()),
                              "learning rate of SGD (log scale)", true, y, log_y);
      if (!log_y) f.y.min = 0, f.y.max = 1;
      for (const std::string& mode : groups[g]) {
        std::map<double, std::vector<double>> at;
        for (const SgdRow& r : rows)
          if (r.selection && r.final.run.mode == mode && r.final.run.d_k == d_k)
            at[r.final.lr].push_back(value(r.final));
        f.series.push_back(mean_series(mode_series(mode), at));
      }
      panels.push_back(f);
    }
  return panels;
}

}  // namespace

Section sgd_section(const SgdOptions& o, const std::vector<SgdRow>& rows) {
  Section sec{.part = "sgd"};
  if (rows.empty()) return sec;
  sec.claims = {sgd_claim(rows)};
  const C13Numbers c = c13_numbers(rows);
  sec.findings.push_back(sgd_finding(sec.claims.front(), c));
  const std::vector<SgdBest> best = sgd_best(rows);
  std::ostringstream md;
  md << "## sgd: the scale under plain SGD\n\n"
     << "The `" << o.task.task << "` task, " << o.task.steps
     << " steps, SGD with momentum 0.9 (no Nesterov, no weight decay), the gradient clipped "
        "at norm "
     << significant(o.clip)
     << " (but in the no-clip runs) and the learning rate warmed up over the first 5% of the "
        "steps; modes";
  for (const std::string& m : o.modes) md << " " << m;
  md << " at d_k";
  for (int64_t d : o.d_ks) md << " " << d;
  md << ", learning rates";
  for (double lr : o.lrs) md << " " << significant(lr, 2);
  md << ". Each (mode, d_k) chooses its learning rate on " << o.selection_seeds
     << " selection seeds; the arms";
  for (const std::string& m : o.compared) md << " " << m;
  md << " are compared at the chosen rates on " << o.seeds << " other seeds, paired by seed.\n\n";
  sgd_tables(md, o, rows, best);
  if (c.complete)
    md << "**Without the clip** (C13's numbers, none - 1/sqrt(d_k)): " << no_clip_text(c)
       << ". Clipped, for comparison: " << premise_text(c) << ".\n\n";
  sec.markdown = md.str();
  double selection_seconds = 0, comparison_seconds = 0;
  for (const SgdRow& r : rows)
    (r.selection ? selection_seconds : comparison_seconds) += r.final.seconds;
  if (selection_seconds + comparison_seconds > 0)
    sec.time_note = "Its runs took " + significant(selection_seconds, 3) +
                    " s of one thread in the selection and " + significant(comparison_seconds, 3) +
                    " s in the comparison.";
  std::vector<CsvRow> csv;
  for (const SgdRow& r : rows) {
    const FinalRow& f = r.final;
    csv.push_back({f.run.mode,
                   f.optimizer,
                   f.run.d_k,
                   f.lr,
                   f.run.seed,
                   csv_number(f.final_loss),
                   csv_number(f.max_logit),
                   f.diverged,
                   f.run.task,
                   csv_number(f.initial_loss),
                   csv_number(f.min_entropy),
                   f.spikes,
                   f.collapse_step,
                   f.first_spike_step,
                   r.selection ? "selection" : "comparison",
                   r.clip,
                   csv_number(f.final_accuracy),
                   csv_number(f.grad_ratio_qv),
                   csv_number(f.clipped_fraction),
                   csv_number(f.qk_grad_share)});
  }
  sec.csvs.push_back({"sgd_sweep.csv",
                      {"mode",
                       "optimizer",
                       "d_k",
                       "lr",
                       "seed",
                       "final_loss",
                       "max_logit",
                       "diverged",
                       "task",
                       "initial_loss",
                       "min_entropy",
                       "spikes",
                       "collapse_step",
                       "first_spike_step",
                       "seed_set",
                       "clip",
                       "accuracy",
                       "grad_ratio_qv",
                       "clipped_fraction",
                       "qk_grad_share"},
                      csv});
  std::vector<plot::Figure> panels =
      grid_panels(o, rows, "final loss (nats, capped at the initial)", true, &capped_loss);
  for (const auto& [y, value] : {std::pair<const char*, Value>{"steps clipped", &clipped},
                                 {"W_Q and W_K's share of |g|^2", &qk_share}})
    for (plot::Figure& f : grid_panels(o, rows, y, false, value)) panels.push_back(f);
  sec.plots.push_back(
      {"sgd_lr.svg",
       plot::render_svg_grid(panels, static_cast<int>(panels.size() / 3), {.legend_once = true}),
       "The sgd part on its selection seeds, clipped: per mode against SGD's learning rate (log "
       "axis), one column per d_k, mean over seeds with its 95% interval: the final loss "
       "(capped at the initial loss, log axis), the fraction of steps whose gradient the clip "
       "shortened, and W_Q's and W_K's share of the squared gradient norm (C13)."});
  return sec;
}

}  // namespace gradflow::study
