// positional = "none" (nn/positional_schemes.h): a model that adds no
// positions. Without a causal mask it is then permutation-equivariant:
// permuting the input tokens permutes the outputs the same way, so it cannot
// tell one order from another. A causal mask alone already breaks that.
#include <gtest/gtest.h>

#include "nn/models.h"
#include "nn/positional_schemes.h"
#include "tests/nn/nn_check.h"

namespace gradflow::nn {
namespace {
using namespace gradflow::testing;

ModelConfig tiny(const std::string& positional) {
  ModelConfig c;
  c.vocab = 9, c.d_model = 8, c.heads = 2, c.layers = 2, c.d_ff = 16, c.max_len = 6;
  c.positional = positional;
  return c;
}

// ids (1, 5) and the same tokens in the order `order`: row t of the second is
// row order[t] of the first.
const std::vector<int64_t> kIds = {3, 7, 1, 4, 6}, kOrder = {4, 2, 0, 3, 1};

Tensor permuted_ids() {
  std::vector<int64_t> p;
  for (int64_t i : kOrder) p.push_back(kIds[static_cast<size_t>(i)]);
  return from_vector(p, {1, 5});
}

// The largest |out(permuted)[t] - out(ids)[order[t]]| over positions t.
template <class Model>
double permutation_gap(const Model& m) {
  NoGradGuard no_grad;
  Tensor a = m.forward(from_vector(kIds, {1, 5})).data(), b = m.forward(permuted_ids()).data();
  double gap = 0;
  for (size_t t = 0; t < kOrder.size(); ++t) {
    std::vector<double> x = a.select(1, kOrder[t]).to_vector();
    std::vector<double> y = b.select(1, static_cast<int64_t>(t)).to_vector();
    for (size_t i = 0; i < x.size(); ++i) gap = std::max(gap, std::abs(x[i] - y[i]));
  }
  return gap;
}

TEST(PositionalNone, IsARowOfTheTableThatAddsNothing) {
  const PositionalScheme& none = positional_scheme("none");
  EXPECT_EQ(none.table, PositionalScheme::Table::None);
  EXPECT_EQ(none.variant, nullptr);
  EXPECT_FALSE(none.transforms_scores);
  tiny("none").validate();

  Generator gen(1);
  DecoderLM m(tiny("none"), gen);
  EXPECT_EQ(m.embed->position, nullptr);
  EXPECT_EQ(m.embed->sinusoid, nullptr);
  EXPECT_EQ(m.num_parameters(), DecoderLM(tiny("learned"), gen).num_parameters() - 6 * 8);
  for (const auto& layer : m.decoder->layers)
    EXPECT_EQ(layer->self_attn->variant<AttentionVariant>(), nullptr);
  // The embeddings are the token table's rows, exactly.
  Tensor ids = from_vector(kIds, {1, 5});
  EXPECT_EQ(m.embed->forward(ids).data().to_vector(),
            m.embed->token->forward(ids).data().to_vector());
}

TEST(PositionalNone, AnEncoderIsPermutationEquivariant) {
  Generator gen(3);
  // classes 0: one logit vector per token, from self-attention with no mask.
  EncoderClassifier none(0, tiny("none"), {gen, DType::Float64});
  EXPECT_LT(permutation_gap(none), 1e-12);
  // The same model with a learned table sees the order.
  EncoderClassifier learned(0, tiny("learned"), {gen, DType::Float64});
  EXPECT_GT(permutation_gap(learned), 1e-3);
}

TEST(PositionalNone, ACausalMaskAloneBreaksTheSymmetry) {
  // Query t sees t + 1 keys, so even without a table a decoder's outputs
  // depend on where a token stands.
  Generator gen(4);
  DecoderLM none(tiny("none"), {gen, DType::Float64});
  EXPECT_GT(permutation_gap(none), 1e-3);
}

}  // namespace
}  // namespace gradflow::nn
