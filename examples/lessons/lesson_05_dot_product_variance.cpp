// Lesson 5: the dot product's variance, the reason attention scales at all.
//
// q and k are vectors of d_k independent entries, each of mean 0 and
// variance 1 (what a layer's input and initialisation aim for). Their dot
// product q.k = sum_i q_i k_i adds d_k terms of variance 1 each, so its
// variance is d_k and its spread sqrt(d_k): the larger the head, the larger
// the scores the softmax sees. Dividing by sqrt(d_k) undoes exactly that.
// Page: docs/lessons/05_dot_product_variance.md.
#include <cmath>
#include <cstdio>
#include <vector>

#include "examples/lessons/lesson.h"
#include "examples/toolkit/plot/svg_plot.h"
#include "tensor/ops.h"

using namespace gradflow;

namespace {

// The standard deviation of q.k over `draws` pairs (q, k) of N(0, 1) vectors
// of length d_k: one row of q times the same row of k, summed along it.
double dot_product_std(int64_t d_k, int64_t draws, Generator& gen) {
  Tensor q = randn({draws, d_k}, gen, DType::Float64);
  Tensor k = randn({draws, d_k}, gen, DType::Float64);
  Tensor dots = sum(mul(q, k), {1});  // (draws,)
  return std::sqrt(var(dots).item());
}

int run(int argc, char** argv) {
  cli::ArgParser args("lesson_05_dot_product_variance",
                      "Lesson 5: the spread of q.k grows as sqrt(d_k); dividing by sqrt(d_k) "
                      "brings it back to 1.");
  const lessons::Lesson lesson = lessons::parse_lesson(args, "05_dot_product_variance", argc, argv);
  Generator gen(static_cast<uint64_t>(lesson.seed));
  const int64_t draws = 20000;

  std::printf("q and k: d_k entries each, N(0, 1); %lld draws of the pair per d_k\n\n",
              static_cast<long long>(draws));
  std::printf("  d_k   std(q.k)  sqrt(d_k)  std(q.k / sqrt(d_k))\n");
  std::vector<double> dks, measured, theory, scaled;
  for (int64_t d_k : {1, 4, 16, 64, 256, 1024}) {
    const double s = dot_product_std(d_k, draws, gen);
    dks.push_back(static_cast<double>(d_k));
    measured.push_back(s);
    theory.push_back(std::sqrt(static_cast<double>(d_k)));
    scaled.push_back(s / std::sqrt(static_cast<double>(d_k)));
    std::printf("%5lld  %9.1f  %9.1f  %7.2f  %s\n", static_cast<long long>(d_k), s, theory.back(),
                scaled.back(), lessons::bar(s, 32).c_str());
  }
  std::printf("\nthe bars: std(q.k), full width 32\n");
  // 20,000 draws measure a spread to about 0.5%: 3% is six times that.
  bool near = true;
  for (double r : scaled) near = near && std::abs(r - 1) < 0.03;
  lessons::claim("std(q.k) is sqrt(d_k), and std(q.k / sqrt(d_k)) is 1, within 3% at every d_k",
                 near);
  std::printf("at d_k 64, two scores one spread (8) apart get softmax weights %.0f times apart\n",
              std::exp(theory[3]));

  plot::Figure fig{.title = "The spread of q.k grows as sqrt(d_k)",
                   .x = {.label = "d_k, entries per head (log scale)", .log = true},
                   .y = {.label = "standard deviation of the score (log scale)", .log = true}};
  fig.series.push_back({.label = "q.k, measured", .x = dks, .y = measured, .markers = true});
  fig.series.push_back(
      {.label = "q.k / sqrt(d_k), measured", .x = dks, .y = scaled, .markers = true});
  fig.series.push_back({.label = "sqrt(d_k), predicted", .x = dks, .y = theory, .dashed = true});
  lessons::write_figure(lesson, "dot_product_std.svg", plot::render_svg(fig));
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return cli::run_cli(argc, argv, run); }
