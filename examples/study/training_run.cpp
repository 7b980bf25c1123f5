// One training run of the study (study.h), as every training part uses it:
// the model, its optimiser, the loop with its evaluations, and the run's
// summary; and the runs of a part side by side. What the loop measures of
// its attention layers is run_probes.cpp's.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <tuple>

#include "autograd/graph.h"
#include "autograd/ops.h"
#include "examples/study/run_model.h"
#include "nn/data/recall_task.h"
#include "nn/data/toy_tasks.h"
#include "nn/init.h"
#include "nn/length_scale.h"
#include "nn/loss.h"
#include "nn/models.h"
#include "nn/optim/optim.h"
#include "nn/optim/training_step.h"
#include "nn/scale_variants.h"
#include "tensor/ops.h"

namespace gradflow::study {

namespace {

StudyModel build(const RunSpec& spec, Generator& gen) {
  const TaskSetup& task = spec.task;
  const nn::ModelConfig c = run_shape(spec).config;
  StudyModel m;
  auto add_decoder = [&m](const nn::Decoder& decoder) {
    for (size_t i = 0; i < decoder.layers.size(); ++i) {
      const std::string name = "dec" + std::to_string(i);
      m.attention.emplace_back(name + ".self", decoder.layers[i]->self_attn.get());
      if (decoder.layers[i]->cross_attn)
        m.attention.emplace_back(name + ".cross", decoder.layers[i]->cross_attn.get());
      m.blocks.emplace_back(name, decoder.layers[i].get());
    }
  };
  if (task.task == "reverse") {
    auto model = std::make_unique<nn::EncoderDecoder>(c, gen);
    m.seq2seq = model.get();
    for (size_t i = 0; i < model->encoder->layers.size(); ++i) {
      const std::string name = "enc" + std::to_string(i);
      m.attention.emplace_back(name + ".self", model->encoder->layers[i]->self_attn.get());
      m.blocks.emplace_back(name, model->encoder->layers[i].get());
    }
    add_decoder(*model->decoder);
    m.head = model->lm_head.get();
    m.owner = std::move(model);
  } else {
    auto model = std::make_unique<nn::DecoderLM>(c, gen);
    m.lm = model.get();
    add_decoder(*model->decoder);
    m.head = model->lm_head.get();
    m.owner = std::move(model);
  }
  for (auto& [name, a] : m.attention) apply_mode_init(*a, spec.key.mode);
  // Built for the longest test, trained at the task's length: ssmax starts as
  // a model built for the length it trains at (s log L = 1/sqrt(d_k) there).
  if (!spec.test_pairs.empty())
    for (auto& [name, a] : m.attention)
      if (auto* ss = a->variant<nn::ScalableSoftmax>()) {
        Tensor s = ss->s.data();
        s.fill_(nn::ssmax_start(a->d_k(), nn::recall_seq_len(task.recall)));
      }
  if (spec.parametrization == Parametrization::MuP) nn::init::constant_(m.head->weight, 0);
  return m;
}

// The run's optimiser, AdamW or SGD, with its parameter groups: one at the
// run's learning rate for the standard parametrisation; for muP a second
// group, its hidden matrices and output layer, at lr x base / width, and for
// an arm with a learning-rate factor (arms.h: kReparam's d_k^(-1/4)) one of
// W_Q and W_K at lr x that factor. The other parameters come
// first, in the model's order: clipping sums the gradients' squares in the
// optimiser's order, and the study's numbers were made with it.
std::unique_ptr<nn::Optimizer> make_optimiser(const RunSpec& spec, const StudyModel& model) {
  if (spec.optimizer != "adamw") {
    // Their second learning rate is derived from Adam's step, which does not
    // follow the gradient's size: under SGD it would be another rule.
    if (has_qk_lr_factor(spec.key.mode) || spec.qk_lr_multiplier != 1 ||
        spec.parametrization != Parametrization::Standard)
      fail("scaling_study: optimizer '" + spec.optimizer +
           "' takes the standard parametrisation only (not muP, not an arm whose W_Q and W_K "
           "learn at a rate of their own, as " +
           spec.key.mode + ")");
    return make_optimizer(spec.optimizer, model.owner->parameters(), spec.task.lr);
  }
  if (has_qk_lr_factor(spec.key.mode) || spec.qk_lr_multiplier != 1) {
    // Under Adam a step moves a weight by about the learning rate whatever
    // its gradient, so kReparam's W_Q' = d_k^(-1/4) W_Q must also move
    // d_k^(-1/4) as far for W_Q' W_K'^T to follow 1/sqrt(d_k)'s W_Q W_K^T / sqrt(d_k).
    std::vector<const VariableImpl*> qk;
    nn::ParamGroup plain,
        scaled{.lr_factor = qk_lr_factor(spec.key.mode, spec.key.d_k) * spec.qk_lr_multiplier};
    for (const auto& [name, a] : model.attention)
      for (const nn::Linear* projection : {a->q_proj.get(), a->k_proj.get()})
        for (const Variable* p : {&projection->weight, &projection->bias})
          if (p->defined()) qk.push_back(p->impl().get()), scaled.params.push_back(*p);
    for (const Variable& p : model.owner->parameters())
      if (std::find(qk.begin(), qk.end(), p.impl().get()) == qk.end()) plain.params.push_back(p);
    return make_optimizer("adamw", {plain, scaled}, spec.task.lr);
  }
  if (spec.parametrization == Parametrization::Standard)
    return make_optimizer("adamw", model.owner->parameters(), spec.task.lr);
  // muP: a matrix whose both sides grow with the width ("hidden"), or the
  // output layer, learns at lr * base / width; the rest at lr.
  nn::ParamGroup plain, scaled{.lr_factor = static_cast<double>(kMuPBaseWidth) /
                                            static_cast<double>(spec.task.model.d_model)};
  for (const auto& [name, p] : model.owner->named_parameters()) {
    const bool matrix = p.ndim() == 2 && name.find("embed") == std::string::npos;
    (matrix ? scaled : plain).params.push_back(p);
  }
  return make_optimizer("adamw", {plain, scaled}, spec.task.lr);
}

// (right, scored) over the positions whose target is not PAD.
std::pair<int64_t, int64_t> count_right(const Tensor& logits, const Tensor& target) {
  std::vector<double> p = max(logits, -1).indices.to_vector(), t = target.to_vector();
  int64_t right = 0, total = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] == nn::kPadToken) continue;
    right += p[i] == t[i];
    ++total;
  }
  return {right, total};
}

