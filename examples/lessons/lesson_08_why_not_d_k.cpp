// Lesson 8: why 1/sqrt(d_k), and not 1/d_k or 1/(2 sqrt(d_k)).
//
// The scaled score s q.k has spread s sqrt(d_k) (lesson 5). For s = d_k^-a
// that is d_k^(1/2 - a): only a = 1/2 keeps it the same at every head size.
// Without scaling (a = 0) it grows and the softmax saturates (lesson 6);
// with 1/d_k (a = 1) it shrinks as 1/sqrt(d_k), and the softmax drifts
// towards uniform: attention loses its focus before training starts. A
// constant factor, 1/(2 sqrt(d_k)), keeps the spread fixed at 1/2: flatter
// than 1/sqrt(d_k) by the same amount at every d_k.
//
// The lesson measures the spread, the softmax entropy and the largest weight
// over 64 keys for the four scales, taken from the table the model itself
// reads (nn/scale_modes.h). Then it trains: the same small encoder-decoder
// with each scale (one head of d_k 256, three seeds) learns to reverse
// digits, and the lesson prints what training made of each start: held-out
// loss and accuracy, and the cross-attention's entropy over the steps.
// Page: docs/lessons/08_why_not_d_k.md.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "autograd/ops.h"
#include "examples/lessons/lesson.h"
#include "examples/lessons/lesson_models.h"
#include "examples/toolkit/plot/svg_plot.h"
#include "nn/data/toy_tasks.h"
#include "nn/loss.h"
#include "nn/models.h"
#include "nn/optim/optim.h"
#include "nn/scale_modes.h"
#include "tensor/ops.h"

using namespace gradflow;

