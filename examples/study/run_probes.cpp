// What a training run's loop measures of its attention layers (run_model.h):
// their state after each logged backward (with the gradients at the scores
// and at q and k it keeps), the update the step made, the std of q.k, and
// the attention map of one held-out example.
#include <cmath>

#include "autograd/ops.h"
#include "examples/study/run_model.h"
#include "nn/data/toy_tasks.h"
#include "nn/length_scale.h"
#include "nn/scale_variants.h"
#include "tensor/ops.h"

namespace gradflow::study {

namespace {

// recall's SEP token between the pairs and the queries (nn/data/recall_task.h).
constexpr double kRecallSeparator = 1;

// ||now - before||_F / ||before||_F.
double relative_change(const Tensor& now, const Tensor& before) {
  const Tensor d = sub(now, before);
  return std::sqrt(sum(mul(d, d)).item() / sum(mul(before, before)).item());
}

// Mean |a - b| over the entries where `mask` (broadcast; may be undefined) is 0.
double visible_mean_abs_change(const Tensor& a, const Tensor& b, const Tensor& mask) {
  std::vector<double> x = a.to_vector(), y = b.to_vector();
  std::vector<double> m =
      mask.defined() ? mask.expand(a.shape()).to_vector() : std::vector<double>(x.size(), 0.0);
  double total = 0, n = 0;
  for (size_t i = 0; i < x.size(); ++i)
    if (m[i] == 0) total += std::abs(x[i] - y[i]), ++n;
  return n > 0 ? total / n : 0;
}

// q and k as they entered the probe's logits. composed_attention
// (autograd/ops.h) makes the logits mul(matmul(q, transpose(k)), s), any
// score transform coming after them: so their op is the scale's mul, whose
// input is the product, whose inputs are q and k^T, k's transpose. Found by
// walking that graph, since the probe (nn/attention.h) keeps no q and k.
struct ScoreInputs {
  VariableImpl *q = nullptr, *k = nullptr;
};
ScoreInputs score_inputs(const Variable& logits) {
  auto made_by = [](const VariableImpl* v, const char* op, size_t inputs) -> const Node* {
    const Node* n = v ? v->grad_fn.get() : nullptr;
    if (n == nullptr || n->name != op || n->inputs.size() != inputs)
      fail("scaling_study: an attention probe's logits are not s * q k^T (no '", op,
           "' where expected in their graph)");
    return n;
  };
  const Node* product =
      made_by(made_by(logits.impl().get(), "mul", 1)->inputs[0].get(), "matmul", 2);
  const Node* k_t = made_by(product->inputs[1].get(), "transpose", 1);
  return {product->inputs[0].get(), k_t->inputs[0].get()};
}

double norm_of(const Tensor& g) { return g.defined() ? std::sqrt(sum(mul(g, g)).item()) : 0.0; }

}  // namespace

void retain_probe_gradients(const StudyModel& model) {
  for (const auto& [name, a] : model.attention) {
    Variable& logits = a->probe.logits;
    if (!logits.defined() || !logits.requires_grad()) continue;
    logits.retain_grad();
    a->probe.weights.retain_grad();
    const ScoreInputs in = score_inputs(logits);
    in.q->retain_grad = in.k->retain_grad = true;
  }
}

std::vector<int64_t> correct_keys(const Batch& b) {
  const Tensor& target = b.target;  // (B, T)
  const int64_t batch = target.shape()[0], queries = target.shape()[1];
  const std::vector<double> out_tokens = target.to_vector();
  std::vector<int64_t> keys(out_tokens.size(), -1);
  if (b.src.defined()) {
    // reverse: src = c_1 ... c_L EOS PAD ..., tgt_out = c_L ... c_1 EOS: output t
    // copies source position L - 1 - t, and the EOS output reads the EOS.
    const std::vector<double> pad = b.src_pad.to_vector();
    const int64_t sources = b.src_pad.shape()[1];
    for (int64_t i = 0; i < batch; ++i) {
      int64_t length = -1;  // L: the non-PAD source positions but the EOS
      for (int64_t s = 0; s < sources; ++s) length += pad[i * sources + s] == 0;
      for (int64_t t = 0; t < queries; ++t)
        if (out_tokens[i * queries + t] != nn::kPadToken)
          keys[i * queries + t] = t < length ? length - 1 - t : length;
    }
    return keys;
  }
  // recall: input = k_1 v_1 ... k_N v_N SEP q_1 a_1 ...; the query q_i, at a
  // scored position, names the key k_j at 2 (j - 1), whose value sits right after it.
  const std::vector<double> in = b.input.to_vector();
  for (int64_t i = 0; i < batch; ++i) {
    const double* row = in.data() + i * queries;
    int64_t pairs = 0;
    while (2 * pairs < queries && row[2 * pairs] != kRecallSeparator) ++pairs;
    for (int64_t t = 0; t < queries; ++t) {
      if (out_tokens[i * queries + t] == nn::kPadToken) continue;
      for (int64_t j = 0; j < pairs; ++j)
        if (row[2 * j] == row[t]) keys[i * queries + t] = 2 * j + 1;
    }
  }
  return keys;
}

namespace {

// The mean weight of the scored queries on their key, over the heads:
// weights (B, H, T, S), keys (B, T) with -1 for a query not scored.
double weight_on(const Tensor& weights, const std::vector<int64_t>& keys) {
  const std::vector<int64_t>& shape = weights.shape();
  const int64_t batch = shape[0], heads = shape[1], queries = shape[2], sources = shape[3];
  const std::vector<double> w = weights.to_vector();
  double total = 0, n = 0;
  for (int64_t i = 0; i < batch; ++i)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t t = 0; t < queries; ++t) {
        const int64_t key = keys[i * queries + t];
        if (key < 0 || key >= sources) continue;
        total += w[((i * heads + h) * queries + t) * sources + key], ++n;
      }
  return n > 0 ? total / n : NAN;
}

}  // namespace

