// Generation past the model's max_len: each token is predicted from the last
// max_len tokens, with the KV cache or without, to the same tokens.
#include <gtest/gtest.h>

#include "autograd/variable.h"
#include "nn/generate.h"
#include "tensor/creation.h"
#include "tensor/index.h"

namespace gradflow::nn {
namespace {

DecoderLM small_model(const std::string& positional, Generator& init) {
  ModelConfig c;
  c.vocab = 9, c.d_model = 16, c.heads = 2, c.layers = 2, c.d_ff = 32, c.max_len = 6;
  c.positional = positional;
  return DecoderLM(c, init);
}

// The token greedy decoding picks after ids[0, begin, end): the argmax of the
// model's last logits for that window alone.
int64_t greedy_after(const DecoderLM& model, const Tensor& ids, int64_t begin, int64_t end) {
  NoGradGuard no_grad;
  const Tensor logits = model.forward(ids.narrow(1, begin, end - begin).contiguous()).data();
  const Tensor last = logits.select(1, end - begin - 1);
  int64_t best = 0;
  for (int64_t v = 1; v < last.shape()[1]; ++v)
    if (last.at({0, v}) > last.at({0, best})) best = v;
  return best;
}

TEST(GenerateWindow, PastMaxLenEachTokenFollowsFromTheLastMaxLenTokens) {
  for (const char* positional : {"learned", "rope"}) {
    SCOPED_TRACE(positional);
    Generator init(4), gen(0);
    const DecoderLM model = small_model(positional, init);
    const Tensor prompt = from_vector({1, 2, 3}, {1, 3}, DType::Int64);
    const Tensor ids = generate(model, prompt, {.new_tokens = 15, .temperature = 0}, gen);
    ASSERT_EQ(ids.shape(), (Shape{1, 18}));
    for (int64_t end = 3; end < 18; ++end) {
      const int64_t begin = std::max<int64_t>(0, end - 6);
      EXPECT_EQ(static_cast<int64_t>(ids.at({0, end})), greedy_after(model, ids, begin, end))
          << "token " << end;
    }
  }
}

TEST(GenerateWindow, SameTokensWithAndWithoutTheCachePastMaxLen) {
  Generator init(5);
  const DecoderLM model = small_model("learned", init);
  const Tensor prompt = randint(0, 9, {2, 4}, init);
  for (double temperature : {0.0, 0.9}) {
    Generator g1(11), g2(11);
    GenerateOptions with{.new_tokens = 20, .temperature = temperature, .use_cache = true};
    GenerateOptions without = with;
    without.use_cache = false;
    const Tensor a = generate(model, prompt, with, g1), b = generate(model, prompt, without, g2);
    EXPECT_EQ(a.shape(), (Shape{2, 24}));
    EXPECT_EQ(a.to_vector(), b.to_vector()) << "temperature " << temperature;
  }
}

TEST(GenerateWindow, APromptLongerThanMaxLenKeepsItsLastMaxLenTokens) {
  Generator init(6), g1(1), g2(1);
  const DecoderLM model = small_model("learned", init);
  const Tensor prompt = randint(0, 9, {1, 10}, init);
  const Tensor whole = generate(model, prompt, {.new_tokens = 3, .temperature = 0.7}, g1);
  const Tensor tail = generate(model, prompt.narrow(1, 4, 6).contiguous(),
                               {.new_tokens = 3, .temperature = 0.7}, g2);
  EXPECT_EQ(whole.narrow(1, 10, 3).contiguous().to_vector(),
            tail.narrow(1, 6, 3).contiguous().to_vector());
  EXPECT_THROW(generate(model, prompt, {.new_tokens = -1}, g1), Error);
}

}  // namespace
}  // namespace gradflow::nn