// Whole sequences right by greedy decoding (reverse).
double greedy_sequence_accuracy(const nn::EncoderDecoder& m, const std::vector<Batch>& eval) {
  int64_t right = 0, seqs = 0;
  for (const Batch& b : eval) {
    Tensor out =
        m.greedy_decode(b.src, b.src_pad, nn::kBosToken, nn::kEosToken, b.target.shape()[1]);
    for (int64_t i = 0; i < b.target.shape()[0]; ++i, ++seqs) {
      bool all = true;
      for (int64_t t = 0; t < b.target.shape()[1] && all; ++t) {
        const double want = b.target.at({i, t});
        if (want == nn::kPadToken) break;
        all = t < out.shape()[1] && out.at({i, t}) == want;
      }
      right += all;
    }
  }
  return static_cast<double>(right) / static_cast<double>(std::max<int64_t>(seqs, 1));
}

// Held-out loss and accuracy over the evaluation set.
std::pair<double, double> evaluate(const StudyModel& model, const std::vector<Batch>& eval) {
  NoGradGuard no_grad;
  double loss = 0, right = 0, total = 0;
  for (const Batch& e : eval) {
    check_stop();
    Variable logits = model.forward(e);
    loss += nn::cross_entropy(logits, e.target, nn::kPadToken).item();
    auto [r, t] = count_right(logits.data(), e.target);
    right += static_cast<double>(r), total += static_cast<double>(t);
  }
  return {loss / static_cast<double>(eval.size()), right / std::max(total, 1.0)};
}

// The squared norm of W_Q's and W_K's gradients (weights and biases, every
// attention layer), before clipping.
double qk_grad_squared(const StudyModel& model) {
  double total = 0;
  for (const auto& [name, a] : model.attention)
    for (const nn::Linear* projection : {a->q_proj.get(), a->k_proj.get()})
      for (const Variable* p : {&projection->weight, &projection->bias})
        if (p->defined()) {
          const double g = grad_norm(*p);
          total += g * g;
        }
  return total;
}

// The key layer's ops in the graph behind `loss`, its weights named.
Graph key_layer_graph(const StudyModel& model, const std::string& task, const Variable& loss,
                      const GraphCapture& capture) {
  const auto layer = std::find_if(model.attention.begin(), model.attention.end(),
                                  [&](const auto& a) { return a.first == key_layer(task); });
  if (layer == model.attention.end()) fail("scaling_study: no layer ", key_layer(task));
  return build_graph(loss, {.capture = &capture,
                            .names = nn::graph_names(*layer->second, layer->first),
                            .focus = layer->second});
}

}  // namespace

StudyModel build_model(const RunSpec& spec, Generator& gen) { return build(spec, gen); }