// The attention layers' state after a backward: the probe of the forward
// that was recorded and the gradients of W_Q, W_K, W_V.
void record_layers(const StudyModel& model, const RunKey& key, int64_t step, const Batch& batch,
                   std::vector<LayerRow>& out) {
  const std::string answer_layer = key_layer(key.task);
  for (const auto& [name, a] : model.attention) {
    LayerRow row{key, step, name, a->d_k()};
    AttentionStats st =
        attention_stats(a->probe.weights.data(), a->probe.logits.data(), a->probe.mask);
    row.max_logit = st.max_logit;
    row.entropy_norm = st.entropy_norm;
    row.grad_norm_wq = grad_norm(a->q_proj->weight);
    row.grad_norm_wk = grad_norm(a->k_proj->weight);
    row.grad_norm_wv = grad_norm(a->v_proj->weight);
    row.grad_ratio_qv = row.grad_norm_wq / row.grad_norm_wv;
    row.grad_norm_logits = grad_norm(a->probe.logits);  // retained by retain_probe_gradients
    row.grad_norm_weights = grad_norm(a->probe.weights);
    row.transmission = row.grad_norm_logits / row.grad_norm_weights;
    row.correct_key_weight = name == answer_layer && key.task != "charlm"
                                 ? weight_on(a->probe.weights.data(), correct_keys(batch))
                                 : NAN;
    if (a->probe.logits.requires_grad()) {
      const ScoreInputs in = score_inputs(a->probe.logits);
      row.grad_norm_q = norm_of(in.q->grad), row.grad_norm_k = norm_of(in.k->grad);
    }
    out.push_back(row);
  }
}

std::vector<LayerSnapshot> snapshot(const StudyModel& model) {
  std::vector<LayerSnapshot> out;
  for (const auto& [name, a] : model.attention)
    out.push_back({a->q_proj->weight.data().clone(), a->k_proj->weight.data().clone(),
                   a->v_proj->weight.data().clone(), a->probe.logits.data()});
  return out;
}

// After the update: fills the update columns of the layers' rows, the last
// model.attention.size() rows of `rows`, from a second forward of the batch.
void record_updates(const StudyModel& model, const Batch& b,
                    const std::vector<LayerSnapshot>& before, std::vector<LayerRow>& rows) {
  NoGradGuard no_grad;
  for (auto& [name, a] : model.attention) a->record_probe = true;
  model.forward(b);
  LayerRow* row = rows.data() + rows.size() - model.attention.size();
  for (size_t i = 0; i < model.attention.size(); ++i, ++row) {
    const nn::MultiHeadAttention& a = *model.attention[i].second;
    row->update_wq = relative_change(a.q_proj->weight.data(), before[i].wq);
    row->update_wk = relative_change(a.k_proj->weight.data(), before[i].wk);
    row->update_wv = relative_change(a.v_proj->weight.data(), before[i].wv);
    row->logit_change =
        visible_mean_abs_change(a.probe.logits.data(), before[i].logits, a.probe.mask);
  }
  for (auto& [name, a] : model.attention) a->record_probe = false;
}

