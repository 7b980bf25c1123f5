// Lesson 12: attention does not know the order of its inputs.
//
// Self-attention compares every token with every other by content alone:
// q_i . k_j and v_j depend on what tokens i and j are, not on where they
// stand. So with no positional information, permuting the input tokens
// permutes the outputs the same way (permutation equivariance), and anything
// pooled over the positions (a classifier's mean) does not change at all: the
// model cannot tell "a b" from "b a". Adding a position to each token (here a
// learned table, positional = "learned") breaks the symmetry. A causal mask
// breaks it too: query t sees t + 1 keys, so even a decoder with
// positional = "none" can tell where it is.
// Page: docs/lessons/12_position.md.
#include <cstdio>
#include <string>
#include <vector>

#include "autograd/ops.h"
#include "examples/lessons/lesson.h"
#include "examples/toolkit/plot/svg_plot.h"
#include "nn/loss.h"
#include "nn/models.h"
#include "nn/optim/optim.h"
#include "tensor/ops.h"

using namespace gradflow;

namespace {

constexpr int64_t kSymbols = 8, kLen = 4;

nn::ModelConfig tiny(const std::string& positional) {
  nn::ModelConfig c;
  c.vocab = kSymbols, c.max_len = kLen;
  c.d_model = 32, c.heads = 2, c.layers = 2, c.d_ff = 64;
  c.positional = positional;  // nn/positional_schemes.h: "none", "learned", ...
  return c;
}

// The largest |out(permuted)[t] - out(ids)[order[t]]|: 0 if permuting the
// input permutes the output rows the same way.
double permutation_gap(const Tensor& out, const Tensor& out_permuted,
                       const std::vector<int64_t>& order) {
  double gap = 0;
  for (size_t t = 0; t < order.size(); ++t)
    gap = std::max(
        gap, max(abs(sub(out.select(1, order[t]), out_permuted.select(1, static_cast<int64_t>(t)))))
                 .item());
  return gap;
}

// "Name the first token": 4 distinct tokens of 8 in random order; the label
// is the first. ids (B, 4), labels (B,).
struct Batch {
  Tensor ids, labels;
};
Batch first_token_batch(int64_t batch, Generator& gen) {
  std::vector<int64_t> ids, labels;
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<int64_t> pool = {0, 1, 2, 3, 4, 5, 6, 7};
    for (int64_t i = 0; i < kLen; ++i) {  // a partial Fisher-Yates shuffle: distinct tokens
      std::swap(pool[i], pool[i + static_cast<int64_t>(gen.below(kSymbols - i))]);
      ids.push_back(pool[i]);
    }
    labels.push_back(pool[0]);
  }
  return {from_vector(ids, {batch, kLen}), from_vector(labels, {batch})};
}

double accuracy(const Variable& logits, const Tensor& labels) {
  Tensor guess = max(logits.data(), 1).indices.to(DType::Float64);
  return mean(eq(guess, labels.to(DType::Float64))).item();
}