namespace {

constexpr int64_t kKeys = 64;

struct ModeStats {
  double spread = 0;      // std of the scaled scores
  double entropy = 0;     // -sum p log p of a query's weights, nats, mean over queries
  double max_weight = 0;  // the largest weight of a query, mean over queries
};

// The softmax of scale * q.k over 64 keys, for scores q k^T already drawn:
// q (draws, queries, d_k) against k (draws, 64, d_k), every entry N(0, 1).
ModeStats stats_of(const Tensor& scores, double scale) {
  Tensor logits = mul(scores, scale);
  Tensor p = softmax(logits, -1);
  // p log p with log p from log_softmax: finite even where p underflows to 0.
  Tensor entropy = neg(sum(mul(p, log_softmax(logits, -1)), {-1}));
  return {.spread = std::sqrt(mean(mul(logits, logits)).item()),  // the mean is 0
          .entropy = mean(entropy).item(),
          .max_weight = mean(max(p, -1).values).item()};
}

// The training comparison: reverse 2 to 6 digits with one head of d_k 64,
// as lesson 13's model, under AdamW; only the scale differs between runs.
const nn::ToyTaskConfig kReverse{.task = "reverse", .n_symbols = 10, .min_len = 2, .max_len = 6};
constexpr int64_t kTrainSteps = 300, kEvalEvery = 50, kTrainDk = 256;

struct TrainRun {
  // Held out, at steps 0, 50, ..., 300: the loss, the cross-attention's
  // entropy, and the spread of its scaled scores s q.k over a query's keys.
  std::vector<double> losses = {}, entropies = {}, spreads = {};
  double accuracy = 0;  // held-out greedy accuracy at the end
};

struct Evaluation {
  double loss, entropy, spread;
};

// Teacher-forced on the held-out set: the loss, and over the scored queries
// the mean entropy (nats) of the cross-attention's weights and the mean
// standard deviation of its scaled scores over the query's unmasked keys
// (the softmax ignores a shift, so the spread is what sets its shape).
Evaluation evaluate(const nn::EncoderDecoder& model, const nn::Seq2SeqBatch& b) {
  NoGradGuard no_grad;
  auto& cross = *model.decoder->layers[0]->cross_attn;
  cross.record_probe = true;
  Variable logits = model.forward(b.src, b.tgt_in, b.src_pad);
  cross.record_probe = false;
  const Tensor w = cross.probe.weights.data().to(DType::Float64);  // (B, 1, T, S)
  const Tensor s = cross.probe.logits.data().to(DType::Float64);   // s q k^T, unmasked
  double entropy = 0, spread = 0;
  int64_t rows = 0;
  for (int64_t i = 0; i < w.shape()[0]; ++i)
    for (int64_t t = 0; t < w.shape()[2] && b.tgt_out.at({i, t}) != nn::kPadToken; ++t, ++rows) {
      double n = 0, sum = 0, squares = 0;
      for (int64_t j = 0; j < w.shape()[3]; ++j) {
        const double p = w.at({i, 0, t, j});
        if (p > 0) entropy -= p * std::log(p);  // masked keys have p = 0 and add nothing
        if (b.src_pad.at({i, j}) != 0) continue;
        const double score = s.at({i, 0, t, j});
        n += 1, sum += score, squares += score * score;
      }
      spread += std::sqrt(std::max(squares / n - (sum / n) * (sum / n), 0.0));
    }
  return {.loss = nn::cross_entropy(logits, b.tgt_out, nn::kPadToken).item(),
          .entropy = entropy / static_cast<double>(rows),
          .spread = spread / static_cast<double>(rows)};
}

// The entropy of uniform weights over each scored query's unmasked keys,
// mean over the held-out set: where the entropy of 1/d_k starts.
double uniform_entropy(const nn::Seq2SeqBatch& b) {
  double total = 0;
  int64_t rows = 0;
  for (int64_t i = 0; i < b.src.shape()[0]; ++i) {
    double keys = 0;
    for (int64_t s = 0; s < b.src.shape()[1]; ++s) keys += b.src_pad.at({i, s}) == 0;
    for (int64_t t = 0; t < b.tgt_out.shape()[1] && b.tgt_out.at({i, t}) != nn::kPadToken; ++t)
      total += std::log(keys), ++rows;
  }
  return total / static_cast<double>(rows);
}

TrainRun train(const nn::ScaleMode& scale, uint64_t seed, const nn::Seq2SeqBatch& held_out) {
  Generator gen(seed);
  nn::ModelConfig config;
  config.vocab = nn::vocab_size(kReverse), config.max_len = nn::src_len(kReverse);
  config.d_model = 32, config.heads = 1, config.head_dim = kTrainDk, config.layers = 1;
  config.d_ff = 64, config.scale = scale;
  nn::EncoderDecoder model(config, gen);
  nn::AdamW optimizer(model.parameters(), /*lr=*/3e-3, nn::AdamWSettings::attention_paper());
  TrainRun run;
  for (int64_t step = 0; step <= kTrainSteps; ++step) {
    if (step > 0) {
      nn::Seq2SeqBatch batch = nn::make_batch(kReverse, 32, gen);
      Variable loss = nn::cross_entropy(model.forward(batch.src, batch.tgt_in, batch.src_pad),
                                        batch.tgt_out, nn::kPadToken);
      optimizer.zero_grad();
      loss.backward();
      nn::clip_grad_norm(model.parameters(), 1.0);
      optimizer.step();
    }
    if (step % kEvalEvery != 0) continue;
    const Evaluation e = evaluate(model, held_out);
    run.losses.push_back(e.loss), run.entropies.push_back(e.entropy);
    run.spreads.push_back(e.spread);
  }
  run.accuracy = lessons::greedy_accuracy(model, held_out);
  return run;
}

// The trained comparison: prints the tables and returns the figure's panels.
std::vector<plot::Figure> training_comparison(const std::vector<nn::ScaleMode>& modes,
                                              const std::vector<std::string>& labels,
                                              int64_t first_seed) {
  Generator held_gen(static_cast<uint64_t>(first_seed) + 1000);
  const nn::Seq2SeqBatch held_out = nn::make_batch(kReverse, 256, held_gen);
  std::printf("\ntraining: reverse 2 to 6 digits, one head of d_k %lld (d_model 32, one layer),\n",
              static_cast<long long>(kTrainDk));
  std::printf("AdamW 3e-3, %lld steps of 32, seeds %lld to %lld; the same 256 held-out sequences\n",
              static_cast<long long>(kTrainSteps), static_cast<long long>(first_seed),
              static_cast<long long>(first_seed + 2));
  std::vector<std::vector<TrainRun>> runs(modes.size());
  for (size_t m = 0; m < modes.size(); ++m)
    for (int64_t s = 0; s < 3; ++s)
      runs[m].push_back(train(modes[m], static_cast<uint64_t>(first_seed + s), held_out));

  const auto mean_over_seeds = [&](size_t m, std::vector<double> TrainRun::*field) {
    std::vector<double> out((runs[m][0].*field).size(), 0.0);
    for (const TrainRun& r : runs[m])
      for (size_t i = 0; i < out.size(); ++i) out[i] += (r.*field)[i] / 3;
    return out;
  };
  std::printf("\nheld-out greedy accuracy at step %lld   seed by seed        mean\n",
              static_cast<long long>(kTrainSteps));
  for (size_t m = 0; m < modes.size(); ++m) {
    double acc = 0;
    std::printf("  %-16s                ", labels[m].c_str());
    for (const TrainRun& r : runs[m]) std::printf(" %5.3f", r.accuracy), acc += r.accuracy / 3;
    std::printf("   %5.3f  %s\n", acc, lessons::bar(acc, 1, 20).c_str());
  }
  const auto over_steps = [&](const char* title, std::vector<double> TrainRun::*field) {
    std::printf("\n%s\n  step                 ", title);
    for (int64_t step = 0; step <= kTrainSteps; step += kEvalEvery)
      std::printf(" %5lld", static_cast<long long>(step));
    std::printf("   seeds at %lld\n", static_cast<long long>(kTrainSteps));
    for (size_t m = 0; m < modes.size(); ++m) {
      std::printf("  %-16s     ", labels[m].c_str());
      for (double v : mean_over_seeds(m, field)) std::printf(" %5.2f", v);
      double lo = INFINITY, hi = -INFINITY;
      for (const TrainRun& r : runs[m])
        lo = std::min(lo, (r.*field).back()), hi = std::max(hi, (r.*field).back());
      std::printf("   %.2f to %.2f\n", lo, hi);
    }
  };
  over_steps("held-out loss, nats, mean of the 3 seeds", &TrainRun::losses);
  over_steps("cross-attention entropy, nats, mean of the 3 seeds", &TrainRun::entropies);
  std::printf("(uniform weights over each query's keys: %.2f nats; one-hot: 0)\n",
              uniform_entropy(held_out));
  std::printf("\nspread of s q.k in the cross-attention, mean of the 3 seeds\n");
  std::printf("                      step 0  step %lld   grown by\n",
              static_cast<long long>(kTrainSteps));
  for (size_t m = 0; m < modes.size(); ++m) {
    const std::vector<double> spread = mean_over_seeds(m, &TrainRun::spreads);
    std::printf("  %-16s   %6.3f  %8.3f  %8.1fx\n", labels[m].c_str(), spread.front(),
                spread.back(), spread.back() / spread.front());
  }

  // The claims, in terms that hold on every kernel path (a seed's digits may
  // differ): modes are none, 1/sqrt, 1/(2 sqrt), 1/d_k in that order.
  std::vector<double> mean_acc(modes.size(), 0.0);
  for (size_t m = 0; m < modes.size(); ++m)
    for (const TrainRun& r : runs[m]) mean_acc[m] += r.accuracy / 3;
  bool none_last = true, inv_dk_below = true;
  for (int64_t s = 0; s < 3; ++s) {
    for (size_t m = 1; m < modes.size(); ++m)
      none_last = none_last && runs[0][s].accuracy < runs[m][s].accuracy;
    inv_dk_below = inv_dk_below && runs[3][s].accuracy < runs[1][s].accuracy &&
                   runs[3][s].accuracy < runs[2][s].accuracy;
  }
  lessons::claim(
      "in the mean over seeds, 1/sqrt(d_k) is first, 1/(2 sqrt(d_k)) within 0.02, "
      "then 1/d_k, then none",
      mean_acc[1] > mean_acc[2] && mean_acc[1] - mean_acc[2] < 0.02 && mean_acc[2] > mean_acc[3] &&
          mean_acc[3] > mean_acc[0]);
  lessons::claim("at every seed, none is behind all three scales, and 1/d_k behind both sqrt ones",
                 none_last && inv_dk_below);
  const auto at = [&](size_t m, std::vector<double> TrainRun::*field, size_t i) {
    return mean_over_seeds(m, field)[i];
  };
  const size_t last = runs[0][0].losses.size() - 1, step_100 = 100 / kEvalEvery;
  lessons::claim("at step 100, 1/d_k's held-out loss is over twice 1/sqrt(d_k)'s",
                 at(3, &TrainRun::losses, step_100) > 2 * at(1, &TrainRun::losses, step_100));
  lessons::claim(
      "at the end, the cross-attention is flatter the smaller the scale, 1/d_k's "
      "above 1 nat",
      at(0, &TrainRun::entropies, last) < at(1, &TrainRun::entropies, last) &&
          at(1, &TrainRun::entropies, last) < at(2, &TrainRun::entropies, last) &&
          at(2, &TrainRun::entropies, last) < at(3, &TrainRun::entropies, last) &&
          at(3, &TrainRun::entropies, last) > 1);
  const auto grown = [&](size_t m) {
    return at(m, &TrainRun::spreads, last) / at(m, &TrainRun::spreads, 0);
  };
  lessons::claim(
      "1/(2 sqrt(d_k))'s spread grows more than 1/sqrt(d_k)'s yet ends smaller; "
      "1/d_k's grows most and ends smallest",
      grown(2) > grown(1) && at(2, &TrainRun::spreads, last) < at(1, &TrainRun::spreads, last) &&
          grown(3) > std::max({grown(0), grown(1), grown(2)}) &&
          at(3, &TrainRun::spreads, last) < at(2, &TrainRun::spreads, last));

  std::vector<double> steps;
  for (int64_t step = 0; step <= kTrainSteps; step += kEvalEvery)
    steps.push_back(static_cast<double>(step));
  plot::Figure loss{
      .title = "Training with each scale: held-out loss",
      .x = {.label = "training step"},
      .y = {.label = "cross-entropy, nats (log scale; mean of 3 seeds)", .log = true}};
  plot::Figure entropy{.title = "Cross-attention entropy",
                       .x = {.label = "training step"},
                       .y = {.label = "entropy H, nats (mean of 3 seeds)", .min = 0}};
  for (size_t m = 0; m < modes.size(); ++m) {
    const bool chosen = modes[m].is("inv_sqrt_dk");
    loss.series.push_back({.label = labels[m],
                           .x = steps,
                           .y = mean_over_seeds(m, &TrainRun::losses),
                           .markers = true,
                           .emphasis = chosen});
    entropy.series.push_back({.label = labels[m],
                              .x = steps,
                              .y = mean_over_seeds(m, &TrainRun::entropies),
                              .markers = true,
                              .emphasis = chosen});
  }
  return {loss, entropy};
}

int run(int argc, char** argv) {
  cli::ArgParser args("lesson_08_why_not_d_k",
                      "Lesson 8: 1/sqrt(d_k) keeps the softmax the same at every d_k; 1/d_k "
                      "flattens it to uniform as d_k grows; then each scale in training.");
  const lessons::Lesson lesson = lessons::parse_lesson(args, "08_why_not_d_k", argc, argv);
  Generator gen(static_cast<uint64_t>(lesson.seed));

  const std::vector<nn::ScaleMode> modes = {"none", "inv_sqrt_dk", "inv_2sqrt_dk", "inv_dk"};
  const std::vector<std::string> labels = {"none", "1/sqrt(d_k)", "1/(2 sqrt(d_k))", "1/d_k"};
  const std::vector<int64_t> d_ks = {16, 32, 64, 128, 256, 512, 1024};
  // stats[m][i]: mode m at d_ks[i], every mode on the same draws.
  std::vector<std::vector<ModeStats>> stats(modes.size());
  for (int64_t d_k : d_ks) {
    const int64_t draws = 50, queries = 16;
    Tensor q = randn({draws, queries, d_k}, gen, DType::Float64);
    Tensor k = randn({draws, kKeys, d_k}, gen, DType::Float64);
    Tensor scores = matmul(q, k.transpose(1, 2));  // (draws, queries, 64)
    for (size_t m = 0; m < modes.size(); ++m)
      stats[m].push_back(stats_of(scores, modes[m].value(d_k)));
  }

  std::printf("64 keys, q and k N(0, 1); 800 queries per d_k (50 sets of keys), the same\n");
  std::printf("draws for every scale s. Columns: none, 1/sqrt(d_k), 1/(2 sqrt(d_k)), 1/d_k\n");
  const auto table = [&](const char* title, double ModeStats::*field, const char* format) {
    std::printf("\n%s\n  d_k      none  1/sqrt  1/2sqrt    1/d_k\n", title);
    for (size_t i = 0; i < d_ks.size(); i += 2) {  // 16, 64, 256, 1024
      std::printf("%5lld", static_cast<long long>(d_ks[i]));
      for (size_t m = 0; m < modes.size(); ++m) std::printf(format, stats[m][i].*field);
      std::printf("\n");
    }
  };
  table("spread of s q.k (predicted s sqrt(d_k): sqrt(d_k), 1, 1/2, 1/sqrt(d_k))",
        &ModeStats::spread, "  %7.3f");
  table("softmax entropy, nats (uniform: log 64 = 4.159)", &ModeStats::entropy, "  %7.3f");
  table("largest weight (uniform: 1/64 = 0.016)", &ModeStats::max_weight, "  %7.3f");

  // How far each scale is from uniform: the entropy it has lost, against
  // sigma^2 / 2 for a spread sigma (the page derives it, for sigma up to 1).
  const double uniform = std::log(static_cast<double>(kKeys));
  std::printf("\nentropy below uniform at d_k 1024, log 64 - H in nats (bars: full width 0.6)\n");
  std::printf("                   measured  sigma^2 / 2\n");
  for (size_t m = 0; m < modes.size(); ++m) {
    const double lost = uniform - stats[m].back().entropy;
    const double sigma = std::sqrt(static_cast<double>(d_ks.back())) * modes[m].value(d_ks.back());
    char predicted[32] = "        -";
    if (sigma <= 1) std::snprintf(predicted, sizeof predicted, "%9.4f", sigma * sigma / 2);
    std::printf("  %-16s %7.4f  %s    %s\n", labels[m].c_str(), lost, predicted,
                lessons::bar(lost, 0.6, 30).c_str());
  }

  bool sqrt_flat = true, none_grows = true, inv_dk_shrinks = true, inv_dk_to_uniform = true;
  for (size_t i = 0; i < d_ks.size(); ++i) {
    sqrt_flat = sqrt_flat && std::abs(stats[1][i].spread - 1) < 0.05 &&
                std::abs(stats[2][i].spread - 0.5) < 0.025;
    if (i == 0) continue;
    none_grows = none_grows && stats[0][i].spread > stats[0][i - 1].spread;
    inv_dk_shrinks = inv_dk_shrinks && stats[3][i].spread < stats[3][i - 1].spread;
    inv_dk_to_uniform = inv_dk_to_uniform && stats[3][i].entropy > stats[3][i - 1].entropy;
  }
  lessons::claim(
      "only the sqrt scales keep the spread (1 and 1/2, within 5%) at every d_k; "
      "none's grows, 1/d_k's shrinks",
      sqrt_flat && none_grows && inv_dk_shrinks);
  bool predicted = true;  // log 64 - H against sigma^2 / 2 at d_k 1024, where sigma <= 1
  for (size_t m = 1; m < modes.size(); ++m) {
    const double sigma = std::sqrt(static_cast<double>(d_ks.back())) * modes[m].value(d_ks.back());
    const double lost = uniform - stats[m].back().entropy;
    predicted = predicted && std::abs(lost / (sigma * sigma / 2) - 1) < 0.1;
  }
  lessons::claim("with 1/d_k the softmax is nearer uniform at every larger d_k", inv_dk_to_uniform);
  lessons::claim("log 64 - H is sigma^2 / 2 within 10% for the three scales with sigma <= 1",
                 predicted);

  std::vector<double> x(d_ks.begin(), d_ks.end());
  plot::Figure entropy{.title = "Softmax entropy over 64 keys",
                       .x = {.label = "d_k, entries per head (log scale)", .log = true},
                       .y = {.label = "entropy H, nats (uniform: log 64 = 4.16)", .min = 0}};
  // The same on a log scale of what is lost, where 1/d_k's drift shows.
  plot::Figure lost{.title = "Entropy below uniform (log scale)",
                    .x = {.label = "d_k, entries per head (log scale)", .log = true},
                    .y = {.label = "log 64 - H, nats (log scale)", .log = true}};
  for (size_t m = 0; m < modes.size(); ++m) {
    std::vector<double> h, below;
    for (const ModeStats& s : stats[m])
      h.push_back(s.entropy), below.push_back(uniform - s.entropy);
    const bool chosen = modes[m].is("inv_sqrt_dk");
    for (auto [fig, y] : {std::pair{&entropy, &h}, {&lost, &below}})
      fig->series.push_back(
          {.label = labels[m], .x = x, .y = *y, .markers = true, .emphasis = chosen});
  }
  entropy.series.push_back({.label = "uniform, log 64",
                            .x = {x.front(), x.back()},
                            .y = {uniform, uniform},
                            .reference = true});
  lessons::write_figure(lesson, "why_not_d_k.svg",
                        plot::render_svg_grid({entropy, lost}, 2, {.legend_once = true}));
  lessons::write_figure(lesson, "training.svg",
                        plot::render_svg_grid(training_comparison(modes, labels, lesson.seed), 2,
                                              {.legend_once = true}));
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return cli::run_cli(argc, argv, run); }
