// Lesson 6: what a spread of sqrt(d_k) does to the softmax, and why overflow
// is not the reason to scale.
//
// Lesson 5 showed that q.k has spread sqrt(d_k). Here the scores of one
// query against 64 keys go through a softmax, unscaled and divided by
// sqrt(d_k), and the lesson measures how peaked the weights are: the
// largest weight (1/64 = 0.016 if uniform, 1 if one-hot) and the entropy
// (log 64 = 4.16 nats if uniform, 0 if one-hot). Unscaled, the weights turn
// almost one-hot as d_k grows: the softmax saturates.
//
// It then shows what scaling is NOT for. A softmax computed naively,
// exp(x) / sum(exp(x)), overflows in float32 for logits near 1000; gradflow's
// softmax subtracts the row's largest logit first, which changes nothing
// mathematically and keeps every exponential at most 1. So large logits are
// handled whatever the scale; saturation is the real problem.
// Page: docs/lessons/06_softmax_saturation.md.
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "examples/lessons/lesson.h"
#include "examples/toolkit/plot/svg_plot.h"
#include "tensor/ops.h"

using namespace gradflow;

namespace {

constexpr int64_t kKeys = 64;

struct SoftmaxStats {
  double max_weight = 0;  // the largest weight of a row, mean over rows
  double entropy = 0;     // -sum p log p of a row in nats, mean over rows
  double top_logit = 0;   // the largest logit seen
  // Rows whose softmax in float32 has a NaN: computed naively, and by gradflow.
  int64_t naive_nan_rows = 0, gradflow_nan_rows = 0;
};

// How many rows of a (..., n) float32 softmax hold a NaN (NaN != NaN).
int64_t nan_rows(const Tensor& p) {
  return static_cast<int64_t>(sum(gt(sum(ne(p, p), {-1}), 0.0)).item());
}

// q k^T for q (draws, queries, d_k) against k (draws, 64, d_k), every entry
// N(0, 1): a fresh set of keys per draw. Shape: (draws, queries, 64).
Tensor draw_scores(int64_t d_k, Generator& gen) {
  const int64_t draws = 50, queries = 16;
  Tensor q = randn({draws, queries, d_k}, gen, DType::Float64);
  Tensor k = randn({draws, kKeys, d_k}, gen, DType::Float64);
  return matmul(q, k.transpose(1, 2));
}

// Softmax statistics of the logits scale * scores.
SoftmaxStats softmax_stats(const Tensor& scores, double scale) {
  Tensor logits = mul(scores, scale);
  Tensor p = softmax(logits, -1);
  // p log p with log p from log_softmax: finite even where p underflows to 0.
  Tensor entropy = neg(sum(mul(p, log_softmax(logits, -1)), {-1}));
  // The same logits in float32, through exp(x) / sum(exp(x)) and through softmax.
  Tensor x = logits.to(DType::Float32);
  Tensor e = exp(x);
  return {.max_weight = mean(max(p, -1).values).item(),
          .entropy = mean(entropy).item(),
          .top_logit = max(logits).item(),
          .naive_nan_rows = nan_rows(div(e, sum(e, {-1}, true))),
          .gradflow_nan_rows = nan_rows(softmax(x, -1))};
}

std::string row_text(const Tensor& t) {
  std::string s = "[";
  for (double v : t.to_vector()) {
    char buf[32];
    // NaN as "nan" whatever its sign bit (printf may write "-nan").
    std::snprintf(buf, sizeof buf, std::isnan(v) ? "%snan" : "%s%.4g", s.size() > 1 ? ", " : "", v);
    s += buf;
  }
  return s + "]";
}

int run(int argc, char** argv) {
  cli::ArgParser args("lesson_06_softmax_saturation",
                      "Lesson 6: without scaling the softmax turns one-hot as d_k grows; "
                      "overflow is not the reason to scale.");
  const lessons::Lesson lesson = lessons::parse_lesson(args, "06_softmax_saturation", argc, argv);
  Generator gen(static_cast<uint64_t>(lesson.seed));

  std::printf("one query against %lld keys, q and k N(0, 1) with d_k entries;\n",
              static_cast<long long>(kKeys));
  std::printf("means over 800 queries (50 sets of keys, 16 queries each)\n\n");
  std::printf("        largest weight        entropy (nats)\n");
  std::printf("  d_k   none  1/sqrt(d_k)     none  1/sqrt(d_k)   none's largest weight\n");
  std::vector<double> dks, top_none, top_scaled, h_none, h_scaled;
  SoftmaxStats none_1024, scaled_1024;
  for (int64_t d_k : {4, 16, 64, 256, 1024}) {
    const double d = static_cast<double>(d_k);
    const Tensor scores = draw_scores(d_k, gen);  // the same draws for both scales
    const SoftmaxStats none = softmax_stats(scores, 1.0);
    const SoftmaxStats scaled = softmax_stats(scores, 1.0 / std::sqrt(d));
    dks.push_back(d);
    top_none.push_back(none.max_weight);
    top_scaled.push_back(scaled.max_weight);
    h_none.push_back(none.entropy);
    h_scaled.push_back(scaled.entropy);
    none_1024 = none, scaled_1024 = scaled;  // the last, d_k 1024, is kept
    std::printf("%5lld   %4.2f     %4.2f        %4.2f     %4.2f      %s\n",
                static_cast<long long>(d_k), none.max_weight, scaled.max_weight, none.entropy,
                scaled.entropy, lessons::bar(none.max_weight, 1, 20).c_str());
  }
  const double uniform_h = std::log(static_cast<double>(kKeys));
  std::printf("\nuniform over 64 keys: largest weight %.3f, entropy log 64 = %.2f nats\n",
              1.0 / kKeys, uniform_h);
  std::printf("one-hot: largest weight 1, entropy 0; the bars: full width is 1\n");
  bool sharper = true, same = true;
  for (size_t i = 1; i < dks.size(); ++i) {
    sharper = sharper && top_none[i] > top_none[i - 1] && h_none[i] < h_none[i - 1];
    same = same && std::abs(top_scaled[i] / top_scaled[0] - 1) < 0.05 &&
           std::abs(h_scaled[i] / h_scaled[0] - 1) < 0.05;
  }
  lessons::claim("unscaled, the largest weight grows and the entropy falls at every step of d_k",
                 sharper);
  lessons::claim("with 1/sqrt(d_k), both stay within 5% of their values at d_k 4", same);

  // Overflow, by hand. float32's largest value is 3.4e38 = exp(88.72).
  std::printf("\noverflow is another matter. float32 exp(x) is inf above x = %.2f\n",
              std::log(static_cast<double>(std::numeric_limits<float>::max())));
  Tensor x = from_vector({1000, 999, 998}, DType::Float32);
  Tensor e = exp(x);
  std::printf("logits x                        %s (float32)\n", row_text(x).c_str());
  std::printf("naive exp(x)                    %s\n", row_text(e).c_str());
  std::printf("naive exp(x) / sum(exp(x))      %s\n", row_text(div(e, sum(e))).c_str());
  // What gradflow's softmax does inside (tensor/reduce.cpp, softmax_row):
  // exp(x - max(x)) is at most exp(0) = 1, and the ratio is unchanged.
  Tensor shifted = exp(sub(x, max(x)));
  std::printf("exp(x - max x)                  %s\n", row_text(shifted).c_str());
  const Tensor p = softmax(x, 0);
  std::printf("gradflow softmax(x)             %s\n", row_text(p).c_str());
  // The right answer, in float64: e^0, e^-1, e^-2 over their sum.
  const Tensor right = softmax(from_vector({0, -1, -2}, DType::Float64), 0);
  lessons::claim(
      "the naive float32 softmax of [1000, 999, 998] is nan; gradflow's is right to 1e-6",
      nan_rows(div(e, sum(e))) == 1 && max(abs(sub(p.to(DType::Float64), right))).item() < 1e-6);

  // The queries of the table at d_k 1024, in float32.
  std::printf("\nthe table's 800 queries at d_k 1024, in float32:  none  1/sqrt(d_k)\n");
  std::printf("  largest logit                                 %5.1f  %5.1f\n", none_1024.top_logit,
              scaled_1024.top_logit);
  std::printf("  rows with nan, naive exp(x) / sum(exp(x))     %5lld  %5lld\n",
              static_cast<long long>(none_1024.naive_nan_rows),
              static_cast<long long>(scaled_1024.naive_nan_rows));
  std::printf("  rows with nan, gradflow softmax               %5lld  %5lld\n",
              static_cast<long long>(none_1024.gradflow_nan_rows),
              static_cast<long long>(scaled_1024.gradflow_nan_rows));
  lessons::claim(
      "at d_k 1024 unscaled, the naive float32 softmax gives nan rows and gradflow's none",
      none_1024.naive_nan_rows > 0 && none_1024.gradflow_nan_rows == 0 &&
          scaled_1024.gradflow_nan_rows == 0);

  plot::Figure weight{.title = "Largest softmax weight over 64 keys",
                      .x = {.label = "d_k, entries per head (log scale)", .log = true},
                      .y = {.label = "largest weight (1 = one-hot)", .min = 0, .max = 1}};
  weight.series.push_back({.label = "none", .x = dks, .y = top_none, .markers = true});
  weight.series.push_back(
      {.label = "1/sqrt(d_k)", .x = dks, .y = top_scaled, .markers = true, .emphasis = true});
  weight.series.push_back({.label = "uniform, 1/64",
                           .x = {dks.front(), dks.back()},
                           .y = {1.0 / kKeys, 1.0 / kKeys},
                           .reference = true});
  plot::Figure entropy{.title = "Softmax entropy over 64 keys",
                       .x = {.label = "d_k, entries per head (log scale)", .log = true},
                       .y = {.label = "entropy (nats; uniform = log 64 = 4.16)", .min = 0}};
  entropy.series.push_back({.label = "none", .x = dks, .y = h_none, .markers = true});
  entropy.series.push_back(
      {.label = "1/sqrt(d_k)", .x = dks, .y = h_scaled, .markers = true, .emphasis = true});
  entropy.series.push_back({.label = "uniform, log 64",
                            .x = {dks.front(), dks.back()},
                            .y = {uniform_h, uniform_h},
                            .reference = true});
  lessons::write_figure(lesson, "softmax_saturation.svg",
                        plot::render_svg_grid({weight, entropy}, 2));
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return cli::run_cli(argc, argv, run); }
