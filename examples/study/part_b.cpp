// Part B: small transformers trained under each mode, over several seeds.
// Within a seed, every mode of a (task, d_k) starts from the same weights
// and sees the same batches and the same evaluation set, so modes can be
// compared seed by seed (paired). d_k is varied at a fixed model width: one
// head whose size d_k is set on its own (Q, K, V map d_model -> d_k), so the
// residual stream and the feed-forward layers are the same for every d_k.
// One run is training_run.h's train_one.
#include <algorithm>
#include <chrono>

#include "examples/study/study.h"
#include "examples/study/training_run.h"

namespace gradflow::study {

TaskSetup reverse_setup() {
  return {.task = "reverse",
          .d_model = 32,
          .layers = 1,
          .d_ff = 64,
          .heads = 1,
          .steps = 250,
          .lr = 3e-3};
}

TaskSetup recall_setup() {
  return {.task = "recall",
          .d_model = 32,
          .layers = 2,
          .d_ff = 64,
          .heads = 1,
          .steps = 350,
          .lr = 3e-3,
          .recall = {.n_keys = 32, .n_values = 32, .pairs = 5, .queries = 5}};
}

PartBResult run_part_b(const PartBOptions& o, const ProgressFn& progress) {
  if (o.eval_every < 1) fail("scaling_study: eval_every must be at least 1");
  std::vector<RunSpec> runs;
  for (const TaskSetup& task : o.tasks)
    for (int64_t d_k : o.d_ks)
      for (const std::string& mode : o.modes)
        for (int64_t seed = 0; seed < o.seeds; ++seed) {
          RunSpec spec;
          spec.key = {task.task, mode, d_k, seed};
          spec.task = task;
          if (o.steps > 0) spec.task.steps = o.steps;
          spec.batch = o.batch, spec.eval_every = o.eval_every;
          spec.eval_examples = o.eval_examples;
          spec.seed = o.seed;
          runs.push_back(spec);
        }
  std::vector<RunOutput> outputs = train_all("Part B", runs, o.threads, progress);
  PartBResult result;
  for (RunOutput& r : outputs) {
    result.curves.insert(result.curves.end(), r.curves.begin(), r.curves.end());
    result.layers.insert(result.layers.end(), r.layers.begin(), r.layers.end());
    result.finals.push_back(r.final);
  }
  return result;
}

}  // namespace gradflow::study