std::unique_ptr<nn::Optimizer> make_optimizer(const std::string& optimizer,
                                              std::vector<nn::ParamGroup> groups, double lr) {
  if (optimizer == "adamw")
    return std::make_unique<nn::AdamW>(std::move(groups), lr, nn::AdamWSettings::attention_paper());
  if (optimizer == "sgd")
    return std::make_unique<nn::SGD>(std::move(groups), lr, 0.9, /*nesterov=*/false, 0.0);
  fail("scaling_study: unknown optimizer '" + optimizer + "' (expected adamw or sgd)");
}

std::unique_ptr<nn::Optimizer> make_optimizer(const std::string& optimizer,
                                              std::vector<Variable> params, double lr) {
  return make_optimizer(optimizer, std::vector<nn::ParamGroup>{{std::move(params)}}, lr);
}

RunShape run_shape(const RunSpec& spec) {
  const TaskSetup& task = spec.task;
  RunShape shape;
  nn::ModelConfig& c = shape.config;
  c = task.model;
  c.head_dim = spec.key.d_k;
  c.norm = spec.pre_ln ? nn::NormPlacement::Pre : nn::NormPlacement::Post;
  c.scale = scale_mode_of(spec.parametrization == Parametrization::MuP ? "inv_dk" : spec.key.mode);
  c.positional = spec.positional;
  if (task.task == "reverse") {
    shape.encoder_decoder = true;
    shape.src_len = nn::src_len(reverse_task());
    shape.tgt_len = nn::tgt_len(reverse_task());
    c.vocab = nn::vocab_size(reverse_task());
    c.max_len = std::max(shape.src_len, shape.tgt_len);
  } else if (task.task == "charlm") {
    shape.tgt_len = c.max_len = task.context;
    c.vocab = charlm_text().vocab_size() + 1;  // and PAD
  } else {
    shape.tgt_len = c.max_len = nn::recall_seq_len(task.recall);
    c.vocab = nn::recall_vocab_size(task.recall);
    for (int64_t pairs : spec.test_pairs)  // room for the longest test
      c.max_len = std::max(c.max_len, nn::recall_seq_len(at_pairs(task.recall, pairs)));
  }
  return shape;
}

