// Lesson 7: cross-attention, and why a layer has several heads.
//
// In an encoder-decoder the decoder's cross-attention takes its queries from
// the decoder (the output being written) and its keys and values from the
// encoder (the input being read): each output position looks up the input
// positions it needs. Trained to reverse a sequence, output i must read
// input L-1-i, and the weights show it as an anti-diagonal.
//
// One head gives each query one set of weights, one mix of the values. When
// an output needs two different input positions at once, one head must
// split its weight between them and the two tokens blur into one mix; two
// heads of half the width can each look at one. The task here: output i
// names the pair (input i, input L-1-i). Same width, same steps: one head
// against two. Both solve it; what differs is where the second read happens
// (two heads: in the cross-attention; one head: a layer earlier, in the
// encoder's self-attention), and the probes print it.
// Page: docs/lessons/07_cross_attention_and_heads.md.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "autograd/ops.h"
#include "examples/lessons/lesson.h"
#include "examples/toolkit/plot/svg_heatmap.h"
#include "nn/data/toy_tasks.h"
#include "nn/loss.h"
#include "nn/models.h"
#include "nn/optim/optim.h"
#include "tensor/ops.h"

using namespace gradflow;

namespace {

nn::ModelConfig tiny_seq2seq(int64_t vocab, int64_t max_len, int64_t heads) {
  nn::ModelConfig c;
  c.vocab = vocab, c.max_len = max_len;
  c.d_model = 32, c.heads = heads, c.layers = 1, c.d_ff = 64;
  return c;
}

// The training loop of examples/minimal_train.cpp.
template <class MakeBatch>
void train(nn::EncoderDecoder& model, int steps, MakeBatch make_batch, Generator& gen) {
  nn::AdamW optimizer(model.parameters(), /*lr=*/3e-3, nn::AdamWSettings::attention_paper());
  for (int step = 1; step <= steps; ++step) {
    nn::Seq2SeqBatch batch = make_batch(gen);
    Variable logits = model.forward(batch.src, batch.tgt_in, batch.src_pad);
    Variable loss = nn::cross_entropy(logits, batch.tgt_out, nn::kPadToken);
    optimizer.zero_grad();
    loss.backward();
    nn::clip_grad_norm(model.parameters(), 1.0);
    optimizer.step();
  }
}

// The pair task: src s_0 .. s_5 EOS of 4 symbols, target p_0 .. p_5 EOS with
// p_i the pair (s_i, s_{5-i}) as one token of its own, id 7 + 4 s_i + s_{5-i}.
constexpr int64_t kPairLen = 6, kPairSymbols = 4;
constexpr int64_t kPairVocab = nn::kFirstContentToken + kPairSymbols + kPairSymbols * kPairSymbols;
nn::Seq2SeqBatch pair_batch(int64_t batch, Generator& gen) {
  const int64_t n = kPairSymbols, s_len = kPairLen + 1;
  std::vector<int64_t> src, tgt_in, tgt_out;
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<int64_t> s;
    for (int64_t i = 0; i < kPairLen; ++i) s.push_back(static_cast<int64_t>(gen.below(n)));
    tgt_in.push_back(nn::kBosToken);
    for (int64_t i = 0; i < kPairLen; ++i) {
      src.push_back(nn::kFirstContentToken + s[i]);
      const int64_t pair = nn::kFirstContentToken + n + n * s[i] + s[kPairLen - 1 - i];
      tgt_out.push_back(pair);
      if (i + 1 < kPairLen) tgt_in.push_back(pair);
    }
    src.push_back(nn::kEosToken);
    tgt_in.push_back(tgt_out.back());
    tgt_out.push_back(nn::kEosToken);
  }
  return {from_vector(src, {batch, s_len}), from_vector(tgt_in, {batch, s_len}),
          from_vector(tgt_out, {batch, s_len}), zeros({batch, s_len})};
}

