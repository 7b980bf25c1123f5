// Part D: gradient flow across depth at initialisation, no training.
//
// Stacks of 1, 2, 4 and 8 encoder layers (bidirectional self-attention, one
// head of d_k = d_model), pre-LN and post-LN, under each mode, on random
// tokens with random per-token targets. Per layer: the gradient norms at
// W_Q, W_V and the feed-forward weights (Xiong et al. 2020: post-LN's grow
// toward the output), and the mean cosine similarity between the token
// representations after the layer (Noci et al. 2022: rank collapse, tokens
// becoming alike with depth, worse with flatter attention). Each figure is a
// mean over independent draws (a new model and batch), the same draws for
// every mode.
#include <cmath>

#include "autograd/ops.h"
#include "examples/study/study.h"
#include "nn/loss.h"
#include "nn/models.h"
#include "tensor/ops.h"

namespace gradflow::study {

namespace {

double frobenius(const Variable& w) {
  return w.grad().defined() ? std::sqrt(sum(mul(w.grad(), w.grad())).item()) : 0.0;
}

// Mean cosine similarity over pairs of distinct tokens of a sequence,
// averaged over the batch. Shape: x (B, T, C).
double token_cosine(const Tensor& x) {
  const int64_t t = x.shape()[1];
  Tensor unit = div(x, sqrt(sum(mul(x, x), {-1}, true)));
  // Shape: gram (B, T, T) = unit (B, T, C) @ unit^T (B, C, T); its diagonal is 1.
  Tensor gram = matmul(unit, unit.transpose(1, 2));
  const double total = sum(gram).item(), diagonal = static_cast<double>(x.shape()[0] * t);
  return (total - diagonal) / (diagonal * static_cast<double>(t - 1));
}

struct Sample {
  std::vector<double> wq, wv, ff, cosine;  // one per layer
};

Sample one_draw(const std::string& mode, nn::NormPlacement norm, int64_t layers, int64_t draw,
                const DepthOptions& o) {
  nn::ModelConfig c;
  c.vocab = o.vocab, c.d_model = o.d_model, c.heads = o.heads, c.layers = layers;
  c.d_ff = o.d_ff, c.max_len = o.seq, c.norm = norm;
  c.head_dim = o.d_model / o.heads;
  c.scale = scale_mode_of(mode);
  // The same generator for every mode and placement: the same weights and batch.
  Generator gen(o.seed * 1000003 + static_cast<uint64_t>(layers) * 101 +
                static_cast<uint64_t>(draw));
  nn::EncoderClassifier model(/*classes=*/0, c, gen);
  for (const auto& layer : model.encoder->layers) apply_mode_init(*layer->self_attn, mode);
  Tensor ids = randint(0, o.vocab, {o.batch, o.seq}, gen);
  Tensor targets = randint(0, o.vocab, {o.batch, o.seq}, gen);
  Sample s;
  Variable x = model.embed->forward(ids);
  for (const auto& layer : model.encoder->layers) {
    x = layer->forward(x, Tensor());
    s.cosine.push_back(token_cosine(x.data()));
  }
  Variable logits = model.head->forward(model.final_norm->forward(x));
  nn::cross_entropy(logits, targets).backward();
  for (const auto& layer : model.encoder->layers) {
    s.wq.push_back(frobenius(layer->self_attn->q_proj->weight));
    s.wv.push_back(frobenius(layer->self_attn->v_proj->weight));
    const double fc1 = frobenius(layer->ff->fc1->weight), fc2 = frobenius(layer->ff->fc2->weight);
    s.ff.push_back(std::sqrt(fc1 * fc1 + fc2 * fc2));
  }
  return s;
}

}  // namespace

std::vector<DepthRow> run_depth_probe(const DepthOptions& o, const ProgressFn& progress) {
  if (o.heads < 1 || o.d_model % o.heads != 0)
    fail("scaling_study: the depth probe's d_model must be a multiple of its heads");
  struct Job {
    std::string mode;
    nn::NormPlacement norm;
    int64_t layers;
  };
  std::vector<Job> jobs;
  for (const std::string& mode : study_modes())
    for (nn::NormPlacement norm : {nn::NormPlacement::Pre, nn::NormPlacement::Post})
      for (int64_t layers : o.depths) jobs.push_back({mode, norm, layers});
  std::vector<std::vector<DepthRow>> rows(jobs.size());
  run_jobs(
      "the depth probe", jobs.size(), o.threads,
      [&](size_t i) {
        const Job& job = jobs[i];
        std::vector<Sample> draws;
        for (int64_t d = 0; d < o.draws; ++d)
          draws.push_back(one_draw(job.mode, job.norm, job.layers, d, o));
        for (int64_t layer = 0; layer < job.layers; ++layer) {
          auto across = [&](std::vector<double> Sample::*field) {
            std::vector<double> v;
            for (const Sample& s : draws) v.push_back((s.*field)[static_cast<size_t>(layer)]);
            return estimate_of(v);
          };
          rows[i].push_back({job.mode, job.norm == nn::NormPlacement::Pre ? "pre_ln" : "post_ln",
                             job.layers, layer, o.draws, across(&Sample::wq), across(&Sample::wv),
                             across(&Sample::ff), across(&Sample::cosine)});
        }
      },
      progress);
  std::vector<DepthRow> out;
  for (auto& r : rows) out.insert(out.end(), r.begin(), r.end());
  return out;
}

}  // namespace gradflow::study
