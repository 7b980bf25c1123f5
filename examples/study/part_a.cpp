// Part A: attention at initialisation, for each mode, d_k and number of
// keys, as estimates over many independent draws (a mean and its standard
// error), never a single draw.
//
// First with q and k drawn independently from N(0, 1), the setting of the
// seeds' argument (C1 to C6): each mode gets draws of its own, so its logit
// variance is measured from its own scaled products. Then through a freshly
// initialised attention layer on N(0, 1) input (d_model 64, one head of size
// d_k), where the projections shrink q and k (PyTorch's default Linear init
// gives them variance 1/3, so q.k has variance d_k / 9): the layer's own
// softmax statistics and the gradients reaching the scores, W_Q, W_K, W_V.
#include <algorithm>
#include <cmath>
#include <limits>

#include "autograd/ops.h"
#include "examples/study/metrics.h"
#include "examples/study/normal_sampler.h"
#include "examples/study/study.h"
#include "nn/scale_variants.h"
#include "tensor/ops.h"

namespace gradflow::study {

namespace {

// A generator for one (part, mode, d_k, n_keys, draw), independent of the
// order in which threads reach it.
Generator seeded(uint64_t seed, uint64_t part, uint64_t mode, int64_t d_k, int64_t n_keys,
                 int64_t draw = 0) {
  uint64_t h = seed;
  for (uint64_t v : {part, mode, static_cast<uint64_t>(d_k), static_cast<uint64_t>(n_keys),
                     static_cast<uint64_t>(draw)})
    h = h * 0x9e3779b97f4a7c15ULL + v + 1;
  return Generator(h);
}

// (rows, d) of N(0, 1) float32 from the fast sampler.
Tensor normal_matrix(int64_t rows, int64_t d, Generator& gen) {
  Tensor t = zeros({rows, d});
  fill_normal({t.data<float>(), static_cast<size_t>(rows * d)}, gen);
  return t;
}

// Rows of x normalised to mean 0 and variance 1 (QK-LayerNorm at init:
// weight 1, bias 0). Shape: x (N, D).
Tensor normalize_rows(const Tensor& x) {
  Tensor centered = sub(x, mean(x, {-1}, true));
  Tensor variance = mean(mul(centered, centered), {-1}, true);
  return mul(centered, pow(add(variance, 1e-5), -0.5));
}

// Rows of x scaled to norm 1. Shape: x (N, D).
Tensor unit_rows(const Tensor& x) { return mul(x, pow(sum(mul(x, x), {-1}, true), -0.5)); }

double mean_square(const Tensor& t) { return mean(mul(t, t)).item(); }

double frobenius(const Tensor& g) { return std::sqrt(sum(mul(g, g)).item()); }

// Independent unit-variance q and k: `draws` sets of `queries` queries
// against n_keys keys. The logit variance is the mean of the squared scaled
// logits (their mean is 0 by symmetry, so this is unbiased). qk_norm
// LayerNorms q and k first; qk_l2norm scales them to norm 1 and multiplies
// by its g at the start, log2(L^2 - L) with L = n_keys; learned_log starts
// at exp(t) = 1/sqrt(d_k).
void random_qk(InitRow& row, const std::string& mode, size_t mode_index, const PartAOptions& o) {
  const nn::ScaleMode scale = scale_mode_of(mode);
  const bool qk_norm = scale.kind == nn::ScaleMode::QkNorm;
  const bool l2_norm = scale.kind == nn::ScaleMode::QkL2Norm;
  const double d = static_cast<double>(row.d_k);
  const double s = l2_norm                                   ? nn::qk_l2norm_start(row.n_keys)
                   : scale.kind == nn::ScaleMode::LearnedLog ? 1 / std::sqrt(d)
                                                             : scale.value(row.d_k);
  // Fewer keys, noisier draws: more of them, so every estimate is as tight.
  row.draws = std::max(o.draws, o.draws * 64 / row.n_keys);
  // The cosine of two independent directions in d_k dimensions has variance 1/d_k.
  row.logit_var_theory = qk_norm   ? std::numeric_limits<double>::quiet_NaN()
                         : l2_norm ? s * s / d
                                   : d * s * s;
  std::vector<double> var, entropy, max_weight, jacobian;
  Generator gen = seeded(o.seed, 1, mode_index, row.d_k, row.n_keys);
  for (int64_t draw = 0; draw < row.draws; ++draw) {
    Tensor q = normal_matrix(o.queries, row.d_k, gen), k = normal_matrix(row.n_keys, row.d_k, gen);
    if (qk_norm) q = normalize_rows(q), k = normalize_rows(k);
    if (l2_norm) q = unit_rows(q), k = unit_rows(k);
    // Shape: logits (queries, n_keys) = s q (queries, d_k) @ k^T (d_k, n_keys).
    Tensor logits = mul(matmul(q, k.transpose(0, 1)), s);
    var.push_back(mean_square(logits));
    AttentionStats st = attention_stats(softmax(logits, -1), logits, Tensor());
    entropy.push_back(st.entropy_norm);
    max_weight.push_back(st.max_weight);
    jacobian.push_back(st.jacobian_norm);
  }
  row.logit_var = estimate_of(var);
  row.entropy_norm = estimate_of(entropy);
  row.max_weight = estimate_of(max_weight);
  row.jacobian_norm = estimate_of(jacobian);
}

// A fresh layer on fresh input, per draw; draw i is the same layer and input
// for every mode (the generator does not depend on the mode), so modes are
// compared on the same weights.
void initialised_layer(InitRow& row, const std::string& mode, const PartAOptions& o) {
  std::vector<double> logit_var, entropy, max_weight, scores, wq, wk, wv, ratio;
  // A draw averages over n_keys queries already: fewer draws for longer inputs.
  row.layer_draws = std::max<int64_t>(8, o.layer_rows / row.n_keys);
  for (int64_t draw = 0; draw < row.layer_draws; ++draw) {
    Generator gen = seeded(o.seed, 2, 0, row.d_k, row.n_keys, draw);
    nn::MultiHeadAttention attn(
        o.d_model,
        {.heads = 1, .head_dim = row.d_k, .scale = scale_mode_of(mode), .max_len = row.n_keys},
        gen);
    apply_mode_init(attn, mode);
    attn.record_probe = true;
    Variable x(randn({1, row.n_keys, o.d_model}, gen));
    Variable out = attn.forward(x, x);
    // The gradient of <out, r> for a random direction r.
    Variable r(randn(out.shape(), gen));
    Tensor grad_scores;
    attn.probe.logits.register_hook([&grad_scores](const Tensor& g) {
      grad_scores = g;
      return Tensor();
    });
    sum(out * r).backward();
    const Tensor& logits = attn.probe.logits.data();
    logit_var.push_back(sample_variance(logits));
    AttentionStats st = attention_stats(attn.probe.weights.data(), logits, Tensor());
    entropy.push_back(st.entropy_norm);
    max_weight.push_back(st.max_weight);
    scores.push_back(frobenius(grad_scores));
    wq.push_back(frobenius(attn.q_proj->weight.grad()));
    wk.push_back(frobenius(attn.k_proj->weight.grad()));
    wv.push_back(frobenius(attn.v_proj->weight.grad()));
    ratio.push_back(wq.back() / wv.back());
  }
  row.layer_logit_var = estimate_of(logit_var);
  row.layer_entropy_norm = estimate_of(entropy);
  row.layer_max_weight = estimate_of(max_weight);
  row.grad_norm_scores = estimate_of(scores);
  row.grad_norm_wq = estimate_of(wq);
  row.grad_norm_wk = estimate_of(wk);
  row.grad_norm_wv = estimate_of(wv);
  row.grad_ratio_qv = estimate_of(ratio);
}

}  // namespace

std::vector<InitRow> run_part_a(const PartAOptions& o, const ProgressFn& progress) {
  std::vector<InitRow> rows;
  std::vector<size_t> mode_of_row;
  const std::vector<std::string>& modes = study_modes();
  for (size_t m = 0; m < modes.size(); ++m)
    for (int64_t d_k : o.d_ks)
      for (int64_t n : o.n_keys) {
        InitRow row;
        row.mode = modes[m], row.d_k = d_k, row.n_keys = n;
        rows.push_back(row);
        mode_of_row.push_back(m);
      }
  // Rows are independent: fill them side by side, each on one thread, the
  // largest (d_k x n_keys) first so no thread is left with a long one at the end.
  std::vector<size_t> order(rows.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&rows](size_t a, size_t b) {
    return rows[a].d_k * rows[a].n_keys > rows[b].d_k * rows[b].n_keys;
  });
  run_jobs(
      "Part A", order.size(), o.threads,
      [&](size_t i) {
        InitRow& row = rows[order[i]];
        if (row.mode == kControl) {  // q and k are not unit-variance: no random-vector part
          const double nan = std::numeric_limits<double>::quiet_NaN();
          row.logit_var_theory = nan;
          row.logit_var = row.entropy_norm = row.max_weight = row.jacobian_norm = {nan, nan};
        } else {
          random_qk(row, row.mode, mode_of_row[order[i]], o);
        }
        initialised_layer(row, row.mode, o);
      },
      progress);
  return rows;
}

}  // namespace gradflow::study