// Cross-attention weights (H, T, S) of the decoder's layer for one example,
// and the encoder's self-attention weights (H, S, S), teacher-forced.
struct Maps {
  Tensor cross, encoder;
};
Maps attention_maps(const nn::EncoderDecoder& model, const nn::Seq2SeqBatch& one) {
  NoGradGuard no_grad;
  auto& cross = *model.decoder->layers[0]->cross_attn;
  auto& self = *model.encoder->layers[0]->self_attn;
  cross.record_probe = self.record_probe = true;
  model.forward(one.src, one.tgt_in, one.src_pad);
  cross.record_probe = self.record_probe = false;
  return {cross.probe.weights.data().select(0, 0), self.probe.weights.data().select(0, 0)};
}

// Mean weight that output i (i < L) puts on source position f(i), per head.
template <class F>
std::vector<double> mean_weight_on(const Tensor& w, int64_t len, F f) {
  std::vector<double> out;
  for (int64_t h = 0; h < w.shape()[0]; ++h) {
    double sum = 0;
    for (int64_t i = 0; i < len; ++i) sum += w.at({h, i, f(i)});
    out.push_back(sum / static_cast<double>(len));
  }
  return out;
}

// One example as a batch of one: src tokens then EOS, target = reversed.
nn::Seq2SeqBatch reverse_example(const std::vector<int64_t>& symbols) {
  const auto n = static_cast<int64_t>(symbols.size());
  std::vector<int64_t> src, tgt_in = {nn::kBosToken}, tgt_out;
  for (int64_t s : symbols) src.push_back(nn::kFirstContentToken + s);
  for (int64_t i = n - 1; i >= 0; --i) tgt_out.push_back(src[static_cast<size_t>(i)]);
  tgt_in.insert(tgt_in.end(), tgt_out.begin(), tgt_out.end());
  src.push_back(nn::kEosToken);
  tgt_out.push_back(nn::kEosToken);
  return {from_vector(src, {1, n + 1}), from_vector(tgt_in, {1, n + 1}),
          from_vector(tgt_out, {1, n + 1}), zeros({1, n + 1})};
}

