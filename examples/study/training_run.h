// One training run of the study, as every training part uses it: a task, a
// model shape, a mode, a learning rate, warm-up or not, pre- or post-LN, the
// standard parametrisation or muP. The parts build grids of these
// (part_b.cpp, sweeps.cpp, depth_training.cpp) and run them side by side.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "examples/study/study.h"

namespace gradflow::study {

// How a model is parametrised (docs/study.md, "Width and muP"):
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
  bool warmup = true;  // linear warm-up over the first 5% of the steps
  bool pre_ln = true;
  Parametrization parametrization = Parametrization::Standard;
  bool record_blocks = false;  // per-block gradient norms at each evaluation
  uint64_t seed = 0;           // the study's base seed
};

// Each transformer block's gradient norm (all its parameters together) at
// an evaluation step: gradient flow across depth in training.
struct BlockRow {
  int64_t step = 0;
  std::string layer;  // "enc0" ... "dec3", input side first
  double loss = 0;    // the step's training loss
  double grad_norm = 0;
};

struct RunOutput {
  std::vector<CurveRow> curves;
  std::vector<LayerRow> layers;
  std::vector<BlockRow> blocks;
  FinalRow final;
};

// Within a (task, d_k, d_model, seed) the initial weights, the batches and
// the evaluation set do not depend on the mode, learning rate, warm-up,
// norm placement or parametrisation (but muP's zero output layer): runs are
// paired.
RunOutput train_one(const RunSpec& spec);

// Every run, side by side on `threads` threads (the costliest, by d_k and
// d_model, first), each timed; the outputs in the order of `runs`.
std::vector<RunOutput> train_all(const std::string& part, const std::vector<RunSpec>& runs,
                                 int threads, const ProgressFn& progress);

}  // namespace gradflow::study
