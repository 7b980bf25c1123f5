// The attention-scaling study: what it measures and the rows it produces.
//
//   Part A  attention at initialisation, as estimates over many random draws
//   Part B  small transformers trained under each mode, over several seeds
//   Part D  a depth probe at initialisation: 1 to 8 layers, pre- and post-LN
//
// report.cpp turns the rows into report.md, CSV files and SVG plots; every
// number in the report comes from these rows. docs/study.md explains the
// claims, the metrics and the literature.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "nn/attention.h"
#include "nn/data/recall_task.h"

namespace gradflow::study {

// ---- The arms compared ------------------------------------------------------
// Every arm, in the order plots draw them (the order fixes their colours):
// six scale modes of nn::ScaleMode, then the control kControl: unscaled
// attention whose W_Q and W_K (and their biases) start d_k^(-1/4) times
// smaller, so its logits start with the variance of 1/sqrt(d_k)'s. It
// separates saturation at initialisation from what training does to an
// unscaled layer. Last the two modes only --full trains: qk_l2norm and
// learned_log. Parts A and D (cheap) measure every arm.
const std::vector<std::string>& study_modes();
// The arms the default run trains: study_modes() but the last two.
const std::vector<std::string>& default_modes();
inline constexpr const char* kDefaultMode = "inv_sqrt_dk";
inline constexpr const char* kControl = "none_small_init";

nn::ScaleMode scale_mode_of(const std::string& mode);  // the control: None
// A mode's initialisation, applied to a freshly built layer (only the
// control changes anything).
void apply_mode_init(nn::MultiHeadAttention& attention, const std::string& mode);

// A mean over independent draws and its standard error (sd / sqrt(draws)).
struct Estimate {
  double mean = 0, se = 0;
};
Estimate estimate_of(const std::vector<double>& draws);

// Units of work done, for a progress display: progress(done, total).
using ProgressFn = std::function<void(size_t done, size_t total)>;

// Thrown by run_jobs when a stop signal (examples/common/signals.h: SIGINT,
// SIGTERM, SIGHUP) came while a StopSignals guard lived: no job starts after
// it, and a long job may end early by calling check_stop().
class Interrupted : public std::exception {
 public:
  Interrupted(int signal, std::string part, size_t done, size_t count);
  const char* what() const noexcept override { return message_.c_str(); }
  int signal() const { return signal_; }