RunOutput train_one(const RunSpec& spec) {
  const RunKey& key = spec.key;
  const TaskSetup& task = spec.task;
  // The same seeds for every mode, lr, warm-up and norm placement of a
  // (task, d_k, d_model, seed): the same init, data and evaluation set.
  const uint64_t base =
      ((spec.seed * 1000003 + static_cast<uint64_t>(key.seed)) * 7919 +
       static_cast<uint64_t>(key.d_k) * 31 + static_cast<uint64_t>(task.model.d_model) * 104729 +
       (task.task == "reverse"  ? 1
        : task.task == "charlm" ? 3
                                : 2)) ^
      (kSeedStream * 0x9E3779B97F4A7C15ULL);
  Generator init(base), data(base + 100), eval_gen(base + 200);
  StudyModel model = build(spec, init);
  std::vector<Batch> eval;
  for (int64_t left = spec.eval_examples; left > 0; left -= 128)
    eval.push_back(make_study_batch(task, std::min<int64_t>(left, 128), eval_gen, true));
  const int64_t steps = task.steps;
  if (spec.qk_logit_std > 0) set_qk_logit_std(model, eval.front(), spec.qk_logit_std);
  std::unique_ptr<nn::Optimizer> opt = make_optimiser(spec, model);
  const nn::LrSchedule schedule =
      nn::LrSchedule::linear_warmup(task.lr, spec.warmup ? std::max<int64_t>(1, steps / 20) : 1);
  // Under SGD the clip caps the step too: lr * ||g|| <= lr (momentum aside).
  const nn::StepOptions step_options{.clip = spec.clip,
                                     .non_finite = nn::NonFinitePolicy::kDiverge};
  double clipped = 0, qk_share = 0, measured = 0;
  RunOutput out;
  out.final.run = key;
  out.final.optimizer = spec.optimizer;
  out.final.lr = task.lr;
  out.final.steps = steps;
  out.final.qk_std_init = qk_std(model, eval.front());
  const Batch example = spec.record_maps ? first_example(eval.front()) : Batch();
  if (spec.record_maps) {
    out.maps.push_back(empty_map(task.task, example));
    std::tie(out.maps[0].init, out.maps[0].entropy_init) =
        attention_map(model, example, out.maps[0]);
  }
  std::vector<double> train_losses;
  bool solved = false;
  for (int64_t step = 0; step <= steps; ++step) {
    const bool eval_step = step % spec.eval_every == 0 || step == steps;
    const bool probe_step = eval_step || (step < spec.probe_densely_until && step % 2 == 0);
    if (step == steps) {  // after the last update: one more evaluation
      auto [eval_loss, eval_acc] = evaluate(model, eval);
      out.curves.push_back({key, step, train_losses.back(), eval_loss, eval_acc});
      break;
    }
    check_stop();  // a run takes seconds: a stop signal need not wait for it
    opt->zero_grad();
    Batch b = make_study_batch(task, spec.batch, data);
    // The probe (which takes the composed attention path) only where it is read.
    for (auto& [name, a] : model.attention) a->record_probe = probe_step;
    // Recording the graph reads the gradients and changes none of them.
    std::unique_ptr<GraphCapture> capture;
    if (spec.record_flow && eval_step) capture = std::make_unique<GraphCapture>();
    Variable loss = nn::cross_entropy(model.forward(b), b.target, nn::kPadToken);
    if (probe_step) retain_probe_gradients(model);  // the gradients record_layers reads
    train_losses.push_back(loss.item());
    if (step == 0) out.final.initial_loss = train_losses.back();
    std::vector<LayerSnapshot> before;
    if (std::isfinite(train_losses.back())) {
      check_stop();  // a large model's forward and backward take long: stop between them
      loss.backward();
      if (capture) out.flows.push_back({step, key_layer_graph(model, task.task, loss, *capture)});
      // What the run measures of this step's gradients, before they are clipped.
      if (probe_step) {
        record_layers(model, key, step, b, out.layers);
        before = snapshot(model);
      }
      if (eval_step) {
        if (spec.record_blocks) record_blocks(model, step, train_losses.back(), out.blocks);
        auto [eval_loss, eval_acc] = evaluate(model, eval);
        out.curves.push_back({key, step, train_losses.back(), eval_loss, eval_acc});
        solved = task.stop_at > 0 && eval_acc >= task.stop_at;
      }
    }
    capture.reset();
    const double qk_squared = std::isfinite(train_losses.back()) ? qk_grad_squared(model) : NAN;
    const nn::StepReport report =
        nn::training_step(*opt, schedule, train_losses.back(), step_options);
    if (report.stop) {
      out.final.diverged = true;  // a non-finite loss: nothing was updated
      break;
    }
    if (std::isfinite(report.grad_norm) && report.grad_norm > 0) {
      clipped += spec.clip > 0 && report.grad_norm > spec.clip;
      qk_share += qk_squared / (report.grad_norm * report.grad_norm);
      ++measured;
    }
    out.final.steps_run = step + 1;
    if (probe_step) record_updates(model, b, before, out.layers);
    if (solved) break;  // after this step's update, so its update columns are filled
  }
  out.final.clipped_fraction = measured > 0 ? clipped / measured : NAN;
  out.final.qk_grad_share = measured > 0 ? qk_share / measured : NAN;
  if (!out.curves.empty()) summarise_run(out, steps, train_losses);
  out.final.qk_std = out.final.diverged ? NAN : qk_std(model, eval.front());
  if (spec.record_maps) {
    if (out.final.diverged)
      out.maps[0].entropy_end = NAN;
    else
      std::tie(out.maps[0].end, out.maps[0].entropy_end) =
          attention_map(model, example, out.maps[0]);
  }
  if (model.seq2seq && !out.final.diverged)
    out.final.seq_accuracy = greedy_sequence_accuracy(*model.seq2seq, eval);
  if (!spec.test_pairs.empty() && !out.final.diverged) {
    out.lengths = evaluate_lengths(model, spec, base + 300);
    for (LengthTestRow& r : out.lengths) r.run = key;
  }
  return out;
}

std::vector<RunOutput> train_all(const std::string& part, const std::vector<RunSpec>& runs,
                                 const Settings& settings, const ProgressFn& progress) {
  auto cost = [](const RunSpec& r) {
    return static_cast<double>(r.task.steps * r.task.model.layers) *
           static_cast<double>(r.task.model.d_model) *
           static_cast<double>(r.key.d_k + r.task.model.d_model);
  };
  std::vector<size_t> order(runs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return cost(runs[a]) > cost(runs[b]); });
  std::vector<RunOutput> outputs(runs.size());
  run_jobs(
      part, runs.size(), settings.threads,
      [&](size_t i) {
        const auto start = std::chrono::steady_clock::now();
        outputs[order[i]] = train_one(runs[order[i]]);
        outputs[order[i]].final.seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      },
      progress);
  return outputs;
}

}  // namespace gradflow::study
