// Gradient flow across depth at initialisation (Xiong et al. 2020; Dong et
// al. 2021; Noci et al. 2022); depth_train.cpp asks the same in training.
//
//   depth        stacks of 1, 2, 4 and 8 encoder layers (bidirectional
//                self-attention, one head of d_k = d_model), pre-LN and
//                post-LN, under each mode, on random tokens with random
//                per-token targets, no training. Per layer: the gradient
//                norms at W_Q, W_V and the feed-forward weights, and the mean
//                cosine similarity between the token representations after
//                the layer (rank collapse: tokens becoming alike with depth).
//                Each figure a mean over independent draws (a new model and
//                batch), the same draws for every mode.
//
// This file holds the options and the runs; depth_claims.cpp judges C14
// and C15 and words C15's finding; depth_report.cpp writes the table, the
// CSV file, the figures and the section.
#include <algorithm>
#include <cmath>

#include "autograd/ops.h"
#include "examples/study/parts.h"
#include "nn/loss.h"
#include "nn/models.h"
#include "tensor/ops.h"

namespace gradflow::study {

DepthOptions depth_options(const Settings& settings) {
  DepthOptions o;
  if (settings.full) o.draws = 32;
  return o;
}

namespace {

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
  std::vector<double> wq, wv, ff, cosine, pure;  // one per layer
};

Sample one_draw(const std::string& mode, nn::NormPlacement norm, int64_t layers, int64_t draw,
                const Settings& settings, const DepthOptions& o) {
  nn::ModelConfig c;
  c.vocab = o.vocab, c.d_model = o.d_model, c.heads = o.heads, c.layers = layers;
  c.d_ff = o.d_ff, c.max_len = o.seq, c.norm = norm;
  c.head_dim = o.d_model / o.heads;
  c.scale = scale_mode_of(mode);
  // The same generator for every mode and placement: the same weights and batch.
  Generator gen(settings.seed * 1000003 + static_cast<uint64_t>(layers) * 101 +
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
  {  // Pure attention (Dong et al. 2021): x <- SelfAttention(x), nothing else.
    NoGradGuard no_grad;
    Variable p = model.embed->forward(ids);
    for (const auto& layer : model.encoder->layers) {
      p = layer->self_attn->forward(p, p);
      s.pure.push_back(token_cosine(p.data()));
    }
  }
  for (const auto& layer : model.encoder->layers) {
    s.wq.push_back(grad_norm(layer->self_attn->q_proj->weight));
    s.wv.push_back(grad_norm(layer->self_attn->v_proj->weight));
    const double fc1 = grad_norm(layer->ff->fc1->weight), fc2 = grad_norm(layer->ff->fc2->weight);
    s.ff.push_back(std::sqrt(fc1 * fc1 + fc2 * fc2));
  }
  return s;
}

}  // namespace

std::vector<DepthRow> run_depth(const Settings& settings, const DepthOptions& o) {
  if (o.heads < 1 || o.d_model % o.heads != 0)
    fail("scaling_study: the depth probe's d_model must be a multiple of its heads");
  struct Job {
    std::string mode;
    nn::NormPlacement norm;
    int64_t layers;
  };
  std::vector<Job> jobs;
  for (const std::string& mode : measured_arms(settings.modes))
    for (nn::NormPlacement norm : {nn::NormPlacement::Pre, nn::NormPlacement::Post})
      for (int64_t layers : o.depths) jobs.push_back({mode, norm, layers});
  std::vector<std::vector<DepthRow>> rows(jobs.size());
  run_jobs(
      "depth", jobs.size(), settings.threads,
      [&](size_t i) {
        const Job& job = jobs[i];
        std::vector<Sample> draws;
        for (int64_t d = 0; d < o.draws; ++d)
          draws.push_back(one_draw(job.mode, job.norm, job.layers, d, settings, o));
        for (int64_t layer = 0; layer < job.layers; ++layer) {
          auto across = [&](std::vector<double> Sample::*field) {
            std::vector<double> v;
            for (const Sample& s : draws) v.push_back((s.*field)[static_cast<size_t>(layer)]);
            return mean_and_se(v);
          };
          // Since layer 0, draw by draw: the same model and batch at both layers.
          std::vector<double> now, first;
          for (const Sample& s : draws) {
            now.push_back(s.cosine[static_cast<size_t>(layer)]);
            first.push_back(s.cosine.front());
          }
          rows[i].push_back({job.mode, job.norm == nn::NormPlacement::Pre ? "pre_ln" : "post_ln",
                             job.layers, layer, o.draws, across(&Sample::wq), across(&Sample::wv),
                             across(&Sample::ff), across(&Sample::cosine), across(&Sample::pure),
                             draws.empty() ? no_interval() : paired_difference(now, first)});
        }
      },
      settings.progress_for("depth: depth at initialisation", "stack"));
  std::vector<DepthRow> out;
  for (auto& r : rows) out.insert(out.end(), r.begin(), r.end());
  return out;
}

}  // namespace gradflow::study
