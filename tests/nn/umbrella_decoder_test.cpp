// A user's first model, written as one would from the README: a small
// character-level decoder trained a few steps through the umbrella header
// alone (an installed package's <gradflow/gradflow.h>), with the names a
// user guesses: a scale mode by its name, token ids from and to
// std::vector<int64_t>. If this needs another include, the umbrella header
// is missing something.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "gradflow.h"

namespace {

using namespace gradflow;

const char* kText =
    "the cat sat on the mat. the dog sat on the log. the cat saw the dog. "
    "the dog saw the cat on the mat. a cat and a dog sat on a log. ";

TEST(UmbrellaDecoder, TrainsAFewStepsAndSamplesText) {
  nn::CharDataset data(kText);
  nn::ModelConfig config{.vocab = data.vocab_size(),
                         .d_model = 32,
                         .heads = 2,
                         .layers = 1,
                         .d_ff = 64,
                         .max_len = 24};
  config.scale = "inv_sqrt_dk";  // by name, as --scale takes it
  Generator gen(0);
  nn::DecoderLM model(config, gen);
  nn::AdamW optimizer(model.parameters(), /*lr=*/1e-2);

  double first = 0, last = 0;
  for (int step = 0; step < 60; ++step) {
    auto [x, y] = data.batch(nn::Split::Train, /*B=*/8, /*T=*/16, gen);
    Variable loss = nn::cross_entropy(model.forward(x), y);
    optimizer.zero_grad();
    loss.backward();
    nn::clip_grad_norm(model.parameters(), 1.0);
    optimizer.step();
    (step == 0 ? first : last) = loss.item();
  }
  // It starts near log(vocab) and learns the text's few words: well below.
  EXPECT_NEAR(first, std::log(static_cast<double>(data.vocab_size())), 0.5);
  EXPECT_LT(last, 0.6 * first);

  // Token ids in and out as std::vector<int64_t>.
  const std::vector<int64_t> prompt_ids = data.encode("the ");
  const Tensor prompt = from_vector(prompt_ids, {1, 4});
  EXPECT_EQ(prompt.dtype(), DType::Int64);
  const Tensor out = nn::generate(model, prompt, {.new_tokens = 8, .temperature = 0}, gen);
  const std::string text = data.decode(out.to_int64_vector());
  ASSERT_EQ(text.size(), 12u);
  EXPECT_EQ(text.substr(0, 4), "the ");
}

// What runs the matrix products, as a program of one's own reports it (docs/building.md): from the
// umbrella header too.
TEST(UmbrellaDecoder, WhatRunsTheProductsIsInTheUmbrellaHeader) {
  EXPECT_EQ(blas_summary().rfind("openblas=", 0), 0u) << blas_summary();
  note_generic_blas_core();  // one line on stderr on a generic core, else nothing
}

// An encoder-decoder samples as a decoder-only model does, and decoding past its max_len says
// so (it threw from inside the positional table).
TEST(UmbrellaDecoder, AnEncoderDecoderSamplesAndSaysWhereItsPositionsEnd) {
  nn::ModelConfig config{
      .vocab = 7, .d_model = 16, .heads = 2, .layers = 1, .d_ff = 32, .max_len = 6};
  Generator init(1);
  const nn::EncoderDecoder model(config, init);
  const Tensor src = from_vector(std::vector<int64_t>{3, 4, 5, 4, 3, 5}, {2, 3});
  const Tensor greedy = model.greedy_decode(src, Tensor(), 1, 2, 6);
  Generator a(9), b(9);
  EXPECT_EQ(nn::generate(model, src, Tensor(), 1, 2, {.new_tokens = 6, .temperature = 0}, a)
                .to_int64_vector(),
            greedy.to_int64_vector());
  const Tensor drawn =
      nn::generate(model, src, Tensor(), 1, 2, {.new_tokens = 6, .temperature = 5}, a);
  EXPECT_EQ(drawn.shape()[0], 2);
  EXPECT_LE(drawn.shape()[1], 6);
  for (int64_t id : drawn.to_int64_vector()) EXPECT_TRUE(id >= 0 && id < 7) << id;
  nn::generate(model, src, Tensor(), 1, 2, {.new_tokens = 6, .temperature = 0}, b);
  EXPECT_EQ(nn::generate(model, src, Tensor(), 1, 2, {.new_tokens = 6, .temperature = 5}, b)
                .to_int64_vector(),
            drawn.to_int64_vector());  // the same draws from the same generator state
  for (const auto& decode : std::vector<std::function<void()>>{
           [&] { model.greedy_decode(src, Tensor(), 1, 2, 7); },
           [&] { nn::generate(model, src, Tensor(), 1, 2, {.new_tokens = 7}, a); }}) {
    try {
      decode();
      ADD_FAILURE() << "decoded past max_len";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()),
                "decoding 7 tokens: the model's positions end at its max_len 6; decode at most "
                "that many");
    }
  }
}

TEST(UmbrellaDecoder, ScaleModeByNameParsesAndRefusesUnknownNames) {
  nn::ModelConfig config;
  config.scale = "none";
  EXPECT_TRUE(config.scale.is("none"));
  config.scale = std::string("const:0.25");
  EXPECT_TRUE(config.scale.is("const"));
  EXPECT_EQ(config.scale.constant(), 0.25);
  config.scale = "inv_dk";
  EXPECT_EQ(config.scale.name(), "inv_dk");
  // An unknown name throws where it is written, and the old mode stays.
  EXPECT_THROW(config.scale = "sqrt", Error);
  EXPECT_THROW(config.scale = static_cast<const char*>(nullptr), Error);
  EXPECT_TRUE(config.scale.is("inv_dk"));
  const nn::MultiHeadAttention attention(8, {.heads = 2, .scale = "inv_dk"});
  EXPECT_EQ(attention.scale_mode().value(4), 0.25);
}

TEST(UmbrellaDecoder, IntegerTensorsFromAndToVectors) {
  // 2^53 + 1 is not a double: it survives only as an integer all the way.
  const int64_t big = (int64_t{1} << 53) + 1;
  const std::vector<int64_t> ids = {3, -1, 0, big, 7, 2};
  const Tensor t = from_vector(ids, {2, 3});
  EXPECT_EQ(t.dtype(), DType::Int64);
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(t.to_int64_vector(), ids);
  EXPECT_EQ(from_vector(ids).shape(), (Shape{6}));
  // Row-major, and a view reads as its elements: the transpose's first row.
  EXPECT_EQ(t.transpose(0, 1).to_int64_vector(), (std::vector<int64_t>{3, big, -1, 7, 0, 2}));
  // A braced list still means doubles (float32 by default).
  EXPECT_EQ(from_vector({1, 2, 3}, {1, 3}).dtype(), DType::Float32);
  EXPECT_THROW(from_vector({1.0, 2.0}).to_int64_vector(), Error);
  EXPECT_THROW(from_vector(ids, {4, 2}), Error);
}

}  // namespace
