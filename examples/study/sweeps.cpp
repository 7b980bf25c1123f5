// The --full parts that train grids of runs (training_run.h):
//   Part C  learning-rate sensitivity per mode (Wortsman et al. 2023)
//   Part E  the best learning rate across width, standard against muP
//           (Yang et al. 2022)
//   Part F  depth in training, pre- against post-LN, with and without
//           warm-up (Xiong et al. 2020)
// Within a seed every run of a grid starts from the same weights and sees
// the same batches (train_one's seeds do not depend on the lr, the mode,
// the warm-up or the norm placement), so comparisons are paired.
#include "examples/study/study.h"
#include "examples/study/training_run.h"

namespace gradflow::study {

std::vector<FinalRow> run_lr_sweep(const LrSweepOptions& o, const ProgressFn& progress) {
  std::vector<RunSpec> runs;
  for (int64_t d_k : o.d_ks)
    for (const std::string& mode : o.modes)
      for (double lr : o.lrs)
        for (int64_t seed = 0; seed < o.seeds; ++seed) {
          RunSpec spec;
          spec.key = {o.task.task, mode, d_k, seed};
          spec.task = o.task;
          spec.task.lr = lr;
          spec.seed = o.seed;
          runs.push_back(spec);
        }
  std::vector<FinalRow> out;
  for (RunOutput& r : train_all("Part C", runs, o.threads, progress)) out.push_back(r.final);
  return out;
}

const std::vector<std::string>& parametrizations() {
  static const std::vector<std::string> names = {"sp_inv_sqrt_dk", "sp_inv_dk", "mup"};
  return names;
}

std::vector<WidthRow> run_width_sweep(const WidthSweepOptions& o, const ProgressFn& progress) {
  std::vector<RunSpec> runs;
  std::vector<std::pair<std::string, int64_t>> labels;
  for (const std::string& p : parametrizations())
    for (int64_t d_model : o.d_models)
      for (double lr : o.lrs)
        for (int64_t seed = 0; seed < o.seeds; ++seed) {
          RunSpec spec;
          // Two heads of d_k = d_model / 2, and d_ff = 2 d_model: every size
          // grows with the width, as muP's rules assume.
          spec.task = reverse_setup();
          spec.task.d_model = d_model, spec.task.heads = 2, spec.task.d_ff = 2 * d_model;
          spec.task.steps = o.steps, spec.task.lr = lr;
          spec.key = {"reverse", p == "sp_inv_sqrt_dk" ? "inv_sqrt_dk" : "inv_dk", d_model / 2,
                      seed};
          spec.batch = o.batch;
          spec.parametrization = p == "mup" ? Parametrization::MuP : Parametrization::Standard;
          spec.seed = o.seed;
          runs.push_back(spec);
          labels.emplace_back(p, d_model);
        }
  std::vector<WidthRow> out;
  std::vector<RunOutput> outputs = train_all("Part E", runs, o.threads, progress);
  for (size_t i = 0; i < outputs.size(); ++i)
    out.push_back({labels[i].first, labels[i].second, outputs[i].final});
  return out;
}

DepthTrainResult run_depth_training(const DepthTrainOptions& o, const ProgressFn& progress) {
  std::vector<RunSpec> runs;
  for (const char* placement : {"pre_ln", "post_ln"})
    for (bool warmup : {true, false})
      for (const std::string& mode : o.modes)
        for (int64_t seed = 0; seed < o.seeds; ++seed) {
          RunSpec spec;
          spec.task = reverse_setup();
          spec.task.layers = o.layers, spec.task.steps = o.steps, spec.task.lr = o.lr;
          // d_k = d_model: the mode matters as much as it does at d_k 32.
          spec.key = {"reverse", mode, spec.task.d_model, seed};
          spec.pre_ln = std::string(placement) == "pre_ln";
          spec.warmup = warmup;
          spec.record_blocks = true;
          spec.seed = o.seed;
          runs.push_back(spec);
        }
  std::vector<RunOutput> outputs = train_all("Part F", runs, o.threads, progress);
  DepthTrainResult result;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const RunSpec& spec = runs[i];
    const std::string placement = spec.pre_ln ? "pre_ln" : "post_ln";
    for (const BlockRow& b : outputs[i].blocks)
      result.rows.push_back({placement, spec.key.mode, spec.warmup, spec.key.seed, b.step, b.loss,
                             b.layer, b.grad_norm});
    result.runs.push_back({placement, spec.warmup, outputs[i].final});
  }
  return result;
}

}  // namespace gradflow::study
