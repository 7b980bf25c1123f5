// What one training run is made of (training_run.cpp) and what its loop
// measures of its attention layers (run_probes.cpp): internal to the study.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "examples/study/study.h"
#include "nn/data/char_dataset.h"
#include "nn/data/toy_tasks.h"
#include "nn/models.h"

namespace gradflow::study {

struct Batch {
  Tensor src, src_pad, input, target;  // src, src_pad only for reverse
};

// ---- the tasks (study_tasks.cpp) -----------------------------------------------
// reverse: sequences of 2 to 8 symbols out of 8.
nn::ToyTaskConfig reverse_task();
// charlm's text: the built-in generated corpus, the same for every run; its
// last 10% is the held-out split. A character's token is its id + 1 (0 is PAD).
const nn::CharDataset& charlm_text();
// b examples of the task, from `gen`; held_out: charlm's held-out split (the
// other tasks draw fresh examples either way).
Batch make_study_batch(const TaskSetup& task, int64_t b, Generator& gen, bool held_out = false);

// One model of either kind, with its attention layers and blocks named for
// the logs, input side first.
struct StudyModel {
  std::unique_ptr<nn::Module> owner;
  nn::EncoderDecoder* seq2seq = nullptr;
  nn::DecoderLM* lm = nullptr;
  std::vector<std::pair<std::string, nn::MultiHeadAttention*>> attention;
  std::vector<std::pair<std::string, nn::Module*>> blocks;
  nn::Linear* head = nullptr;

  Variable forward(const Batch& b) const {
    return seq2seq ? seq2seq->forward(b.src, b.input, b.src_pad) : lm->forward(b.input);
  }
};

// The run's model, its attention layers started as its mode asks
// (training_run.cpp), from `gen`.
StudyModel build_model(const RunSpec& spec, Generator& gen);

// ---- Probes (run_probes.cpp) -----------------------------------------------------
// The attention layers' state after a backward: the probe of the forward
// that was recorded and the gradients of W_Q, W_K, W_V; one row per layer.
void record_layers(const StudyModel& model, const RunKey& key, int64_t step, const Batch& batch,
                   std::vector<LayerRow>& out);
// Per scored query of `b` (B x T, row-major), the key position that holds its
// answer in the task's key layer (key_layer), -1 for a query not scored:
// reverse's cross-attention reads the source symbol the output copies,
// recall's second layer the value after the key the query names.
std::vector<int64_t> correct_keys(const Batch& b);
// Before that backward: keeps the gradients record_layers reads at the
// probe's logits and at the q and k they were made from.
void retain_probe_gradients(const StudyModel& model);

// Before an evaluation step's update: each attention layer's W_Q, W_K, W_V
// and the scaled logits its probe recorded on the step's batch.
struct LayerSnapshot {
  Tensor wq, wk, wv, logits;
};
std::vector<LayerSnapshot> snapshot(const StudyModel& model);

// After the update: fills the update columns of the layers' rows, the last
// model.attention.size() rows of `rows`, from a second forward of the batch.
void record_updates(const StudyModel& model, const Batch& b,
                    const std::vector<LayerSnapshot>& before, std::vector<LayerRow>& rows);

// Each block's gradient norm (all its parameters together).
void record_blocks(const StudyModel& model, int64_t step, double loss, std::vector<BlockRow>& out);

// The std of the unscaled q.k (for qk_l2norm, of cos(q, k)) on a held-out
// batch, averaged over the layers: the probe's logits over each layer's factor.
double qk_std(const StudyModel& model, const Batch& batch);
// Each attention layer's such std, in model.attention's order.
std::vector<double> qk_stds(const StudyModel& model, const Batch& batch);
// Scales each attention layer's W_Q and W_K (and their biases) so that its
// unscaled q.k has std `target` on `batch` (RunSpec::qk_logit_std). Error
// when a layer's q.k has no spread to scale.
void set_qk_logit_std(const StudyModel& model, const Batch& batch, double target);

// Held-out example 0 alone: a batch of one.
Batch first_example(const Batch& b);
// The map's layer and its size on `example` (AttentionMap, empty weights).
AttentionMap empty_map(const std::string& task, const Batch& example);
// The map's layer on `example` (a batch of one), head 0, cropped to
// map.queries x map.keys: the weights, row-major, and their entropy_norm.
std::pair<std::vector<float>, double> attention_map(const StudyModel& model, const Batch& example,
                                                    const AttentionMap& map);

// ---- Train short, test long (length_train.cpp) ----------------------------------
// A recall model trained at spec.task.recall evaluated at each of
// spec.test_pairs (and at the trained number): fresh held-out sequences at
// each length, drawn from `seed`.
std::vector<LengthTestRow> evaluate_lengths(const StudyModel& model, const RunSpec& spec,
                                            uint64_t seed);
// The recall task at `pairs` pairs, the rest as trained.
nn::RecallTaskConfig at_pairs(nn::RecallTaskConfig task, int64_t pairs);

}  // namespace gradflow::study
