// A user's first model, written as one would from the README: a small
// character-level decoder trained a few steps through the umbrella header
// alone (an installed package's <gradflow/gradflow.h>), with the names a
// user guesses: a scale mode by its name, token ids from and to
// std::vector<int64_t>. If this needs another include, the umbrella header
// is missing something.
#include <gtest/gtest.h>

#include <cmath>
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