void record_blocks(const StudyModel& model, int64_t step, double loss, std::vector<BlockRow>& out) {
  for (const auto& [name, block] : model.blocks) {
    double squares = 0;
    for (const Variable& p : block->parameters()) squares += std::pow(grad_norm(p), 2);
    out.push_back({step, name, loss, std::sqrt(squares)});
  }
}

// The std of the unscaled q.k (for qk_l2norm, of cos(q, k)) on a held-out
// batch, averaged over the layers: the probe's logits over each layer's factor.
std::vector<double> qk_stds(const StudyModel& model, const Batch& batch) {
  NoGradGuard no_grad;
  for (auto& [name, a] : model.attention) a->record_probe = true;
  model.forward(batch);
  std::vector<double> out;
  for (auto& [name, a] : model.attention) {
    out.push_back(visible_std(a->probe.logits.data(), a->probe.mask) / std::abs(a->logit_factor()));
    a->record_probe = false;
  }
  return out;
}

double qk_std(const StudyModel& model, const Batch& batch) {
  double total = 0;
  for (double s : qk_stds(model, batch)) total += s;
  return total / static_cast<double>(model.attention.size());
}

void set_qk_logit_std(const StudyModel& model, const Batch& batch, double target) {
  // From the input side: a layer's input depends on the layers before it,
  // so each is measured after those were set. q.k is bilinear in (W_Q, b_Q)
  // and (W_K, b_K), so scaling both by f scales its std by f^2 exactly.
  for (size_t i = 0; i < model.attention.size(); ++i) {
    const double now = qk_stds(model, batch)[i];
    if (!(now > 0) || !std::isfinite(now))
      fail("set_qk_logit_std: layer ", model.attention[i].first, "'s q.k has std ", now,
           " on the batch, which no scale of W_Q and W_K can move to ", target);
    scale_qk_projections(*model.attention[i].second, std::sqrt(target / now));
  }
}

// Held-out example 0 alone: a batch of one.
Batch first_example(const Batch& b) {
  auto one = [](const Tensor& t) { return t.defined() ? t.narrow(0, 0, 1).contiguous() : t; };
  return {one(b.src), one(b.src_pad), one(b.input), one(b.target)};
}

// The map's layer and its size on `example`. Reverse's real positions are a
// prefix (PAD only pads): the target's non-PAD positions query, the source's
// non-PAD positions are the keys. Recall has no padding.
AttentionMap empty_map(const std::string& task, const Batch& example) {
  AttentionMap map{.layer = key_layer(task)};
  if (!example.src.defined()) {
    map.queries = map.keys = example.input.shape()[1];
    return map;
  }
  for (double t : example.target.to_vector()) map.queries += t != nn::kPadToken;
  for (double pad : example.src_pad.to_vector()) map.keys += pad == 0;
  return map;
}

// The map's layer on `example` (a batch of one), head 0, cropped to
// map.queries x map.keys: the weights, row-major, and their entropy_norm.
// One no-grad forward with the probe on that layer only.
std::pair<std::vector<float>, double> attention_map(const StudyModel& model, const Batch& example,
                                                    const AttentionMap& map) {
  nn::MultiHeadAttention* layer = nullptr;
  for (const auto& [name, a] : model.attention)
    if (name == map.layer) layer = a;
  if (layer == nullptr) fail("train_one: the model has no attention layer ", map.layer);
  NoGradGuard no_grad;
  layer->record_probe = true;
  model.forward(example);
  layer->record_probe = false;
  const Tensor& all = layer->probe.weights.data();  // (1, H, T, S)
  auto crop = [&map](const Tensor& t) {             // -> (1, 1, queries, keys)
    return t.narrow(1, 0, 1).narrow(2, 0, map.queries).narrow(3, 0, map.keys);
  };
  const Tensor weights = crop(all), logits = crop(layer->probe.logits.data());
  const Tensor mask =
      layer->probe.mask.defined() ? crop(layer->probe.mask.expand(all.shape())) : Tensor();
  const std::vector<double> w = weights.to_vector();
  const std::vector<double> hidden =
      mask.defined() ? mask.to_vector() : std::vector<double>(w.size(), 0.0);
  std::vector<float> out(w.size());
  // The softmax already gives a hidden key exp(-inf) = 0; the mask makes it exact.
  for (size_t i = 0; i < w.size(); ++i) out[i] = hidden[i] != 0 ? 0.0f : static_cast<float>(w[i]);
  return {out, attention_stats(weights, logits, mask).entropy_norm};
}

}  // namespace gradflow::study
