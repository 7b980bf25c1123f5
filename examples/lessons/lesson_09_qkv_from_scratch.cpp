// Lesson 9: Q, K and V from scratch, on a lookup small enough to do by hand.
//
// Four entry tokens each carry a name (cat, dog, sun, sea) and a value; a
// query token asks "which value has sun?". Three matrices turn tokens into
// what attention compares and mixes: W_Q picks from the query token what it
// looks for, W_K picks from each entry what it offers (its name), W_V picks
// what it passes on (its value). The scores q.k / sqrt(d_k) put the matching
// key on top, the softmax turns them into weights, and the output is the
// weights' mix of the values: nearly sun's value. First the matrices are
// written by hand, then Adam learns them from random starts on random tables.
// Page: docs/lessons/09_qkv_from_scratch.md.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "autograd/ops.h"
#include "examples/lessons/lesson.h"
#include "examples/toolkit/plot/svg_heatmap.h"
#include "nn/loss.h"
#include "nn/optim/optim.h"
#include "tensor/ops.h"

using namespace gradflow;

namespace {

// A token is 9 numbers: [name, one-hot over 4 | wanted name, one-hot | value].
constexpr int64_t kNames = 4, kWidth = 2 * kNames + 1, kValue = 2 * kNames, kDk = 4;
const std::vector<std::string> kNameText = {"cat", "dog", "sun", "sea"};
const std::vector<double> kTable = {3, 5, 7, 2};  // the example: cat = 3, ..., sea = 2

// Entries "name n has value kTable[n]", one row each: (4, 9).
Tensor entry_tokens(const std::vector<double>& values) {
  std::vector<double> x(kNames * kWidth, 0.0);
  for (int64_t n = 0; n < kNames; ++n) {
    x[n * kWidth + n] = 1;                                    // my name
    x[n * kWidth + kValue] = values[static_cast<size_t>(n)];  // my value
  }
  return from_vector(x, {kNames, kWidth});
}

// Queries "which value has name n?" for every n, one row each: (4, 9).
Tensor query_tokens() {
  std::vector<double> x(kNames * kWidth, 0.0);
  for (int64_t n = 0; n < kNames; ++n) x[n * kWidth + kNames + n] = 1;  // the name I want
  return from_vector(x, {kNames, kWidth});
}

struct Weights {
  Variable w_q, w_k, w_v;  // (9, d_k), (9, d_k), (9, 1)
};

// By hand: q = strength x the wanted name, k = my name, v = my value.
Weights hand_written(double strength) {
  Tensor w_q = zeros({kWidth, kDk}), w_k = zeros({kWidth, kDk}), w_v = zeros({kWidth, 1});
  for (int64_t i = 0; i < kNames; ++i) {
    w_q.set({kNames + i, i}, strength);
    w_k.set({i, i}, 1);
  }
  w_v.set({kValue, 0}, 1);
  return {Variable(w_q), Variable(w_k), Variable(w_v)};
}

struct Attended {
  Tensor q, k, scores, weights, out;
};

// Attention written out step by step: queries x_q (..., T, 9), entries x_e (..., S, 9).
Attended attend(const Weights& w, const Variable& x_q, const Variable& x_e) {
  Variable q = matmul(x_q, w.w_q), k = matmul(x_e, w.w_k), v = matmul(x_e, w.w_v);
  Variable scores = matmul(q, transpose(k, -1, -2)) / std::sqrt(static_cast<double>(kDk));
  Variable weights = softmax(scores, -1);  // each query's weights over the keys sum to 1
  return {q.data(), k.data(), scores.data(), weights.data(), matmul(weights, v).data()};
}

// One query's scores, its weights as bars, and its output as the mix of values.
void print_query(const Attended& a, int64_t query) {
  std::printf("key  value   score  weight\n");
  std::string mix;
  for (int64_t j = 0; j < kNames; ++j) {
    const double w = a.weights.at({query, j}), value = kTable[static_cast<size_t>(j)];
    std::printf("%-4s %5.0f  %6.2f  %6.3f  %s\n", kNameText[static_cast<size_t>(j)].c_str(), value,
                a.scores.at({query, j}), w, lessons::bar(w, 1.0).c_str());
    char term[32];
    std::snprintf(term, sizeof term, "%s%.3f x %.0f", j ? " + " : "", w, value);
    mix += term;
  }
  std::printf("output = %s = %.2f\n", mix.c_str(), a.out.at({query, 0}));
}

// Random tables: every name once, each value a whole number 0..9, and one
// query per table; the target is the wanted name's value.
struct Batch {
  Variable queries, entries;  // (B, 1, 9), (B, 4, 9)
  Variable target;            // (B, 1, 1)
};
Batch random_tables(int64_t batch, Generator& gen) {
  std::vector<double> q(batch * kWidth, 0.0), e, target;
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<double> values;
    for (int64_t n = 0; n < kNames; ++n) values.push_back(static_cast<double>(gen.below(10)));
    const std::vector<double> x = entry_tokens(values).to_vector();
    e.insert(e.end(), x.begin(), x.end());
    const int64_t want = gen.below(kNames);
    q[b * kWidth + kNames + want] = 1;
    target.push_back(values[static_cast<size_t>(want)]);
  }
  return {Variable(from_vector(q, {batch, 1, kWidth})),
          Variable(from_vector(e, {batch, kNames, kWidth})),
          Variable(from_vector(target, {batch, 1, 1}))};
}