int run(int argc, char** argv) {
  cli::ArgParser args("lesson_12_position",
                      "Lesson 12: without positions, attention cannot tell one order of its "
                      "inputs from another.");
  const lessons::Lesson lesson = lessons::parse_lesson(args, "12_position", argc, argv);
  Generator gen(static_cast<uint64_t>(lesson.seed));

  // 1. Permute the input, compare the outputs (untrained models).
  const std::vector<int64_t> order = {2, 0, 3, 1};
  const Tensor ids = from_vector(std::vector<int64_t>{5, 2, 7, 3}, {1, kLen});
  const Tensor permuted = from_vector(std::vector<int64_t>{7, 5, 3, 2}, {1, kLen});
  std::printf("input \"5 2 7 3\", then permuted \"7 5 3 2\"; max |difference| of the outputs,\n");
  std::printf("each output row matched to its token's row before the permutation:\n");
  double gaps[3] = {0, 0, 0};  // encoder without positions, with, causal decoder without
  {
    NoGradGuard no_grad;
    for (const std::string positional : {"none", "learned"}) {
      nn::EncoderClassifier encoder(0, tiny(positional), gen);  // one output per token
      const double gap =
          permutation_gap(encoder.forward(ids).data(), encoder.forward(permuted).data(), order);
      gaps[positional == "none" ? 0 : 1] = gap;
      // The exact rounding differs from one CPU's kernels to another's; that
      // it is rounding does not: the digits go on a line of their own.
      if (gap < 1e-4)
        std::printf(
            "encoder, positional %-8s below 1e-04: the same outputs, permuted\n"
            "  (%.1e here: float32 rounding)\n",
            positional.c_str(), gap);
      else
        std::printf("encoder, positional %-8s %.1e\n", positional.c_str(), gap);
    }
    nn::DecoderLM decoder(tiny("none"), gen);
    gaps[2] = permutation_gap(decoder.forward(ids).data(), decoder.forward(permuted).data(), order);
    std::printf("causal decoder, none         %.1e\n", gaps[2]);
  }
  lessons::claim(
      "without positions the encoder's outputs are permuted with its input, to 1e-4; "
      "with a table, or a causal mask, they differ by over 0.1",
      gaps[0] < 1e-4 && gaps[1] > 0.1 && gaps[2] > 0.1);

  // 2. Train a classifier (the mean of the encoder's outputs, then a linear
  // layer) to name the first token, with and without positions.
  std::printf("\nname the first of 4 distinct tokens, 200 steps; held-out accuracy:\n");
  std::vector<double> steps;
  std::vector<std::vector<double>> curves(2);
  std::vector<double> final_accuracy;
  const std::vector<std::string> schemes = {"none", "learned"};
  for (size_t s = 0; s < schemes.size(); ++s) {
    nn::EncoderClassifier model(kSymbols, tiny(schemes[s]), gen);
    nn::AdamW optimizer(model.parameters(), /*lr=*/3e-3, nn::AdamWSettings::attention_paper());
    const Batch held_out = first_token_batch(2000, gen);
    for (int step = 0; step <= 200; ++step) {
      if (step % 10 == 0) {
        NoGradGuard no_grad;
        if (s == 0) steps.push_back(step);
        curves[s].push_back(accuracy(model.forward(held_out.ids), held_out.labels));
      }
      if (step == 200) break;
      Batch b = first_token_batch(64, gen);
      Variable loss = nn::cross_entropy(model.forward(b.ids), b.labels);
      optimizer.zero_grad();
      loss.backward();
      nn::clip_grad_norm(model.parameters(), 1.0);
      optimizer.step();
    }
    std::printf("positional %-8s %.3f  %s\n", schemes[s].c_str(), curves[s].back(),
                lessons::bar(curves[s].back(), 1.0).c_str());
  }
  std::printf("without positions the best possible is 1/4 (give or take 0.03 on 2000 examples):\n");
  std::printf("every order of the 4 tokens looks the same to it\n");
  // 2000 examples measure an accuracy of 1/4 to about 0.01: 0.04 is four times that.
  bool below_quarter = true, early = false;
  for (size_t i = 0; i < steps.size(); ++i) {
    below_quarter = below_quarter && curves[0][i] < 0.25 + 0.04;
    early = early || (steps[i] <= 50 && curves[1][i] > 0.95);
  }
  lessons::claim("without positions the accuracy is never above 1/4 by more than 0.04",
                 below_quarter);
  lessons::claim("with learned positions it is over 0.95 by step 50 and ends over 0.99",
                 early && curves[1].back() > 0.99);

  plot::Figure fig{.title = "Naming the first token needs positions",
                   .x = {.label = "training step"},
                   .y = {.label = "held-out accuracy (share right)", .min = 0, .max = 1}};
  fig.series.push_back({.label = "positional none", .x = steps, .y = curves[0], .markers = true});
  fig.series.push_back(
      {.label = "positional learned", .x = steps, .y = curves[1], .markers = true});
  fig.series.push_back({.label = "1/4: the best without positions",
                        .x = {0, 200},
                        .y = {0.25, 0.25},
                        .reference = true});
  lessons::write_figure(lesson, "position.svg", plot::render_svg(fig));
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return cli::run_cli(argc, argv, run); }
