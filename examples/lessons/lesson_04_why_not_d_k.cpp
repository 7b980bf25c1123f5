// Lesson 4: why 1/sqrt(d_k), and not 1/d_k or 1/(2 sqrt(d_k)).
//
// The scaled score s q.k has spread s sqrt(d_k) (lesson 1). For s = d_k^-a
// that is d_k^(1/2 - a): only a = 1/2 keeps it the same at every head size.
// Without scaling (a = 0) it grows and the softmax saturates (lesson 2);
// with 1/d_k (a = 1) it shrinks as 1/sqrt(d_k), and the softmax drifts
// towards uniform: attention loses its focus before training starts. A
// constant factor, 1/(2 sqrt(d_k)), keeps the spread fixed at 1/2: flatter
// than 1/sqrt(d_k) by the same amount at every d_k.
//
// The lesson measures the spread, the softmax entropy and the largest weight
// over 64 keys for the four scales, taken from the table the model itself
// reads (nn/scale_modes.h). Page: docs/lessons/04_why_not_d_k.md.
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "examples/lessons/lesson.h"
#include "examples/toolkit/plot/svg_plot.h"
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

int run(int argc, char** argv) {
  cli::ArgParser args("lesson_04_why_not_d_k",
                      "Lesson 4: 1/sqrt(d_k) keeps the softmax the same at every d_k; 1/d_k "
                      "flattens it to uniform as d_k grows.");
  const lessons::Lesson lesson = lessons::parse_lesson(args, "04_why_not_d_k", argc, argv);
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
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return cli::run_cli(argc, argv, run); }
