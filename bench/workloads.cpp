#include "bench/workloads.h"

#include <algorithm>
#include <vector>

#include "autograd/data_parallel.h"
#include "autograd/ops.h"
#include "nn/data/recall_task.h"
#include "nn/data/toy_tasks.h"
#include "nn/loss.h"
#include "nn/optim/optim.h"
#include "tensor/creation.h"

namespace gradflow::bench {

namespace {

// The study's tasks as examples/study/part_b.cpp sets them up: reverse
// sequences of 2 to 8 of 8 symbols (S = T = 9, vocab 11); recall of 5 of 32
// keys with 32 values and 5 queries (T = 20, vocab 67).
nn::ToyTaskConfig study_reverse_task() {
  return {.task = "reverse", .n_symbols = 8, .min_len = 2, .max_len = 8, .max_digits = 3};
}
nn::RecallTaskConfig study_recall_task() {
  return {.n_keys = 32, .n_values = 32, .pairs = 5, .queries = 5};
}

// One batch: src and src_pad only for models with an encoder (src_pad
// undefined when nothing is padded), tgt the decoder's input, y the targets.
// Shapes: (B, T) each; int64 ids, src_pad float 1 at padding.
struct Batch {
  Tensor src, src_pad, tgt, y;
};

Batch make_workload_batch(const Workload& w, Generator& gen) {
  if (w.task == "reverse") {
    nn::Seq2SeqBatch s = nn::make_batch(study_reverse_task(), w.batch, gen);
    return {s.src, s.src_pad, s.tgt_in, s.tgt_out};
  }
  if (w.task == "recall") {
    nn::RecallBatch r = nn::make_recall_batch(study_recall_task(), w.batch, gen);
    return {Tensor(), Tensor(), r.input, r.target};
  }
  return {randint(0, w.vocab, {w.batch, w.seq}, gen), Tensor(),
          randint(0, w.vocab, {w.batch, w.seq}, gen), randint(0, w.vocab, {w.batch, w.seq}, gen)};
}

}  // namespace

Workload named_workload(const std::string& name) {
  if (name == "seq2seq-tiny") return {"encdec", 64, 4, 2, 256, 16, 64, 16, 0, ""};
  // Part B at its cheapest (reverse, d_k 16) and its dearest (recall, d_k 256):
  // d_model 32, one head of d_k, d_ff 64, batches of 64 (training_run.cpp).
  if (name == "study-reverse")
    return {"encdec", 32,
            1,        1,
            64,       nn::tgt_len(study_reverse_task()),
            64,       nn::vocab_size(study_reverse_task()),
            16,       "reverse"};
  if (name == "study-recall")
    return {"decoder", 32,
            1,         2,
            64,        nn::recall_seq_len(study_recall_task()),
            64,        nn::recall_vocab_size(study_recall_task()),
            256,       "recall"};
  return {"decoder", 256, 8, 4, 1024, 128, 16, 96, 0, ""};  // gpt-small
}

// Model FLOPs of one training step, WORKLOADS.md's formula (forward plus a
// backward of twice its cost, matrix products only):
//   6 x (weights of every Linear) x (tokens passing through it)
//     Linear weights: per block Q, K, V, O (4 C A, A = heads x head_dim,
//     which is C unless head_dim is set) and the two feed-forward matrices
//     (2 C F); a decoder block of an encoder-decoder adds the
//     cross-attention's Q, K, V, O (4 C A); the head is C V. Biases,
//     embeddings and LayerNorms are not counted. Encoder blocks see the
//     source's B T tokens, decoder blocks and the head the target's.
//   + 12 x L x T_keys x A x (B T_queries) per attention stack, for the two
//     attention products (Q K^T and weights V, 2 T_q T_k A each forward per
//     sequence), causal masking not discounted; cross-attention counts the
//     same with the source length as T_keys.
// The source and the target both have T = seq positions here.
double step_flops(const Workload& w) {
  const double C = static_cast<double>(w.d_model), F = static_cast<double>(w.d_ff);
  const double A = static_cast<double>(w.head_dim ? w.heads * w.head_dim : w.d_model);
  const double L = static_cast<double>(w.layers), T = static_cast<double>(w.seq);
  const double V = static_cast<double>(w.vocab), tokens = static_cast<double>(w.batch) * T;
  const double block = 4 * C * A + 2 * C * F, cross = 4 * C * A;
  const double attention = 12 * L * T * A * tokens;
  double linear_weights = 0, attention_stacks = 0;
  if (w.kind == "encdec") {
    linear_weights = L * block + L * (block + cross) + C * V;
    attention_stacks = 3;  // encoder self, decoder self, decoder cross
  } else {
    linear_weights = L * block + C * V;
    attention_stacks = 1;
  }
  return 6 * linear_weights * tokens + attention_stacks * attention;
}

nn::ModelConfig model_config(const Workload& w) {
  nn::ModelConfig config;
  config.vocab = w.vocab;
  config.d_model = w.d_model;
  config.heads = w.heads;
  config.layers = w.layers;
  config.d_ff = w.d_ff;
  config.head_dim = w.head_dim;
  config.max_len = w.seq;
  config.scale = w.scale;
  config.positional = w.positional;
  return config;
}

TrainingStep make_training_step(const Workload& w, int64_t parts, Generator& gen) {
  const nn::ModelConfig config = model_config(w);
  config.validate();  // e.g. d_model not divisible by heads: one line, exit 2
  // The model, and its forward on a batch as the peer calls it: the
  // encoder-decoder reads src (with its padding) and tgt, the decoder-only
  // model tgt, the encoder src.
  std::shared_ptr<nn::Module> model;
  std::function<Variable(const Batch&)> forward;
  if (w.kind == "encdec") {
    auto m = std::make_shared<nn::EncoderDecoder>(config, gen);
    forward = [m](const Batch& b) { return m->forward(b.src, b.tgt, b.src_pad); };
    model = m;
  } else if (w.kind == "decoder") {
    auto m = std::make_shared<nn::DecoderLM>(config, gen);
    forward = [m](const Batch& b) { return m->forward(b.tgt); };
    model = m;
  } else {
    auto m = std::make_shared<nn::EncoderClassifier>(/*classes=*/0, config, gen);
    forward = [m](const Batch& b) { return m->forward(b.src); };
    model = m;
  }
  const bool study = !w.task.empty();
  // The study's AdamW (training_run.cpp) or WORKLOADS.md's.
  auto opt = study ? std::make_shared<nn::AdamW>(model->parameters(), 3e-3,
                                                 nn::AdamWSettings::attention_paper())
                   : std::make_shared<nn::AdamW>(model->parameters(), 1e-3,
                                                 nn::AdamWSettings::pytorch(0.01));
  const int64_t ignore = study ? nn::kPadToken : -100;
  const Batch batch = make_workload_batch(w, gen);

  // With more than one part, each part's mean loss is weighted by its share
  // of the rows so that the parts' losses and gradients add up to the whole
  // batch's (exactly so without ignored targets).
  auto part_loss = [=](int64_t part) {
    const PartRange r = part_range(w.batch, part, parts);
    auto rows = [&](const Tensor& t) {
      return t.defined() ? t.narrow(0, r.begin, r.end - r.begin) : t;
    };
    const Batch b{rows(batch.src), rows(batch.src_pad), rows(batch.tgt), rows(batch.y)};
    Variable loss = nn::cross_entropy(forward(b), b.y, ignore);
    return parts == 1 ? loss : loss * (static_cast<double>(r.end - r.begin) / w.batch);
  };
  const std::vector<Variable> params = model->parameters();
  auto run = [=] {
    // zero_grad first, as a training loop usually goes: the last step's
    // gradients are then not held through this step's forward.
    opt->zero_grad();
    double loss = 0;
    for (double part : backward_in_parallel(parts, part_loss)) loss += part;
    if (study) nn::clip_grad_norm(params, 1.0);
    opt->step();
    return loss;
  };
  return {model, run};
}

}  // namespace gradflow::bench
