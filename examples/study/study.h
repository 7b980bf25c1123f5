// The attention-scaling study: what every part shares.
//
// The study is nine parts, each holding its runs, its claims with their
// verdicts, its tables and its figures (part_table.h is their table; parts.h
// and length.h declare each part's options, rows, run and section):
//
//   init         init_qk.cpp, init.cpp, init_layer.cpp  attention at initialisation
//   train        train.cpp              small transformers trained per mode;
//                                       summary.cpp, seed_series.cpp: runs over
//                                       seeds; mechanism.cpp: the gradient at the
//                                       softmax, entropy collapse (C20, C21);
//                                       factorial.cpp: start x learning rate;
//                                       train_update.cpp: the update beside the
//                                       gradient; attention_maps.cpp,
//                                       gradient_flow.cpp: its pictures;
//                                       train_criteria.cpp: the declared
//                                       criteria computed from the runs;
//                                       train_figures.cpp: CSV files and figures
//   sgd          sgd*.cpp, sgd.h        three modes trained under plain SGD
//   depth        depth*.cpp, depth.h    gradient flow across depth at init
//   lr           lr.cpp                 (--full) learning-rate sensitivity
//   width        width.cpp              (--full) width and muP
//   depth-train  depth_train.cpp        (--full) depth in training
//   length       length*.cpp            (--full) the scale against the number of keys
//   qk-rate      qk_rate*.cpp, qk_rate.h  (--full) the Q/K learning rate across d_k
//
// The statistics they use are examples/study/stats/ (namespace gradflow::stats).
//
// What is compared is the arms table (arms.h), what is judged the claims
// table (claims.h). This header holds what the parts share: the run's Settings,
// the job runner, the attention metrics, one training run (training_run.cpp,
// with run_model.h and run_probes.cpp; what it records is run_rows.h); the
// Section each part returns to the report (report.cpp), which opens with the
// parts' findings, is section.h.
// docs/study.md explains the claims, the metrics and the literature.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "autograd/graph.h"
#include "examples/study/arms.h"
#include "examples/study/criteria.h"
#include "examples/study/run_rows.h"
#include "examples/study/section.h"
#include "examples/study/stats/inference.h"
#include "examples/study/stats/stats.h"
#include "examples/toolkit/cli/csv_log.h"
#include "examples/toolkit/plot/svg_plot.h"
#include "nn/attention.h"
#include "nn/data/recall_task.h"
#include "nn/models.h"
#include "nn/optim/optim.h"
#include "tensor/random.h"

namespace gradflow::study {

// The statistics (examples/study/stats/) are the study's own vocabulary.
using namespace gradflow::stats;

// ---- The arms compared: arms.h -------------------------------------------------------

// ---- The run's settings -------------------------------------------------------
// Units of work done, for a progress display: progress(done, total).
using ProgressFn = std::function<void(size_t done, size_t total)>;

// What every part receives. A part's own sizes (draws, grids, steps) are its
// defaults, made larger by `full`; `seeds` and `steps`, when set, replace
// every training part's.
struct Settings {
  uint64_t seed = 0;                 // the base seed: every generator of the run derives from it
  int threads = 2;                   // jobs run side by side, each on one thread
  bool full = false;                 // more seeds, more draws, more arms
  int64_t seeds = 0, steps = 0;      // 0: each part's own
  std::vector<std::string> modes{};  // --modes: what train and lr train, init and depth add
  // A progress display for a part: progress(title, unit) gives the function
  // its jobs report to; unset, nothing is shown.
  std::function<ProgressFn(const std::string& title, const std::string& unit)> progress{};

  ProgressFn progress_for(const std::string& title, const std::string& unit) const {
    return progress ? progress(title, unit) : ProgressFn();
  }
};

// ---- Running jobs side by side --------------------------------------------------
// Thrown by run_jobs when a stop signal (examples/toolkit/cli/signals.h: SIGINT,
// SIGTERM, SIGHUP) came while a StopSignals guard lived: no job starts after
// it, and a long job may end early by calling check_stop().
class Interrupted : public std::exception {
 public:
  Interrupted(int signal, std::string part, size_t done, size_t count);
  const char* what() const noexcept override { return message_.c_str(); }
  int signal() const { return signal_; }

