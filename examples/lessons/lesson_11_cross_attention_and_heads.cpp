// Lesson 11: cross-attention, and why a layer has several heads.
//
// In an encoder-decoder the decoder's cross-attention takes its queries from
// the decoder (the output being written) and its keys and values from the
// encoder (the input being read): each output position looks up the input
// positions it needs. Trained to reverse a sequence, output i must read
// input L-1-i, and the weights show it as an anti-diagonal.
//
// One head gives each query one set of weights, one mix of the values. When
// an output needs two tokens at once, one head must split its weight
// between them and they arrive added together: with equal weights the
// pairs (a, b) and (b, a) give the same mix, so it can only tell them apart
// by weighting one more than the other, which leaves the other faint. Two
// heads of half the width each read one token. The task here (one decoder
// layer, so no earlier layer can fetch a token for it): at each position t,
// name the ordered pair (x_{t-1}, x_{t-3}). One head against two, same
// width, parameters, data and steps, three seeds.
// Page: docs/lessons/11_cross_attention_and_heads.md.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "autograd/ops.h"
#include "examples/lessons/lesson.h"
#include "examples/lessons/lesson_models.h"
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

// Cross-attention weights (H, T, S) of the decoder's layer for one example,
// teacher-forced.
Tensor cross_attention(const nn::EncoderDecoder& model, const nn::Seq2SeqBatch& one) {
  NoGradGuard no_grad;
  auto& cross = *model.decoder->layers[0]->cross_attn;
  cross.record_probe = true;
  model.forward(one.src, one.tgt_in, one.src_pad);
  cross.record_probe = false;
  return cross.probe.weights.data().select(0, 0);
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

// The two-reads task: x_0 .. x_11 of 16 symbols; the target at t >= 3 is the
// ordered pair (x_{t-1}, x_{t-3}) as one token of its own, id 19 + 16 a + b;
// at t < 3 padding (not scored). Read by one causal decoder layer.
constexpr int64_t kSeqLen = 12, kSymbols = 16, kFirstScored = 3, kPairSteps = 250;
constexpr int64_t kTwoReadsVocab = nn::kFirstContentToken + kSymbols + kSymbols * kSymbols;
struct LmBatch {
  Tensor ids, targets;  // (B, 12) each
};
LmBatch two_reads_batch(int64_t batch, Generator& gen) {
  std::vector<int64_t> ids, targets;
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<int64_t> x;
    for (int64_t t = 0; t < kSeqLen; ++t) x.push_back(gen.below(static_cast<uint64_t>(kSymbols)));
    for (int64_t t = 0; t < kSeqLen; ++t) {
      ids.push_back(nn::kFirstContentToken + x[t]);
      targets.push_back(t < kFirstScored
                            ? nn::kPadToken
                            : nn::kFirstContentToken + kSymbols + kSymbols * x[t - 1] + x[t - 3]);
    }
  }
  return {from_vector(ids, {batch, kSeqLen}), from_vector(targets, {batch, kSeqLen})};
}

nn::ModelConfig one_layer_lm(int64_t heads) {
  nn::ModelConfig c;
  c.vocab = kTwoReadsVocab, c.max_len = kSeqLen;
  c.d_model = 32, c.heads = heads, c.layers = 1, c.d_ff = 64;
  return c;
}

struct PairRun {
  std::vector<double> losses;  // held-out loss every 50 steps
  double accuracy = 0;         // held-out, at the end
  Tensor weights;              // (B, H, T, T) on the held-out set, at the end
};

