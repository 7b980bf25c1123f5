// The attention-scaling study: what it measures and the rows it produces.
// Part A looks at attention at initialisation, Part B trains small
// transformers under each scale mode, Part C sweeps the learning rate.
// report.cpp turns the rows into report.md and SVG plots; every number in
// the report comes from these rows.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace gradflow::study {

// The modes the study compares, in report order.
const std::vector<std::string>& study_modes();

// ---- Part A: at initialisation -------------------------------------------
struct InitRow {
  std::string mode;
  int64_t d_k = 0, n_keys = 0;
  // Independent unit-variance q and k (claims C1 to C6).
  double logit_var = 0, logit_var_theory = 0;  // theory NaN where no closed form
  double entropy_norm = 0, max_weight = 0, jacobian_norm = 0;
  // A freshly initialised attention layer on random input.
  double grad_norm_wq = 0, grad_norm_wk = 0;
  double layer_logit_var = 0, layer_entropy_norm = 0, layer_max_weight = 0;
};

struct PartAOptions {
  std::vector<int64_t> d_ks = {4, 16, 64, 256, 1024};
  int64_t pairs = 32768;  // independent (q, k) pairs for the variance
  int64_t n_queries = 64, n_keys = 64;
  uint64_t seed = 0;
};

std::vector<InitRow> run_part_a(const PartAOptions& options);

// ---- Part B: in training --------------------------------------------------
struct TrainRow {
  std::string mode, task;
  int64_t d_k = 0, step = 0;
  double lr = 0, loss = 0, accuracy = 0;
  double grad_norm_wq = 0, grad_norm_wk = 0,
         grad_norm_wv = 0;                 // summed over layers, squared-sum root
  double entropy_norm = 0, max_logit = 0;  // mean / max over layers
};

// The same quantities for each attention layer at each logged step.
struct LayerRow {
  std::string mode, task, layer;
  int64_t d_k = 0, step = 0;
  double grad_norm_wq = 0, grad_norm_wk = 0, grad_norm_wv = 0, entropy_norm = 0, max_logit = 0;
};

// The end of one training run.
struct FinalRow {
  std::string mode, task;
  int64_t d_k = 0;
  double lr = 0, final_loss = 0, final_accuracy = 0, seq_accuracy = 0;
  double initial_loss = 0;  // of the first training batch
  bool diverged = false;    // a non-finite loss was seen
};

struct PartBOptions {
  std::vector<int64_t> d_ks = {16, 64, 256};
  std::vector<std::string> tasks = {"reverse", "decoder_copy"};
  int64_t steps = 400, batch = 64, log_every = 20;
  int64_t d_model = 64, layers = 1, d_ff = 128, heads = 1;
  double lr = 2e-3;
  uint64_t seed = 0;
  int threads = 2;  // runs trained side by side
};

struct PartBResult {
  std::vector<TrainRow> rows;
  std::vector<LayerRow> layers;
  std::vector<FinalRow> finals;
};

// Trains one model per (task, d_k, mode) and learning rate; every mode sees
// the same initial seed and the same batches.
// on_run_done(done, total) is called (from a worker thread, one call at a
// time) after each run.
PartBResult run_part_b(const PartBOptions& options, const std::vector<double>& lrs,
                       bool record_curves,
                       const std::function<void(size_t, size_t)>& on_run_done = {});

}  // namespace gradflow::study
