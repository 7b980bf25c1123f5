// Lesson 10: the causal mask and the padding mask, and what goes wrong without one.
//
// A mask hides keys from queries: the softmax gives a hidden key weight 0
// (its score is set to -inf first). The causal mask hides every later
// position, so position t is computed from tokens 0..t only: changing a later
// token cannot change it. Remove the mask and the same model sees the future:
// trained to predict the next token, it learns to read it off the input, its
// teacher-forced loss falls below what is possible, and it cannot generate,
// because when it generates, the next token is not there to read. The padding
// mask hides the filler that makes sequences of unequal length one batch.
// Page: docs/lessons/10_masks.md.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "autograd/ops.h"
#include "examples/lessons/lesson.h"
#include "examples/toolkit/plot/svg_heatmap.h"
#include "nn/loss.h"
#include "nn/models.h"
#include "nn/optim/optim.h"
#include "tensor/ops.h"

using namespace gradflow;

namespace {

// DecoderLM::forward with the causal mask optional: the same layers and
// weights; without the mask each position also attends to the ones after it.
Variable lm_forward(const nn::DecoderLM& m, const Tensor& ids, bool causal) {
  const int64_t t = ids.shape()[1];
  Variable x = m.embed->forward(ids);
  x = m.decoder->forward(x, causal ? nn::causal_mask(t, t) : Tensor());
  return m.lm_head->forward(m.final_norm->forward(x));
}

nn::ModelConfig tiny_lm(int64_t vocab, int64_t len) {
  nn::ModelConfig c;
  c.vocab = vocab, c.max_len = len;
  c.d_model = 32, c.heads = 2, c.layers = 2, c.d_ff = 64;
  return c;
}

// The task: k random symbols, a separator, the same k symbols sorted
// ("3 1 4 | 1 3 4"), as next-token prediction: input ids[0..2k-1], target
// ids[1..2k]. The first k - 1 targets are random (no model can predict
// them); the separator and the sorted half are determined by what came
// before. Reading the next token off the input is far easier than sorting.
constexpr int64_t kSymbols = 8, kHalf = 5, kSep = kSymbols, kLen = 2 * kHalf + 1;
Tensor sort_sequences(int64_t batch, Generator& gen) {
  std::vector<int64_t> ids;
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<int64_t> s;
    for (int64_t i = 0; i < kHalf; ++i) s.push_back(static_cast<int64_t>(gen.below(kSymbols)));
    ids.insert(ids.end(), s.begin(), s.end());
    ids.push_back(kSep);
    std::sort(s.begin(), s.end());
    ids.insert(ids.end(), s.begin(), s.end());
  }
  return from_vector(ids, {batch, kLen});
}

struct Trained {
  double teacher_forced_loss = 0, generated_accuracy = 0;
  Tensor weights;                   // first layer, head 0, on one example: (T, T)
  std::vector<std::string> tokens;  // that example's input tokens, "|" the separator
};

// `example` (1, kLen): the sequence whose attention is kept.
Trained train(bool causal, const Tensor& example, Generator& gen) {
  nn::DecoderLM model(tiny_lm(kSymbols + 1, kLen), gen);
  nn::AdamW optimizer(model.parameters(), /*lr=*/3e-3, nn::AdamWSettings::attention_paper());
  for (int step = 1; step <= 300; ++step) {
    Tensor ids = sort_sequences(32, gen);
    Variable logits = lm_forward(model, ids.narrow(1, 0, kLen - 1), causal);
    Variable loss = nn::cross_entropy(logits, ids.narrow(1, 1, kLen - 1).contiguous());
    optimizer.zero_grad();
    loss.backward();
    nn::clip_grad_norm(model.parameters(), 1.0);
    optimizer.step();
  }
  NoGradGuard no_grad;
  Trained r;
  Tensor test = sort_sequences(256, gen);
  r.teacher_forced_loss = nn::cross_entropy(lm_forward(model, test.narrow(1, 0, kLen - 1), causal),
                                            test.narrow(1, 1, kLen - 1).contiguous())
                              .item();
  // Greedy generation: from "s | ", each next token is the model's best
  // guess at the last position, appended and fed back in.
  Tensor seq = test.narrow(1, 0, kHalf + 1).contiguous();
  for (int64_t i = 0; i < kHalf; ++i) {
    Tensor logits = lm_forward(model, seq, causal).data();
    Tensor next = max(logits.select(1, seq.shape()[1] - 1), 1).indices;  // (B,)
    seq = cat({seq, next.reshape({test.shape()[0], 1})}, 1);
  }
  Tensor right = eq(seq.narrow(1, kHalf + 1, kHalf).to(DType::Float64),
                    test.narrow(1, kHalf + 1, kHalf).to(DType::Float64));
  r.generated_accuracy = mean(right).item();
  // The first layer's attention on one example, head 0.
  auto& attn = *model.decoder->layers[0]->self_attn;
  attn.record_probe = true;
  lm_forward(model, example.narrow(1, 0, kLen - 1), causal);
  r.weights = attn.probe.weights.data().select(0, 0).select(0, 0);
  for (int64_t i = 0; i + 1 < kLen; ++i) {
    const auto id = static_cast<int64_t>(example.at({0, i}));
    r.tokens.push_back(id == kSep ? "|" : std::to_string(id));
  }
  return r;
}

