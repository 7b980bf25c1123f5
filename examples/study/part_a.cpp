// Part A: attention at initialisation, for each scale mode and d_k.
//
// First with q and k drawn independently from N(0, 1), the setting of the
// seeds' argument (C1 to C6): the variance of s (q . k) over many pairs, and
// the softmax statistics of one query against n_keys keys. Then through a
// freshly initialised attention layer on N(0, 1) input (d_model 64, one head
// of size d_k), where the projections shrink q and k (PyTorch's default
// Linear init gives them variance 1/3), with the gradient reaching W_Q, W_K.
#include <cmath>
#include <limits>

#include "autograd/ops.h"
#include "examples/study/metrics.h"
#include "examples/study/study.h"
#include "nn/attention.h"
#include "nn/norm.h"
#include "tensor/ops.h"

namespace gradflow::study {

const std::vector<std::string>& study_modes() {
  static const std::vector<std::string> modes = {"none",         "inv_sqrt_dk", "inv_dk",
                                                 "inv_2sqrt_dk", "learned",     "qk_norm"};
  return modes;
}

namespace {

// Rows of x normalised to mean 0 and variance 1 (QK-LayerNorm at init:
// weight 1, bias 0). Shape: x (N, D).
Tensor normalize_rows(const Tensor& x) {
  Tensor centered = sub(x, mean(x, {-1}, true));
  Tensor variance = mean(mul(centered, centered), {-1}, true);
  return mul(centered, pow(add(variance, 1e-5), -0.5));
}

// Statistics of independent unit-variance q and k for one d_k, shared by
// every mode: a mode scales the same dot products by its s, and the
// empirical variance of s x is exactly s^2 times that of x.
struct RandomQK {
  double var_raw = 0, var_normed = 0;  // of q . k, and with q, k layer-normalised
  Tensor scores_raw, scores_normed;    // (n_queries, n_keys) q K^T
};

// Unbiased variance from running sums.
double variance_of(double total, double total_sq, double n) {
  return (total_sq - total * total / n) / (n - 1);
}

RandomQK random_qk(int64_t d_k, const PartAOptions& o, Generator& gen) {
  RandomQK r;
  // Over independent pairs, in chunks so d_k = 1024 needs no large buffer.
  double raw = 0, raw_sq = 0, normed = 0, normed_sq = 0, n = 0;
  const int64_t chunk = 4096;
  for (int64_t done = 0; done < o.pairs; done += chunk) {
    Tensor q = randn({chunk, d_k}, gen, DType::Float64),
           k = randn({chunk, d_k}, gen, DType::Float64);
    std::vector<double> a = sum(mul(q, k), {1}).to_vector();
    std::vector<double> b = sum(mul(normalize_rows(q), normalize_rows(k)), {1}).to_vector();
    for (size_t i = 0; i < a.size(); ++i) {
      raw += a[i], raw_sq += a[i] * a[i];
      normed += b[i], normed_sq += b[i] * b[i];
    }
    n += static_cast<double>(chunk);
  }
  r.var_raw = variance_of(raw, raw_sq, n);
  r.var_normed = variance_of(normed, normed_sq, n);
  // One set of queries against n_keys keys: the softmax's shape.
  Tensor q = randn({o.n_queries, d_k}, gen, DType::Float64);
  Tensor k = randn({o.n_keys, d_k}, gen, DType::Float64);
  r.scores_raw = matmul(q, k.transpose(0, 1));
  r.scores_normed = matmul(normalize_rows(q), normalize_rows(k).transpose(0, 1));
  return r;
}

void random_qk_stats(InitRow& row, const nn::ScaleMode& mode, const RandomQK& r) {
  const bool qk_norm = mode.kind == nn::ScaleMode::QkNorm;
  const double s = mode.value(row.d_k);  // the learned scale starts at 1/sqrt(d_k)
  row.logit_var = s * s * (qk_norm ? r.var_normed : r.var_raw);
  row.logit_var_theory =
      qk_norm ? std::numeric_limits<double>::quiet_NaN() : static_cast<double>(row.d_k) * s * s;
  Tensor logits = mul(qk_norm ? r.scores_normed : r.scores_raw, s);
  AttentionStats st = attention_stats(softmax(logits, -1), logits, Tensor());
  row.entropy_norm = st.entropy_norm;
  row.max_weight = st.max_weight;
  row.jacobian_norm = st.jacobian_norm;
}

void layer_stats(InitRow& row, const nn::ScaleMode& mode, const PartAOptions& o, Generator& gen) {
  const int64_t d_model = 64, batch = 4;
  nn::MultiHeadAttention attn(d_model, 1, mode, gen, DType::Float32, row.d_k);
  attn.record_probe = true;
  Variable x(randn({batch, o.n_keys, d_model}, gen));
  Variable out = attn.forward(x, x);
  // A fixed random direction in the output: the gradient of <out, r>.
  Variable r(randn(out.shape(), gen));
  sum(out * r).backward();
  row.grad_norm_wq =
      std::sqrt(sum(mul(attn.q_proj->weight.grad(), attn.q_proj->weight.grad())).item());
  row.grad_norm_wk =
      std::sqrt(sum(mul(attn.k_proj->weight.grad(), attn.k_proj->weight.grad())).item());
  const Tensor& logits = attn.probe.logits.data();
  row.layer_logit_var = sample_variance(logits);
  AttentionStats st = attention_stats(attn.probe.weights.data(), logits, Tensor());
  row.layer_entropy_norm = st.entropy_norm;
  row.layer_max_weight = st.max_weight;
}

}  // namespace

std::vector<InitRow> run_part_a(const PartAOptions& o) {
  std::vector<InitRow> rows;
  std::vector<RandomQK> random;
  for (int64_t d_k : o.d_ks) {
    Generator gen(o.seed * 1000003 + static_cast<uint64_t>(d_k));
    random.push_back(random_qk(d_k, o, gen));
  }
  for (const std::string& name : study_modes()) {
    nn::ScaleMode mode = nn::ScaleMode::parse(name);
    for (size_t i = 0; i < o.d_ks.size(); ++i) {
      InitRow row;
      row.mode = name;
      row.d_k = o.d_ks[i];
      row.n_keys = o.n_keys;
      random_qk_stats(row, mode, random[i]);
      // The same seed for every mode: each mode's layer has the same weights.
      Generator gen(o.seed * 1000003 + static_cast<uint64_t>(row.d_k) + 17);
      layer_stats(row, mode, o, gen);
      rows.push_back(row);
    }
  }
  return rows;
}

}  // namespace gradflow::study