 private:
  int signal_;
  std::string message_;  // "SIGTERM in Part B (57 of 126 runs done)"
};

// Throws (anything: run_jobs reports Interrupted) if a stop signal came.
void check_stop();

// Runs job(0) ... job(count - 1) on `threads` threads, each job on one
// thread (so each job's kernels run single-threaded), jobs taken in index
// order; progress is called with 0 done before the first job starts and
// after each, one call at a time. Jobs must write
// only their own results, so the output does not depend on the thread count.
// Throws Interrupted after a stop signal, else Error naming `part` with the
// first job's error.
void run_jobs(const std::string& part, size_t count, int threads,
              const std::function<void(size_t)>& job, const ProgressFn& progress);

// ---- Part A: at initialisation ------------------------------------------------
struct InitRow {
  std::string mode;
  int64_t d_k = 0, n_keys = 0;
  // Independent unit-variance q and k, the seeds' setting (C1 to C6): a
  // draw is `queries` queries against n_keys keys, fresh for every mode.
  // Not measured for the control (its q and k are not unit-variance).
  int64_t draws = 0;
  double logit_var_theory = 0;  // d_k s^2; NaN where there is no closed form
  Estimate logit_var, entropy_norm, max_weight, jacobian_norm;
  // A freshly initialised attention layer (d_model 64, one head of size
  // d_k, n_keys tokens of N(0, 1) input, loss <output, r> for a random r):
  // a layer draw is a new layer and a new input, the same for every mode.
  int64_t layer_draws = 0;
  Estimate layer_logit_var, layer_entropy_norm, layer_max_weight;
  Estimate grad_norm_scores;  // ||dL/dS||_F at the softmax input S = s q.k
  Estimate grad_norm_wq, grad_norm_wk, grad_norm_wv, grad_ratio_qv;  // ratio ||W_Q|| / ||W_V||
};

struct PartAOptions {
  std::vector<int64_t> d_ks = {4, 16, 64, 256, 1024};
  std::vector<int64_t> n_keys = {8, 64, 512};
  // Random q, k: max(draws, draws x 64 / n_keys) draws of `queries` x n_keys.
  int64_t draws = 256, queries = 16;
  // Layer draws: max(8, layer_rows / n_keys), each a new layer on n_keys tokens.
  int64_t layer_rows = 1024, d_model = 64;
  uint64_t seed = 0;
  int threads = 2;
};

std::vector<InitRow> run_part_a(const PartAOptions& options, const ProgressFn& progress = {});

// ---- Part B: in training --------------------------------------------------------
// The tasks: "reverse" (an encoder-decoder outputs its input backwards) and
// "recall" (a decoder-only model answers queries about key-value pairs it
// has read: nn/data/recall_task.h).
struct TaskSetup {
  std::string task;
  int64_t d_model = 64, layers = 1, d_ff = 128, heads = 1, steps = 400;
  double lr = 2e-3;               // AdamW's peak, after a linear warm-up over 5% of the steps
  nn::RecallTaskConfig recall{};  // recall only
};

TaskSetup reverse_setup();  // encoder-decoder, 1 layer per stack, d_model 32
TaskSetup recall_setup();   // decoder, 2 layers, d_model 32; 32 keys, 5 pairs, 5 queries

struct PartBOptions {
  std::vector<int64_t> d_ks = {16, 64, 256};
  std::vector<TaskSetup> tasks = {reverse_setup(), recall_setup()};
  std::vector<std::string> modes = default_modes();  // --full: study_modes()
  int64_t seeds = 3, batch = 64, eval_every = 10, eval_examples = 128;
  int64_t steps = 0;  // 0: each task's own
  uint64_t seed = 0;
  int threads = 2;  // runs trained side by side, each on one thread
};

// Attention is called collapsed (Zhai et al. 2023) below this entropy_norm.
inline constexpr double kCollapsedEntropy = 0.1;

// One run: a (task, d_k, mode, seed). Within a seed every mode starts from
// the same weights and sees the same batches and evaluation set.
struct RunKey {
  std::string task, mode;
  int64_t d_k = 0, seed = 0;
};

// An evaluation, every eval_every steps.
struct CurveRow {
  RunKey run;
  int64_t step = 0;
  double train_loss = 0, eval_loss = 0, eval_accuracy = 0;
  // A training step since the last row whose loss was above twice its
  // running median (over the 20 steps before it) and above 0.1.
  bool spike = false;
};

// Each attention layer at each evaluation step: the training dynamics.
struct LayerRow {
  RunKey run;
  int64_t step = 0;
  std::string layer;  // "enc0.self", "dec1.cross", ...
  int64_t layer_d_k = 0;
  double max_logit = 0, entropy_norm = 0;
  double grad_norm_wq = 0, grad_norm_wk = 0, grad_norm_wv = 0, grad_ratio_qv = 0;
};

// The end of a run. Thresholds not reached count as the run's length and
// are flagged (censored); the final figures average the last 10% of the
// evaluations.
struct FinalRow {
  RunKey run;
  double lr = 0;
  int64_t steps = 0;
  double final_accuracy = 0, final_loss = 0;
  double steps_to_90 = 0, steps_to_99 = 0;
  bool reached_90 = false, reached_99 = false;
  double loss_auc = 0;       // mean held-out loss over training (area / steps)
  double seq_accuracy = -1;  // reverse: whole sequences right by greedy decoding
  int64_t spikes = 0;
  double max_logit = 0;     // largest |logit| over the run
  double initial_loss = 0;  // the first training batch's
  double min_entropy = 0;   // the lowest entropy_norm of any layer at any evaluation
  // The first evaluation step with a layer's entropy_norm below
  // kCollapsedEntropy, and the first spike's step; -1 for none.
  int64_t collapse_step = -1, first_spike_step = -1;
  // The std of the unscaled q.k over the visible (query, key) pairs of a
  // held-out batch, averaged over the attention layers: at initialisation
  // and after training.
  double qk_std_init = 0, qk_std = 0;
  // The smallest W_Q / W_V gradient ratio among the attention layers,
  // averaged over the last 10% of evaluations: a vanishing Q gradient in
  // any layer shows here.
  double grad_ratio_qv = 0;
  bool diverged = false;
  double seconds = 0;  // wall time of the run (not written to the CSV files)
};

struct PartBResult {
  std::vector<CurveRow> curves;
  std::vector<LayerRow> layers;
  std::vector<FinalRow> finals;
};

PartBResult run_part_b(const PartBOptions& options, const ProgressFn& progress = {});

// ---- --full: what the literature measured, at toy scale ------------------
// Part C, learning-rate sensitivity (Wortsman et al. 2023): every mode at two
// d_k over a grid of learning rates, on the reverse task.
struct LrSweepOptions {
  TaskSetup task = reverse_setup();
  std::vector<int64_t> d_ks = {16, 256};
  std::vector<double> lrs = {1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1};
  std::vector<std::string> modes = default_modes();  // --full: study_modes()
  int64_t seeds = 3;
  uint64_t seed = 0;
  int threads = 2;
};
// One FinalRow per (d_k, mode, lr, seed); FinalRow::lr says which.
std::vector<FinalRow> run_lr_sweep(const LrSweepOptions& options, const ProgressFn& progress = {});

// Part E, width and muP (Yang et al. 2022): two heads of d_k = d_model / 2
// at each width, under three parametrisations, over a grid of learning rates.
struct WidthRow {
  std::string parametrization;  // "sp_inv_sqrt_dk", "sp_inv_dk" or "mup"
  int64_t d_model = 0;
  FinalRow run;
};
struct WidthSweepOptions {
  std::vector<int64_t> d_models = {32, 64, 128, 256};
  std::vector<double> lrs = {3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1};
  int64_t seeds = 2, steps = 200, batch = 32;
  uint64_t seed = 0;
  int threads = 2;
};
const std::vector<std::string>& parametrizations();
std::vector<WidthRow> run_width_sweep(const WidthSweepOptions& options,
                                      const ProgressFn& progress = {});

// Part F, depth in training (Xiong et al. 2020): 4 layers per stack, pre- and
// post-LN, with and without warm-up, for three modes; each block's gradient
// norm at every evaluation.
struct DepthTrainRow {
  std::string norm_placement, mode;  // "pre_ln" / "post_ln"
  bool warmup = false;
  int64_t seed = 0, step = 0;
  double loss = 0;
  std::string layer;
  double grad_norm = 0;
};
struct DepthTrainRun {
  std::string norm_placement;
  bool warmup = false;
  FinalRow run;
};
struct DepthTrainResult {
  std::vector<DepthTrainRow> rows;
  std::vector<DepthTrainRun> runs;
};
struct DepthTrainOptions {
  int64_t layers = 4, seeds = 3, steps = 250;
  double lr = 1e-2;
  std::vector<std::string> modes = {"inv_sqrt_dk", "none", "qk_norm"};
  uint64_t seed = 0;
  int threads = 2;
};
DepthTrainResult run_depth_training(const DepthTrainOptions& options,
                                    const ProgressFn& progress = {});

// ---- Part D: depth at initialisation ------------------------------------------
struct DepthRow {
  std::string mode, norm_placement;  // "pre_ln" or "post_ln"
  int64_t layers = 0, layer = 0;     // layer counts from 0 at the input
  int64_t draws = 0;
  Estimate grad_norm_wq, grad_norm_wv, grad_norm_ff, token_cosine;
};

struct DepthOptions {
  std::vector<int64_t> depths = {1, 2, 4, 8};
  int64_t d_model = 64, heads = 1, d_ff = 256, seq = 32, batch = 8, vocab = 32, draws = 8;
  uint64_t seed = 0;
  int threads = 2;
};

std::vector<DepthRow> run_depth_probe(const DepthOptions& options, const ProgressFn& progress = {});

}  // namespace gradflow::study