int run(int argc, char** argv) {
  cli::ArgParser args("lesson_10_masks",
                      "Lesson 10: the causal mask keeps a position from seeing later ones; the "
                      "padding mask hides filler.");
  const lessons::Lesson lesson = lessons::parse_lesson(args, "10_masks", argc, argv);
  Generator gen(static_cast<uint64_t>(lesson.seed));

  // 1. The masks, and the weights they leave: causal plus padding on a
  // sequence of 6 whose last 2 are padding. 1 = hidden (nn/masks.h).
  const int64_t t = 6;
  Tensor pad = from_vector({0, 0, 0, 0, 1, 1}, {1, t});
  Tensor mask = nn::combine_masks(nn::causal_mask(t, t), nn::key_padding_mask(pad));  // (1,1,T,T)
  Variable q(randn({1, 1, t, 8}, gen)), k(randn({1, 1, t, 8}, gen)), v(randn({1, 1, t, 8}, gen));
  nn::AttentionProbe probe;
  nn::scaled_dot_product_attention(q, k, v, mask, 1 / std::sqrt(8.0), &probe);
  Tensor weights = probe.weights.data().select(0, 0).select(0, 0);  // (T, T)
  std::printf("attention weights with the causal and the padding mask (keys 4, 5 are padding)\n");
  std::printf("query  key 0  key 1  key 2  key 3  key 4  key 5\n");
  for (int64_t i = 0; i < t; ++i) {
    std::printf("%5lld", static_cast<long long>(i));
    for (int64_t j = 0; j < t; ++j) std::printf("  %5.3f", weights.at({i, j}));
    std::printf("\n");
  }
  bool hidden_zero = true;
  for (int64_t i = 0; i < t; ++i)
    for (int64_t j = 0; j < t; ++j)
      if (j > i || pad.at({0, j}) != 0) hidden_zero = hidden_zero && weights.at({i, j}) == 0;
  lessons::claim("every key after its query, and every padding key, gets weight exactly 0",
                 hidden_zero);

  // 2. The leak: change the last token and see which positions' outputs move.
  {
    nn::DecoderLM model(tiny_lm(kSymbols + 1, kLen), gen);
    NoGradGuard no_grad;
    Tensor ids = sort_sequences(1, gen).narrow(1, 0, 8).contiguous(), changed = ids.clone();
    changed.set({0, 7}, (ids.at({0, 7}) + 1.0 == kSymbols) ? 0 : ids.at({0, 7}) + 1);
    std::printf("\nchange the token at position 7 of 8; how much do the logits at 0..6 move?\n");
    double moved[2] = {0, 0};  // with the mask, without
    for (bool causal : {true, false}) {
      Tensor a = lm_forward(model, ids, causal).data(),
             b = lm_forward(model, changed, causal).data();
      moved[causal ? 0 : 1] = max(abs(sub(a.narrow(1, 0, 7), b.narrow(1, 0, 7)))).item();
      std::printf("%-22s max change at positions 0..6: %.2g\n",
                  causal ? "with the causal mask:" : "without it:", moved[causal ? 0 : 1]);
    }
    lessons::claim(
        "with the causal mask a later token moves no earlier logit, exactly; "
        "without it, it does",
        moved[0] == 0 && moved[1] > 0);
  }

  // 3. Train the same model with and without the mask on "s | s".
  std::printf("\ntrain on \"3 1 4 0 6 | 0 1 3 4 6\" (5 symbols of 8, then sorted), 300 steps:\n");
  std::printf("the best possible teacher-forced loss: 4 of 10 targets random, 4/10 x ln 8 = %.2f\n",
              0.4 * std::log(8.0));
  std::printf("mask     teacher-forced loss  generated sort, tokens right\n");
  const Tensor example = sort_sequences(1, gen);
  Trained with = train(true, example, gen), without = train(false, example, gen);
  for (const auto& [name, r] : {std::pair{"causal", with}, std::pair{"none", without}})
    std::printf("%-7s  %19.2f  %5.2f  %s\n", name, r.teacher_forced_loss, r.generated_accuracy,
                lessons::bar(r.generated_accuracy, 1.0, 20).c_str());
  const double bound = 0.4 * std::log(8.0);
  lessons::claim(
      "unmasked, the loss is below what any model reading only the past can reach, "
      "and it generates worse than the causal model",
      without.teacher_forced_loss < bound - 0.1 &&
          without.generated_accuracy < with.generated_accuracy - 0.2);
  lessons::claim("the causal model's loss stays near that bound, and it generates over 90% right",
                 std::abs(with.teacher_forced_loss - bound) < 0.1 && with.generated_accuracy > 0.9);

  // Queries down, keys across, each labelled: positions, or the example's tokens.
  auto map = [](const std::string& title, const Tensor& w, std::vector<std::string> labels) {
    return plot::Heatmap{.title = title,
                         .rows = w.shape()[0],
                         .columns = w.shape()[1],
                         .values = w.to(DType::Float64).to_vector(),
                         .row_labels = labels,
                         .column_labels = labels};
  };
  plot::HeatmapOptions options{
      .title = {"A mask hides keys: their weight is 0",
                "left: positions, keys 4 and 5 padding; right: layer 1, head 1 of the trained "
                "models on \"s | sorted s\""}};
  lessons::write_figure(
      lesson, "masks.svg",
      plot::render_heatmap_grid(
          {{.panels = {map("causal + padding mask", weights, {"0", "1", "2", "3", "pad", "pad"}),
                       map("trained with the causal mask", with.weights, with.tokens),
                       map("trained without a mask", without.weights, without.tokens)}}},
          options));
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return cli::run_cli(argc, argv, run); }