plot::Heatmap weight_map(const std::string& title, const Attended& a) {
  std::vector<std::string> rows;
  for (const auto& n : kNameText) rows.push_back("? " + n);
  return {.title = title,
          .rows = kNames,
          .columns = kNames,
          .values = a.weights.to_vector(),
          .row_labels = rows,
          .column_labels = kNameText};
}

int run(int argc, char** argv) {
  cli::ArgParser args("lesson_09_qkv_from_scratch",
                      "Lesson 9: queries, keys and values on a four-entry lookup, written by hand "
                      "and then learned.");
  const lessons::Lesson lesson = lessons::parse_lesson(args, "09_qkv_from_scratch", argc, argv);
  Generator gen(static_cast<uint64_t>(lesson.seed));
  const Variable queries(query_tokens()), entries(entry_tokens(kTable));
  const int64_t sun = 2;

  std::printf("entries: cat = 3, dog = 5, sun = 7, sea = 2; query: \"which value has sun?\"\n");
  std::printf(
      "q = W_Q x (what I look for), k = W_K x (what I offer), v = W_V x (what I pass on)\n");
  std::printf(
      "\nby hand, strength 8: q = [0 0 8 0] for \"? sun\"; k = my name (cat [1 0 0 0], "
      "dog [0 1 0 0], ...); v = my value\n");
  const Attended by_hand = attend(hand_written(8), queries, entries);
  print_query(by_hand, sun);

  std::printf("\nthe strength of W_Q sets how sharp the lookup is:\n");
  std::printf("strength  score(sun)  weight(sun)  output\n");
  std::vector<double> outputs;  // "? sun"'s output at each strength
  for (double strength : {1.0, 2.0, 8.0, 32.0}) {
    const Attended a = attend(hand_written(strength), queries, entries);
    std::printf("%8.0f  %10.2f  %11.3f  %6.2f\n", strength, a.scores.at({sun, sun}),
                a.weights.at({sun, sun}), a.out.at({sun, 0}));
    outputs.push_back(a.out.at({sun, 0}));
  }
  lessons::claim("the output nears 7 as the strength grows, and is 7 within 0.01 at 32",
                 outputs[0] < outputs[1] && outputs[1] < outputs[2] && outputs[2] < outputs[3] &&
                     std::abs(outputs[3] - 7) < 0.01);

  // Learned: the same three matrices from random starts, fitted by Adam to
  // random tables with the mean squared error of the output.
  Weights learned{Variable(randn({kWidth, kDk}, gen, DType::Float32, 0, 0.5), true),
                  Variable(randn({kWidth, kDk}, gen, DType::Float32, 0, 0.5), true),
                  Variable(randn({kWidth, 1}, gen, DType::Float32, 0, 0.5), true)};
  nn::Adam optimizer({learned.w_q, learned.w_k, learned.w_v}, /*lr=*/0.05);
  std::printf("\nlearned: W_Q, W_K, W_V start random; Adam fits them to random tables\n");
  for (int step = 0; step <= 400; ++step) {
    Batch b = random_tables(64, gen);
    Variable q = matmul(b.queries, learned.w_q), k = matmul(b.entries, learned.w_k);
    Variable v = matmul(b.entries, learned.w_v);
    // composed_attention: the same three lines as attend() above, in the library.
    Variable out = composed_attention(q, k, v, 1 / std::sqrt(static_cast<double>(kDk)), Tensor());
    Variable loss = nn::mse_loss(out, b.target);
    if (step % 100 == 0) std::printf("step %3d  squared error %7.3f\n", step, loss.item());
    if (step == 400) break;
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
  }
  Attended after;
  {
    NoGradGuard no_grad;
    after = attend(learned, queries, entries);
  }
  std::printf("\nlearned scores q.k / sqrt(d_k), queries down, keys across:\n");
  std::printf("         cat    dog    sun    sea\n");
  for (int64_t i = 0; i < kNames; ++i) {
    std::printf("? %-4s", kNameText[static_cast<size_t>(i)].c_str());
    for (int64_t j = 0; j < kNames; ++j) std::printf(" %6.2f", after.scores.at({i, j}));
    std::printf("\n");
  }
  std::printf("\nlearned, the same query \"? sun\" on the same entries:\n");
  print_query(after, sun);
  bool diagonal = true;  // each question puts most of its weight on the key it asks for
  for (int64_t i = 0; i < kNames; ++i) diagonal = diagonal && after.weights.at({i, i}) > 0.9;
  lessons::claim(
      "learned, every question puts over 0.9 of its weight on the key it asks for, "
      "and \"? sun\" answers 7 within 0.1",
      diagonal && std::abs(after.out.at({sun, 0}) - 7) < 0.1);
  plot::HeatmapOptions options{
      .matrix_size = 180,
      .title = {
          "Each query finds the key it asks for",
          "attention weights; queries down, keys across; entries cat 3, dog 5, sun 7, sea 2"}};
  lessons::write_figure(
      lesson, "qkv_lookup.svg",
      plot::render_heatmap_grid({{.panels = {weight_map("by hand, strength 8", by_hand),
                                             weight_map("learned, 400 steps", after)}}},
                                options));
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return cli::run_cli(argc, argv, run); }