// Trains from its own seed, evaluating on `held_out`. The batches come from
// a generator of their own, so one head and two see the same data.
PairRun train_two_reads(int64_t heads, uint64_t seed, const LmBatch& held_out) {
  Generator init(seed), data(seed + 100);
  nn::DecoderLM model(one_layer_lm(heads), init);
  nn::AdamW optimizer(model.parameters(), /*lr=*/3e-3, nn::AdamWSettings::attention_paper());
  PairRun run;
  auto& attention = *model.decoder->layers[0]->self_attn;
  for (int64_t step = 1; step <= kPairSteps; ++step) {
    LmBatch batch = two_reads_batch(64, data);
    Variable loss = nn::cross_entropy(model.forward(batch.ids), batch.targets, nn::kPadToken);
    optimizer.zero_grad();
    loss.backward();
    nn::clip_grad_norm(model.parameters(), 1.0);
    optimizer.step();
    if (step % 50 != 0) continue;
    NoGradGuard no_grad;
    attention.record_probe = step == kPairSteps;
    Variable logits = model.forward(held_out.ids);
    attention.record_probe = false;
    run.losses.push_back(nn::cross_entropy(logits, held_out.targets, nn::kPadToken).item());
    if (step < kPairSteps) continue;
    const Tensor guess = max(logits.data(), -1).indices;
    int64_t right = 0, total = 0;
    for (int64_t b = 0; b < guess.shape()[0]; ++b)
      for (int64_t t = kFirstScored; t < kSeqLen; ++t, ++total)
        right += guess.at({b, t}) == held_out.targets.at({b, t});
    run.accuracy = static_cast<double>(right) / static_cast<double>(total);
    run.weights = attention.probe.weights.data();
  }
  return run;
}

// Weight of the query at t on the token k back, k = 0 .. 3, then on all
// others: mean over scored queries (t >= 3) and the batch, per head.
std::vector<std::vector<double>> weight_by_offset(const Tensor& w) {
  const int64_t batch = w.shape()[0], heads = w.shape()[1];
  std::vector<std::vector<double>> out(static_cast<size_t>(heads), std::vector<double>(5, 0.0));
  const double n = static_cast<double>(batch * (kSeqLen - kFirstScored));
  for (int64_t h = 0; h < heads; ++h) {
    auto& row = out[static_cast<size_t>(h)];
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t t = kFirstScored; t < kSeqLen; ++t)
        for (int64_t k = 0; k <= 3; ++k) row[static_cast<size_t>(k)] += w.at({b, h, t, t - k}) / n;
    row[4] = 1 - row[0] - row[1] - row[2] - row[3];
  }
  return out;
}

