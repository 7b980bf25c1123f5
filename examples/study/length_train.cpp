// The length part's training: train short, test long. Recall, trained at 4
// key-value pairs, evaluated at 8, 16 and 32 pairs (sequences 2.5x, 4.5x and
// 8.5x as long), per scale mode over seeds. Positions are RoPE: a learned
// table has no rows past the trained length, and RoPE's scores depend only
// on distances, so a longer sequence asks nothing new of the positions; what
// changes is how many keys each query weighs. That is what the log-n modes
// are about: with a fixed scale the answer's weight is shared among more
// keys as n grows, under log_n and ssmax its logit grows with log n.
//
// Claim judged here: C18 (log-n scaling extends to longer contexts better
// than 1/sqrt(d_k)).
#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "autograd/ops.h"
#include "examples/study/claims.h"
#include "examples/study/length.h"
#include "examples/study/parts.h"
#include "examples/study/run_model.h"
#include "examples/study/stats/inference.h"
#include "nn/data/recall_task.h"
#include "nn/data/toy_tasks.h"
#include "tensor/ops.h"

namespace gradflow::study {

nn::RecallTaskConfig at_pairs(nn::RecallTaskConfig task, int64_t pairs) {
  task.pairs = pairs;
  return task;
}

std::vector<LengthTestRow> evaluate_lengths(const StudyModel& model, const RunSpec& spec,
                                            uint64_t seed) {
  NoGradGuard no_grad;
  const nn::RecallTaskConfig& trained = spec.task.recall;
  std::vector<int64_t> pairs = {trained.pairs};
  pairs.insert(pairs.end(), spec.test_pairs.begin(), spec.test_pairs.end());
  // The answer layer: the last, where the query looks its key up.
  nn::MultiHeadAttention* answer = model.attention.back().second;
  std::vector<LengthTestRow> out;
  for (int64_t p : pairs) {
    const nn::RecallTaskConfig task = at_pairs(trained, p);
    Generator gen(seed + static_cast<uint64_t>(p));
    int64_t right = 0, scored = 0;
    double mass = 0;
    for (int64_t left = spec.eval_examples; left > 0; left -= 128) {
      check_stop();
      nn::RecallBatch b = nn::make_recall_batch(task, std::min<int64_t>(left, 128), gen);
      answer->record_probe = true;
      Tensor logits = model.lm->forward(b.input).data();
      answer->record_probe = false;
      // weights (B, H, T, S): at each scored position, the largest weight,
      // averaged over heads.
      const Tensor weights = answer->probe.weights.data().contiguous();
      const int64_t heads = weights.shape()[1], t = weights.shape()[2], s = weights.shape()[3];
      const std::vector<double> w = weights.to_vector(), target = b.target.to_vector();
      const std::vector<double> guess = max(logits, -1).indices.to_vector();
      for (size_t i = 0; i < target.size(); ++i) {
        if (target[i] == nn::kPadToken) continue;
        ++scored;
        right += guess[i] == target[i];
        const int64_t row = static_cast<int64_t>(i) / t, pos = static_cast<int64_t>(i) % t;
        for (int64_t h = 0; h < heads; ++h) {
          const double* r = &w[static_cast<size_t>(((row * heads + h) * t + pos) * s)];
          mass += *std::max_element(r, r + s) / static_cast<double>(heads);
        }
      }
    }
    out.push_back({.pairs = p,
                   .train_len = nn::recall_seq_len(trained),
                   .test_len = nn::recall_seq_len(task),
                   .accuracy = static_cast<double>(right) / static_cast<double>(scored),
                   .top1_mass = mass / static_cast<double>(scored)});
  }
  // Solved: the trained length, the first row, at kLengthSolved.
  for (LengthTestRow& r : out) r.solved = out.front().accuracy >= kLengthSolved;
  return out;
}

TaskSetup length_task() {
  TaskSetup t = recall_setup();
  // 32 keys, so a test sequence can hold 32 distinct ones; trained at 4
  // pairs as the train part's recall is. Within 1600 steps 1/sqrt(d_k),
  // log_n and ssmax each solved it (99% held out) in 3 or 4 of 4 seeds tried.
  t.recall = {.n_keys = 32, .n_values = 16, .pairs = 4, .queries = 4};
  t.steps = 1600;
  return t;
}

TaskSetup lookup_task() {
  TaskSetup t = length_task();
  t.task = "lookup";
  t.recall.fused_pairs = true;
  // Two layers as recall: one layer attended sharply (top-1 mass 0.9 to 0.96)
  // but reached only 60 to 70% in 1600 to 4000 steps (seed 0); two learn it
  // in about 1700 to 2900. It stops at 98%: its last point takes long.
  t.steps = 2400;
  t.stop_at = 0.98;
  return t;
}

std::vector<RunSpec> length_runs(const Settings& settings, const LengthOptions& o) {
  std::vector<RunSpec> runs;
  for (const TaskSetup& task : o.tasks)
    for (int64_t seed = 0; seed < o.seeds; ++seed)
      for (const std::string& mode : o.modes)
        runs.push_back({.key = {.task = task.task, .mode = mode, .d_k = o.d_k, .seed = seed},
                        .task = task,
                        .eval_every = 25,
                        .eval_examples = 256,
                        .seed = settings.seed,
                        .positional = "rope",
                        .test_pairs = o.test_pairs});
  return runs;
}

LengthTrainResult run_length_train(const Settings& settings, const LengthOptions& o) {
  LengthTrainResult r;
  for (RunOutput& run : train_all("length", length_runs(settings, o), settings,
                                  settings.progress_for("length: train short, test long", "run"))) {
    r.finals.push_back(run.final);
    r.rows.insert(r.rows.end(), run.lengths.begin(), run.lengths.end());
  }
  return r;
}

namespace {

// mode's `field` on `task` at `pairs`, by seed, of the runs that solved
// the trained length.
std::map<int64_t, double> by_seed(const std::vector<LengthTestRow>& rows, const std::string& task,
                                  const std::string& mode, int64_t pairs,
                                  double LengthTestRow::*field) {
  std::map<int64_t, double> out;
  for (const LengthTestRow& r : rows)
    if (r.run.task == task && r.run.mode == mode && r.pairs == pairs && r.solved)
      out[r.run.seed] = r.*field;
  return out;
}

}  // namespace

Interval length_difference(const std::vector<LengthTestRow>& rows, const std::string& task,
                           const std::string& a, const std::string& b, int64_t pairs,
                           double LengthTestRow::*field) {
  const std::map<int64_t, double> x = by_seed(rows, task, a, pairs, field),
                                  y = by_seed(rows, task, b, pairs, field);
  std::vector<double> xs, ys;
  for (const auto& [seed, v] : x)
    if (y.count(seed) && std::isfinite(v) && std::isfinite(y.at(seed)))
      xs.push_back(v), ys.push_back(y.at(seed));
  if (xs.size() < 2) return {.mean = NAN, .half_width = NAN, .lo = NAN, .hi = NAN};
  return paired_difference(xs, ys);
}

Verdict extrapolation_claim(const std::vector<LengthTestRow>& rows, const LengthOptions& o) {
  // Each log-n mode against 1/sqrt(d_k) on each task at each longer length,
  // paired by seed; better means the whole interval above 0 after Holm over
  // all of them.
  struct Test {
    std::string task, mode;
    int64_t pairs;
    Interval diff;
  };
  std::vector<Test> tests;
  std::vector<double> p;
  for (const TaskSetup& task : o.tasks)
    for (const std::string& mode : o.modes) {
      if (is_reference(mode)) continue;
      for (int64_t pairs : o.test_pairs) {
        Interval d = length_difference(rows, task.task, mode, kDefaultMode, pairs);
        tests.push_back({task.task, mode, pairs, d});
        p.push_back(std::isfinite(d.mean) && d.mean > 0 ? margin_p_value(d, 0) : 1.0);
      }
    }
  if (tests.empty() ||
      std::any_of(tests.begin(), tests.end(), [](const Test& t) { return !has_interval(t.diff); }))
    return judge(
        "C18", {{.criterion = "a", .missing = true}}, {},
        "comparisons with fewer than two seeds where both modes learned the trained "
        "length: " +
            std::to_string(std::count_if(tests.begin(), tests.end(),
                                         [](const Test& t) { return !has_interval(t.diff); })) +
            " of " + std::to_string(tests.size()) +
            " (every comparison needs an interval before Holm)");
  const std::vector<double> adjusted = holm(p);
  std::ostringstream measured;
  std::vector<Outcome> outcomes;
  for (size_t i = 0; i < tests.size(); ++i) {
    outcomes.push_back({.criterion = "a",
                        .passed = adjusted[i] < kFamilyLevel,
                        .setting = tests[i].task + ", " + tests[i].mode + " at " +
                                   std::to_string(tests[i].pairs) + " pairs",
                        .estimate = tests[i].diff,
                        .text = "Holm p " + significant(adjusted[i], 2)});
    measured << (i ? "; " : "") << tests[i].task << ", " << tests[i].mode << " - inv_sqrt_dk at "
             << tests[i].pairs << " pairs: " << interval_text(tests[i].diff, 1, 100)
             << " points (n " << tests[i].diff.n << ")";
  }
  return judge("C18", outcomes, {},
               "held-out accuracy, paired by seed over the seeds where both modes learned the "
               "trained length (" +
                   std::to_string(o.tasks.front().recall.pairs) +
                   " pairs, 97% of fresh answers; of " + std::to_string(o.seeds) +
                   "): " + measured.str());
}

}  // namespace gradflow::study
