// What one training run records, row by row: its key, each evaluation, each
// attention layer at each probed step, each block's gradient, and the run's
// end. training_run.cpp fills them (run_probes.cpp the layers' rows) and
// train_figures.cpp writes them to the train part's CSV files, whose columns
// docs/study.md explains. study.h, which every part includes, includes this.
#pragma once

#include <cstdint>
#include <string>

namespace gradflow::study {

// A run: a (task, d_k, mode, seed). Within a seed every mode starts from the
// same weights and sees the same batches and evaluation set.
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
  // running median (over the 20 steps before it), more than 6 batch-noise
  // sds above it (stats.h, loss_spikes) and above 0.1.
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
  // ||dL/dS||: the gradient at the scaled logits S = s q k^T, the softmax's
  // input (before a score transform and the mask). dL/dW_Q carries s once
  // more, so this is the gradient that the scale does not multiply.
  double grad_norm_logits = 0;
  // What the optimiser did with that gradient, the step's update: ||delta W|| / ||W||
  // for W_Q, W_K, W_V, and the mean |change| of the scaled logits on the step's
  // own batch (visible entries). Under Adam the update's size does not follow
  // the gradient's; these show whether a small gradient was a small step.
  double update_wq = 0, update_wk = 0, update_wv = 0, logit_change = 0;
  // ||dL/dq|| and ||dL/dk|| over all heads: q and k as they enter q k^T (after
  // the projections and any variant, before the scale s), on the same batch.
  // dL/dq = s (dL/dS) k: where dL/dS is small, so is what reaches W_Q.
  double grad_norm_q = 0, grad_norm_k = 0;
  // ||dL/dP||: the gradient at the attention weights P = softmax(S), the
  // softmax's output. The softmax passes it to its input through its
  // Jacobian diag(p) - p p^T, so transmission = ||dL/dS|| / ||dL/dP|| is
  // how much of it the softmax lets through: small when p is near one-hot.
  double grad_norm_weights = 0, transmission = 0;
  // The key layer only (NaN elsewhere): the attention weight a scored query
  // puts on the key that holds its answer, averaged over the batch's scored
  // queries and the heads (reverse: the source symbol the output copies;
  // recall: the position of the value whose key the query names). Low
  // entropy with a high weight here is attention that found its key, not a
  // collapse.
  double correct_key_weight = 0;
};

// Each transformer block's gradient norm (all its parameters together) at an
// evaluation step: gradient flow across depth in training.
struct BlockRow {
  int64_t step = 0;
  std::string layer;  // "enc0" ... "dec3", input side first
  double loss = 0;    // the step's training loss
  double grad_norm = 0;
};

// The end of a run. Thresholds not reached count as the run's length and
// are flagged (censored); the final figures average the last 10% of the
// evaluations.
struct FinalRow {
  RunKey run;
  std::string optimizer = "adamw";  // RunSpec::optimizer
  double lr = 0;
  int64_t steps = 0;      // the budget
  int64_t steps_run = 0;  // the updates made: fewer than steps when the run stopped solved
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
  // kCollapsedEntropy (study.h), and the first spike's step; -1 for none.
  int64_t collapse_step = -1, first_spike_step = -1;
  // The std of the unscaled q.k over the visible (query, key) pairs of a
  // held-out batch, averaged over the attention layers: at initialisation
  // and after training.
  double qk_std_init = 0, qk_std = 0;
  // The mean held-out loss over the whole budget: loss_auc, with a run that
  // stopped when it solved the task counted at its last held-out loss for
  // the steps it did not run. Comparable across runs that stop at different
  // steps, and free of accuracy's ceiling.
  double loss_auc_budget = 0;
  // The smallest W_Q / W_V gradient ratio among the attention layers,
  // averaged over the last 10% of evaluations: a vanishing Q gradient in
  // any layer shows here.
  double grad_ratio_qv = 0;
  // The share of steps whose global gradient norm was above the clip (so
  // clipped), and W_Q's and W_K's share (weights and biases, every layer)
  // of the squared global norm, averaged over the steps: under SGD a
  // clipped step is normalised, whatever the gradient's size.
  double clipped_fraction = 0, qk_grad_share = 0;
  bool diverged = false;
  double seconds = 0;  // wall time of the run (not written to the CSV files)
};

}  // namespace gradflow::study