int run(int argc, char** argv) {
  cli::ArgParser args("lesson_11_cross_attention_and_heads",
                      "Lesson 11: cross-attention reads the input in the order the output needs; "
                      "one head against two where every output needs two tokens at once.");
  const lessons::Lesson lesson =
      lessons::parse_lesson(args, "11_cross_attention_and_heads", argc, argv);
  Generator gen(static_cast<uint64_t>(lesson.seed));

  // 1. Reverse, as examples/minimal_train.cpp: 2 heads of d_k 16.
  const nn::ToyTaskConfig task{.task = "reverse", .n_symbols = 10, .min_len = 1, .max_len = 6};
  nn::EncoderDecoder reverse(tiny_seq2seq(nn::vocab_size(task), nn::src_len(task), 2), gen);
  train(
      reverse, 400, [&](Generator& g) { return nn::make_batch(task, 64, g); }, gen);
  std::printf("reverse, 400 steps: held-out greedy accuracy %.3f\n",
              lessons::greedy_accuracy(reverse, nn::make_batch(task, 256, gen)));
  const nn::Seq2SeqBatch example = reverse_example({3, 1, 4, 1, 5, 9});
  const Tensor rev = cross_attention(reverse, example);
  std::printf("\ncross-attention of \"3 1 4 1 5 9\" -> \"9 5 1 4 1 3\", mean of the 2 heads\n");
  std::printf("(queries: the decoder writing each output; keys: the encoder's source tokens)\n");
  std::printf("writes |   3    1    4    1    5    9  <eos>\n");
  const Tensor mean_heads = mean(rev, {0});  // (T, S)
  for (int64_t i = 0; i < 7; ++i) {
    const auto written = static_cast<int64_t>(example.tgt_out.at({0, i})) - 3;
    std::printf("%6s |", i < 6 ? std::to_string(written).c_str() : "<eos>");
    for (int64_t j = 0; j < 7; ++j) std::printf(" %4.2f", mean_heads.at({i, j}));
    std::printf("\n");
  }
  const std::vector<double> mirror =
      mean_weight_on(mean_heads.unsqueeze(0), 6, [](int64_t i) { return 5 - i; });
  std::printf("mean weight of output i on source 5 - i: %.2f\n", mirror[0]);
  lessons::claim("output i reads source 5 - i: over 0.8 of its weight on average", mirror[0] > 0.8);

  // 2. Two reads per output: one head against two at the same width.
  std::printf("\ntwo reads: at each t name the pair (x_{t-1}, x_{t-3}), one token of 256;\n");
  std::printf("16 symbols, 12 tokens; one causal decoder layer, d_model 32, d_ff 64;\n");
  std::printf("%lld steps of 64; held out: the same 512 sequences for every run\n",
              static_cast<long long>(kPairSteps));
  std::printf("\nheld-out loss, nats, at step    50     100     150     200     250  accuracy\n");
  Generator held_gen(static_cast<uint64_t>(lesson.seed) + 1000);
  const LmBatch held_out = two_reads_batch(512, held_gen);
  std::vector<std::vector<PairRun>> runs(2);  // runs[heads - 1][seed]
  for (int64_t heads : {1, 2}) {
    for (uint64_t s = 0; s < 3; ++s) {
      const uint64_t seed = static_cast<uint64_t>(lesson.seed) + s;
      runs[static_cast<size_t>(heads - 1)].push_back(train_two_reads(heads, seed, held_out));
      const PairRun& r = runs[static_cast<size_t>(heads - 1)].back();
      std::printf("%lld %-5s (d_k %2lld), seed %llu    ", static_cast<long long>(heads),
                  heads == 1 ? "head" : "heads", static_cast<long long>(32 / heads),
                  static_cast<unsigned long long>(seed));
      for (double loss : r.losses) std::printf(" %6.3f ", loss);
      std::printf("  %6.3f\n", r.accuracy);
    }
  }
  std::printf("\nat step %lld, over the 3 seeds      held-out loss         accuracy\n",
              static_cast<long long>(kPairSteps));
  for (size_t h = 0; h < 2; ++h) {
    double lo = INFINITY, hi = -INFINITY, acc_lo = INFINITY, acc_hi = -INFINITY;
    for (const PairRun& r : runs[h]) {
      lo = std::min(lo, r.losses.back()), hi = std::max(hi, r.losses.back());
      acc_lo = std::min(acc_lo, r.accuracy), acc_hi = std::max(acc_hi, r.accuracy);
    }
    std::printf("%zu %-5s                          %.3f to %.3f   %.3f to %.3f  %s\n", h + 1,
                h == 0 ? "head" : "heads", lo, hi, acc_lo, acc_hi,
                lessons::bar(hi, 1.0, 20).c_str());
  }

  // Two heads ahead of one at every seed, and from step 150 on, every run.
  bool ahead = true, apart = true;
  double spread = 0, worst_two = 0, best_one = INFINITY;
  for (size_t s = 0; s < 3; ++s)
    ahead = ahead && runs[1][s].losses.back() < runs[0][s].losses.back() &&
            runs[1][s].accuracy >= runs[0][s].accuracy;
  for (size_t i = 2; i < runs[0][0].losses.size(); ++i)  // steps 150, 200, 250
    for (const PairRun& one : runs[0])
      for (const PairRun& two : runs[1]) apart = apart && two.losses[i] < one.losses[i];
  for (size_t h = 0; h < 2; ++h) {
    double lo = INFINITY, hi = -INFINITY;
    for (const PairRun& r : runs[h])
      lo = std::min(lo, r.losses.back()), hi = std::max(hi, r.losses.back());
    spread = std::max(spread, hi - lo);
    if (h == 0) best_one = lo;
    if (h == 1) worst_two = hi;
  }
  lessons::claim(
      "two heads end with a lower held-out loss than one, and no worse accuracy, "
      "at every seed",
      ahead);
  lessons::claim("from step 150 on, every one-head run is behind every two-head run", apart);
  lessons::claim("the gap between the two is over three times the widest seed-to-seed spread",
                 best_one - worst_two > 3 * spread);

  std::printf("\nwhere each head looks at step %lld (seed %lld): weight of the query at t on\n",
              static_cast<long long>(kPairSteps), static_cast<long long>(lesson.seed));
  std::printf("the token k back, mean over t >= 3 and the held-out set\n");
  std::printf("model    head    k=0     k=1     k=2     k=3     other\n");
  for (size_t h = 0; h < 2; ++h) {
    const auto offsets = weight_by_offset(runs[h][0].weights);
    for (size_t head = 0; head < offsets.size(); ++head) {
      std::printf("%zu %-5s  %4zu", h + 1, h == 0 ? "head" : "heads", head + 1);
      for (double w : offsets[head]) std::printf("    %4.2f", w);
      std::printf("\n");
    }
  }
  const auto one = weight_by_offset(runs[0][0].weights)[0];
  const auto two = weight_by_offset(runs[1][0].weights);
  // Each of the two heads on one of the two tokens, whichever it is.
  const bool own = std::max(two[0][1], two[1][1]) > 0.9 && std::max(two[0][3], two[1][3]) > 0.9 &&
                   (two[0][1] > 0.9) != (two[1][1] > 0.9);
  lessons::claim(
      "with two heads, one puts over 0.9 on the token 1 back and the other over 0.9 "
      "on the token 3 back",
      own);
  lessons::claim("the one head splits its weight unequally between the two, each over 0.2",
                 one[1] > 0.2 && one[3] > 0.2 && std::abs(one[1] - one[3]) > 0.05);

  // The figure: the reverse model's two cross-attention heads, then every
  // head of the two-reads models (seed --seed) on the first held-out sequence.
  std::vector<std::string> src_labels, out_labels, seq_labels, pair_labels;
  for (int64_t j = 0; j < 6; ++j) {
    src_labels.push_back(std::to_string(static_cast<int64_t>(example.src.at({0, j})) - 3));
    out_labels.push_back(std::to_string(static_cast<int64_t>(example.tgt_out.at({0, j})) - 3));
  }
  src_labels.push_back("eos"), out_labels.push_back("eos");
  for (int64_t t = 0; t < kSeqLen; ++t) {
    seq_labels.push_back(std::to_string(static_cast<int64_t>(held_out.ids.at({0, t})) - 3));
    pair_labels.push_back(t < kFirstScored ? "-"
                                           : seq_labels[static_cast<size_t>(t - 1)] + "," +
                                                 seq_labels[static_cast<size_t>(t - 3)]);
  }
  auto panel = [](std::string title, const Tensor& w, std::vector<std::string> rows,
                  std::vector<std::string> columns) {
    return plot::Heatmap{.title = std::move(title),
                         .rows = w.shape()[0],
                         .columns = w.shape()[1],
                         .values = w.to(DType::Float64).to_vector(),
                         .row_labels = std::move(rows),
                         .column_labels = std::move(columns)};
  };
  const Tensor one_head = runs[0][0].weights.select(0, 0),
               two_heads = runs[1][0].weights.select(0, 0);
  const std::vector<plot::HeatmapRow> grid = {
      {.heading = "reverse \"3 1 4 1 5 9\": cross-attention, outputs down, source across",
       .panels = {panel("head 1", rev.select(0, 0), out_labels, src_labels),
                  panel("head 2", rev.select(0, 1), out_labels, src_labels)}},
      {.heading = "two reads (x_t-1, x_t-3): pairs to name down, tokens across",
       .panels = {panel("1 head (d_k 32)", one_head.select(0, 0), pair_labels, seq_labels),
                  panel("2 heads: head 1", two_heads.select(0, 0), pair_labels, seq_labels),
                  panel("2 heads: head 2", two_heads.select(0, 1), pair_labels, seq_labels)}}};
  lessons::write_figure(
      lesson, "cross_attention_heads.svg",
      plot::render_heatmap_grid(
          grid, {.matrix_size = 140, .title = {"Cross-attention, and one head against two"}}));
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return cli::run_cli(argc, argv, run); }