int run(int argc, char** argv) {
  cli::ArgParser args("lesson_07_cross_attention_and_heads",
                      "Lesson 7: cross-attention reads the input in the order the output needs; "
                      "several heads read several places at once.");
  const lessons::Lesson lesson =
      lessons::parse_lesson(args, "07_cross_attention_and_heads", argc, argv);
  Generator gen(static_cast<uint64_t>(lesson.seed));

  // 1. Reverse, as examples/minimal_train.cpp: 2 heads of d_k 16.
  const nn::ToyTaskConfig task{.task = "reverse", .n_symbols = 10, .min_len = 1, .max_len = 6};
  nn::EncoderDecoder reverse(tiny_seq2seq(nn::vocab_size(task), nn::src_len(task), 2), gen);
  train(
      reverse, 400, [&](Generator& g) { return nn::make_batch(task, 64, g); }, gen);
  std::printf("reverse, 400 steps: held-out greedy accuracy %.3f\n",
              lessons::greedy_accuracy(reverse, nn::make_batch(task, 256, gen)));
  const nn::Seq2SeqBatch example = reverse_example({3, 1, 4, 1, 5, 9});
  const Maps rev = attention_maps(reverse, example);
  std::printf("\ncross-attention of \"3 1 4 1 5 9\" -> \"9 5 1 4 1 3\", mean of the 2 heads\n");
  std::printf("(queries: the decoder writing each output; keys: the encoder's source tokens)\n");
  std::printf("writes |   3    1    4    1    5    9  <eos>\n");
  const Tensor mean_heads = mean(rev.cross, {0});  // (T, S)
  for (int64_t i = 0; i < 7; ++i) {
    const auto written = static_cast<int64_t>(example.tgt_out.at({0, i})) - 3;
    std::printf("%6s |", i < 6 ? std::to_string(written).c_str() : "<eos>");
    for (int64_t j = 0; j < 7; ++j) std::printf(" %4.2f", mean_heads.at({i, j}));
    std::printf("\n");
  }
  const std::vector<double> mirror =
      mean_weight_on(mean_heads.unsqueeze(0), 6, [](int64_t i) { return 5 - i; });
  std::printf("mean weight of output i on source 5 - i: %.2f\n", mirror[0]);

  // 2. The pair task: one head against two at the same width.
  std::printf("\npairs: output i names (s_i, s_{5-i}), one token of 16; d_model 32, 200 steps\n");
  std::printf("cross-attention of output i, mean over i: weight on source i | on source 5 - i\n");
  std::printf("heads  d_k  accuracy  cross-attention per head        encoder self-attn on 5 - i\n");
  std::vector<Maps> pairs;
  for (int64_t heads : {1, 2}) {
    nn::EncoderDecoder model(tiny_seq2seq(kPairVocab, kPairLen + 1, heads), gen);
    train(
        model, 200, [](Generator& g) { return pair_batch(64, g); }, gen);
    const double acc = lessons::greedy_accuracy(model, pair_batch(512, gen));
    pairs.push_back(attention_maps(model, pair_batch(1, gen)));
    const Maps& m = pairs.back();
    const auto same = mean_weight_on(m.cross, kPairLen, [](int64_t i) { return i; });
    const auto flip = mean_weight_on(m.cross, kPairLen, [](int64_t i) { return 5 - i; });
    const auto enc = mean_weight_on(mean(m.encoder, {0}).unsqueeze(0), kPairLen,
                                    [](int64_t i) { return 5 - i; });
    std::string per_head;
    for (int64_t h = 0; h < heads; ++h) {
      char text[40];
      std::snprintf(text, sizeof text, "head %lld: %.2f | %.2f  ", static_cast<long long>(h + 1),
                    same[h], flip[h]);
      per_head += text;
    }
    std::printf("%5lld  %3lld  %8.3f  %-32s %.2f\n", static_cast<long long>(heads),
                static_cast<long long>(32 / heads), acc, per_head.c_str(), enc[0]);
  }

  // The figure: the reverse model's two cross-attention heads, then the pair
  // models' heads and, for one head, the encoder self-attention that helps it.
  std::vector<std::string> src_labels, out_labels, pair_src, pair_out;
  for (int64_t j = 0; j < 6; ++j) {
    src_labels.push_back(std::to_string(static_cast<int64_t>(example.src.at({0, j})) - 3));
    out_labels.push_back(std::to_string(static_cast<int64_t>(example.tgt_out.at({0, j})) - 3));
  }
  src_labels.push_back("eos"), out_labels.push_back("eos");
  for (int64_t j = 0; j < kPairLen; ++j) pair_src.push_back("s" + std::to_string(j));
  pair_src.push_back("eos");
  for (int64_t i = 0; i < kPairLen; ++i)
    pair_out.push_back("s" + std::to_string(i) + ",s" + std::to_string(5 - i));
  pair_out.push_back("eos");
  auto panel = [](std::string title, const Tensor& w, std::vector<std::string> rows,
                  std::vector<std::string> columns) {
    return plot::Heatmap{.title = std::move(title),
                         .rows = w.shape()[0],
                         .columns = w.shape()[1],
                         .values = w.to(DType::Float64).to_vector(),
                         .row_labels = std::move(rows),
                         .column_labels = std::move(columns)};
  };
  const std::vector<plot::HeatmapRow> grid = {
      {.heading = "reverse \"3 1 4 1 5 9\": cross-attention, outputs down, source across",
       .panels = {panel("head 1", rev.cross.select(0, 0), out_labels, src_labels),
                  panel("head 2", rev.cross.select(0, 1), out_labels, src_labels)}},
      {.heading =
           "pairs (s_i, s_5-i): queries (outputs, or source for the encoder) down, source across",
       .panels = {
           panel("1 head: encoder self-attn", mean(pairs[0].encoder, {0}), pair_src, pair_src),
           panel("1 head: cross-attn", pairs[0].cross.select(0, 0), pair_out, pair_src),
           panel("2 heads: cross head 1", pairs[1].cross.select(0, 0), pair_out, pair_src),
           panel("2 heads: cross head 2", pairs[1].cross.select(0, 1), pair_out, pair_src)}}};
  lessons::write_figure(lesson, "cross_attention_heads.svg",
                        plot::render_heatmap_grid(
                            grid, {.matrix_size = 140, .title = {"Cross-attention and heads"}}));
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return cli::run_cli(argc, argv, run); }
