// The workloads train_bench times (WORKLOADS.md's rows and the scaling
// study's Part B models), their model FLOPs, and the one training step each
// runs. bench/peer_torch.py builds the same models and steps in PyTorch.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "nn/models.h"
#include "nn/module.h"
#include "tensor/random.h"
#include "tensor/tensor.h"

namespace gradflow::bench {

// B batch, T seq (source and target alike), C d_model, F d_ff, L layers per
// stack, V vocab, D head_dim (0: C / heads). task is "" for WORKLOADS.md's
// rows, or the study's "reverse" or "recall", whose batches come from that
// task and whose step is the study's.
struct Workload {
  std::string kind;  // "encdec", "decoder" or "encoder"
  int64_t d_model, heads, layers, d_ff, seq, batch, vocab, head_dim = 0;
  std::string task;
  // The attention options (nn/scale_modes.h, nn/positional_schemes.h); the
  // peer (peer_torch.py) builds the defaults only.
  std::string scale = "inv_sqrt_dk", positional = "learned";
};

// "seq2seq-tiny", "gpt-small", "study-reverse" or "study-recall".
Workload named_workload(const std::string& name);

// Model FLOPs of one training step (WORKLOADS.md's formula; see workloads.cpp).
double step_flops(const Workload& w);

nn::ModelConfig model_config(const Workload& w);

// One training step of a workload, ready to run again and again: the model,
// its optimiser, fixed batches and the step itself.
struct TrainingStep {
  std::shared_ptr<nn::Module> model;
  // zero_grad, forward and backward over `parts` parts of the batch (one per
  // thread), gradient clipping where the study clips, the optimiser's step.
  // Returns the loss.
  std::function<double()> run;
};

// parts: 1, or one part of the batch per thread (autograd/data_parallel.h).
TrainingStep make_training_step(const Workload& w, int64_t parts, Generator& gen);

}  // namespace gradflow::bench