 private:
  int signal_;
  std::string message_;  // "SIGTERM in train (57 of 126 done)"
};

// Throws (anything: run_jobs reports Interrupted) if a stop signal came.
void check_stop();

// Runs job(0) ... job(count - 1) on `threads` threads, each job on one
// thread, jobs taken in index order; progress is called with 0 done before
// the first job starts and after each, one call at a time. Jobs must write
// only their own results, so the output does not depend on the thread count.
// Throws Interrupted after a stop signal, else Error naming `part` with the
// first job's error. (Why not tensor/parallel.h's pool: a job must run its
// kernels exactly as a one-thread run does, but inside the pool's work a
// product is still cut into num_threads() pieces, which rounds differently;
// and the study needs jobs handed out one at a time, costliest first.)
void run_jobs(const std::string& part, size_t count, int threads,
              const std::function<void(size_t)>& job, const ProgressFn& progress);

// ---- Attention metrics (names as in docs/study.md) ----------------------------------
// weights and logits (..., T, S): one row of S key weights per query. mask,
// if defined, broadcasts to that shape and is 1 where a key is hidden;
// hidden keys are left out of every statistic, and a row's entropy is
// normalised by the log of its own number of visible keys.
struct AttentionStats {
  double entropy_norm = 0;   // mean over rows of H(p) / log(n), 1 = uniform, 0 = one-hot
  double max_weight = 0;     // mean over rows of max_j p_j
  double jacobian_norm = 0;  // mean over rows of ||diag(p) - p p^T||_F
  double max_logit = 0;      // largest |logit| over visible entries
  int64_t rows = 0;          // rows with at least two visible keys
};
AttentionStats attention_stats(const Tensor& weights, const Tensor& logits, const Tensor& mask);

// ||diag(p) - p p^T||_F for one distribution p, in closed form:
// sum p^2 - 2 sum p^3 + (sum p^2)^2 under the square root.
double softmax_jacobian_norm(const double* p, int64_t n);

// Sample variance (divide by n - 1) of every element.
double sample_variance(const Tensor& t);

// Standard deviation (divide by n - 1) of the entries of `values` where
// `mask` (broadcast to its shape; may be undefined) is 0.
double visible_std(const Tensor& values, const Tensor& mask);

// ||w.grad()||_F, 0 for a parameter without a gradient.
double grad_norm(const Variable& w);

// Fast N(0, 1) samples for the many random draws at initialisation: a
// ziggurat (Marsaglia and Tsang 2000) needs one random word and a table
// lookup for 99% of its samples, about 2 ns against randn's 19 ns
// (Box-Muller), and the init part draws about a billion. Seeded by four
// words of `gen`, so one call advances `gen` by four words.
void fill_normal(std::span<float> out, Generator& gen);

// ---- One training run (training_run.cpp) --------------------------------------------
// The tasks: "reverse" (an encoder-decoder outputs its input backwards: each
// output position must find one input position) and "recall" (a decoder-only
// model answers queries about key-value pairs it has read, nn/data/recall_task.h:
// attention must be sharp and driven by content). docs/study.md says why.
struct TaskSetup {
  std::string task;
  // The model's sizes (vocab, max_len, d_k, scale, norm and positions are
  // the run's: run_shape).
  nn::ModelConfig model = {.d_model = 64, .heads = 1, .layers = 1, .d_ff = 128};
  int64_t steps = 400;
  double lr = 2e-3;  // AdamW's peak, after a linear warm-up over 5% of the steps
  // Stop a run at its first evaluation with this held-out accuracy (0: never):
  // recall's outcome is whether and when it is solved, so a solved run has
  // nothing left to show and `steps` is its budget.
  double stop_at = 0;
  nn::RecallTaskConfig recall{};  // recall only
  int64_t context = 32;           // charlm only: the characters a window holds
};
TaskSetup reverse_setup();  // encoder-decoder, 1 layer per stack, d_model 32
TaskSetup
recall_setup();  // decoder, 2 layers, d_model 32; 16 keys, 4 pairs, 4 queries; stops at 99%
// A character-level language model (the qk-rate part): a decoder, 2 layers,
// d_model 64, on windows of 32 characters of the built-in generated corpus.
TaskSetup charlm_setup();

// Attention is called collapsed (Zhai et al. 2023) below this entropy_norm.
inline constexpr double kCollapsedEntropy = 0.1;

// How a model is parametrised (docs/study.md, "width: width and muP"):
//   Standard  PyTorch's initialisation, one learning rate for every weight,
//             the mode's attention scale.
//   MuP       muP for Adam (Yang et al. 2022, Table 3, relative to a base
//             width of kMuPBaseWidth): attention scale 1/d_k; hidden
//             matrices (Q, K, V, O, fc1, fc2) keep their 1/fan_in
//             initialisation but learn at lr * base / width; the output
//             layer starts at zero and learns at lr * base / width;
//             embeddings, biases and LayerNorms learn at lr.
enum class Parametrization { Standard, MuP };
inline constexpr int64_t kMuPBaseWidth = 32;

struct RunSpec {
  RunKey key;      // task, mode, d_k, seed
  TaskSetup task;  // the model's sizes (d_model, layers, d_ff, heads), steps and lr
  int64_t batch = 64, eval_every = 10, eval_examples = 128;
  // Before this step the attention layers are also probed every 2 steps
  // (train_layers.csv rows between the evaluations): collapse and recovery
  // happen in the first tens of steps. 0: only at evaluations. A probed step
  // takes the composed attention path, so it changes the run's last bits.
  int64_t probe_densely_until = 0;
  // The largest global gradient norm (nn::StepOptions::clip); 0: no clipping.
  double clip = 1.0;
  bool warmup = true;  // linear warm-up over the first 5% of the steps
  bool pre_ln = true;
  Parametrization parametrization = Parametrization::Standard;
  bool record_blocks = false;  // per-block gradient norms at each evaluation
  bool record_maps = false;    // the key layer's attention on one example (AttentionMap)
  bool record_flow = false;    // the key layer's backward graph at each evaluation (FlowGraph)
  uint64_t seed = 0;           // the study's base seed
  // "adamw", or "sgd" (momentum 0.9, no Nesterov, no weight decay; the
  // standard parametrisation only): make_optimizer's names.
  std::string optimizer = "adamw";
  std::string positional = "learned";  // ModelConfig::positional
  // Recall only (the length part): after training, also evaluate at these
  // numbers of pairs, longer sequences than trained on (length_train.cpp).
  std::vector<int64_t> test_pairs{};
  // The qk-rate part's knobs (0 and 1: as built). qk_logit_std > 0 scales
  // each attention layer's W_Q and W_K (and their biases) at the start so
  // that its unscaled q.k has this std on the held-out batch, layer by layer
  // from the input side; qk_lr_multiplier multiplies their learning rate
  // (their own parameter group, beside an arm's factor).
  double qk_logit_std = 0, qk_lr_multiplier = 1;
};

// Train short, test long: a recall run's held-out accuracy and its answer
// layer's top-1 attention mass (the largest weight of each answer's query,
// averaged) with `pairs` pairs, a sequence of test_len positions; train_len
// is the length it was trained at. Comparisons between modes use the seeds
// where both solved the trained length: a run that never learned the task
// says nothing about extending it.
struct LengthTestRow {
  RunKey run{};
  int64_t pairs = 0, train_len = 0, test_len = 0;
  double accuracy = 0, top1_mass = 0;
  bool solved = false;  // the run learned the trained length (length.h, kLengthSolved)
};

// What the layer where the task looks its answer up (key_layer) attends to on
// held-out example 0, head 0, before the first update and after the last:
// weights (queries x keys, row-major, each row summing to 1; a hidden key,
// causal or padding, weighs 0), cropped to the example's real length
// (reverse: its target positions and non-PAD source keys; recall: every
// position), and their entropy_norm as attention_stats computes it. `end`
// is empty, and entropy_end NaN, when the run diverged.
struct AttentionMap {
  std::string layer{};
  int64_t queries = 0, keys = 0;
  std::vector<float> init{}, end{};
  double entropy_init = 0, entropy_end = 0;
};

// The key layer's part of one training step's backward graph: its ops, the
// weights only it uses and the ops just outside it, each edge with the norm
// of the gradient the step sent back along it (autograd/graph.h, `focus`).
struct FlowGraph {
  int64_t step = 0;
  Graph graph;
};

struct RunOutput {
  std::vector<CurveRow> curves;
  std::vector<LayerRow> layers;
  std::vector<BlockRow> blocks;
  FinalRow final;
  std::vector<AttentionMap> maps;      // one when RunSpec::record_maps, else none
  std::vector<FlowGraph> flows;        // one per evaluation step when RunSpec::record_flow
  std::vector<LengthTestRow> lengths;  // one per RunSpec::test_pairs, after training
};

// The optimiser a run's `optimizer` names over `params` (or its parameter
// groups, each at lr x its factor) at learning rate lr: AdamW with
// nn::AdamWSettings::attention_paper() or SGD (momentum 0.9). Throws Error
// for any other name.
std::unique_ptr<nn::Optimizer> make_optimizer(const std::string& optimizer,
                                              std::vector<nn::ParamGroup> groups, double lr);
std::unique_ptr<nn::Optimizer> make_optimizer(const std::string& optimizer,
                                              std::vector<Variable> params, double lr);

// A run's FinalRow from its evaluations and training losses (summary.cpp):
// the last 10% of evaluations averaged, thresholds, loss AUC, spikes, the
// largest logit, the lowest entropy and the Q/V gradient ratio.
void summarise_run(RunOutput& out, int64_t steps, const std::vector<double>& train_losses);

// The model a run builds and its sequence lengths (reverse: source and
// target; recall: the decoder's), for a memory estimate before it runs.
struct RunShape {
  bool encoder_decoder = false;
  nn::ModelConfig config;
  int64_t src_len = 0, tgt_len = 0;
};
RunShape run_shape(const RunSpec& spec);

// Which stream of seeds the training runs draw from: every run's generators
// mix it in, so a new stream gives every (base seed, seed) fresh weights,
// batches and evaluation sets. A criterion that changes is judged on a stream
// no one has read before (docs/study.md, "History of the criteria"): 0 until
// 2026-12-06; 1 for the criteria declared then; 2 since four of them were
// given more seeds the same day.
inline constexpr uint64_t kSeedStream = 2;

// Within a (task, d_k, d_model, seed) the initial weights, the batches and
// the evaluation set do not depend on the mode, learning rate, warm-up,
// norm placement or parametrisation (but muP's zero output layer): runs are
// paired.
RunOutput train_one(const RunSpec& spec);

// Every run, side by side on settings.threads threads (the costliest, by d_k
// and d_model, first), each timed; the outputs in the order of `runs`.
std::vector<RunOutput> train_all(const std::string& part, const std::vector<RunSpec>& runs,
                                 const Settings& settings, const ProgressFn& progress);

}  // namespace gradflow::study
