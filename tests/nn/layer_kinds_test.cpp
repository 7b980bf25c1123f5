// The tables of norms (norm_kinds.h) and feed-forwards (ffn_kinds.h): each
// entry builds its layer with the parameters its count says; SwiGLU and the
// MLP against hand loops, with gradient checks in float64; and the models
// built with RMSNorm and SwiGLU have their names, are differentiable and
// learn.
#include <gtest/gtest.h>

#include <cmath>

#include "nn/data/toy_tasks.h"
#include "nn/ffn_kinds.h"
#include "nn/loss.h"
#include "nn/models.h"
#include "nn/norm_kinds.h"
#include "nn/optim/optim.h"
#include "tests/nn/nn_check.h"

namespace gradflow::nn {
namespace {
using namespace gradflow::testing;

double silu_by_hand(double v) { return v / (1 + std::exp(-v)); }

// Rows of x (N, C) through the weights of `ff` in double, by loops:
// fc2(silu(fc1(x)) * fc3(x)).
std::vector<double> swiglu_by_hand(const SwiGLU& ff, const Tensor& x) {
  auto linear = [](const Linear& l, const std::vector<double>& in) {
    const int64_t out = l.weight.shape()[0], n = l.weight.shape()[1];
    std::vector<double> w = l.weight.data().to_vector(), b = l.bias.data().to_vector(), y(out);
    for (int64_t o = 0; o < out; ++o) {
      y[o] = b[o];
      for (int64_t i = 0; i < n; ++i) y[o] += w[o * n + i] * in[i];
    }
    return y;
  };
  const int64_t c = x.shape().back(), rows = x.numel() / c;
  std::vector<double> xv = x.to_vector(), out;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<double> row(xv.begin() + r * c, xv.begin() + (r + 1) * c);
    std::vector<double> a = linear(*ff.fc1, row), b = linear(*ff.fc3, row);
    for (size_t j = 0; j < a.size(); ++j) a[j] = silu_by_hand(a[j]) * b[j];
    for (double y : linear(*ff.fc2, a)) out.push_back(y);
  }
  return out;
}

TEST(NormKinds, EveryEntryBuildsItsNormWithTheParametersItCounts) {
  std::string listed;  // the names, as the error below lists them
  for (const NormKind& kind : norm_kinds())
    listed += (listed.empty() ? "" : ", ") + std::string(kind.name);
  EXPECT_EQ(norm_kind_names().size(), norm_kinds().size());
  EXPECT_EQ(norm_kind_names().front(), "layernorm");  // the default, ModelConfig's
  for (const NormKind& kind : norm_kinds()) {
    SCOPED_TRACE(kind.name);
    std::shared_ptr<Norm> norm = kind.make(6, DType::Float64);
    EXPECT_EQ(norm->num_parameters(), kind.parameters(6));
    Tensor x = dense({2, 3, 6});
    EXPECT_EQ(norm->forward(Variable(x)).shape(), x.shape());
    expect_parameter_grads(*norm, [&] { return norm->forward(Variable(x)); });
  }
  EXPECT_NE(dynamic_cast<LayerNorm*>(norm_kind("layernorm").make(4, {}).get()), nullptr);
  EXPECT_NE(dynamic_cast<RMSNorm*>(norm_kind("rmsnorm").make(4, {}).get()), nullptr);
  try {
    norm_kind("batchnorm");
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "norm type: unknown 'batchnorm' (expected one of " + listed + ")");
  }
}

// RMSNorm on numbers by hand: [3, -4] has mean square 12.5, so it is divided
// by sqrt(12.5 + 1e-6); a centring (LayerNorm's) would give +-1 times the gains.
TEST(NormKinds, RmsNormByHand) {
  std::shared_ptr<Norm> norm = norm_kind("rmsnorm").make(2, DType::Float64);
  auto* rms = dynamic_cast<RMSNorm*>(norm.get());
  ASSERT_NE(rms, nullptr);
  Tensor weight = rms->weight.data();  // shares the parameter's storage
  weight.copy_(from_vector({1, 2}, DType::Float64));
  const double r = std::sqrt(12.5 + 1e-6);
  expect_near_vec(norm->forward(Variable(from_vector({3, -4}, {1, 2}, DType::Float64))).data(),
                  {3 / r, -8 / r}, 1e-15);
  EXPECT_EQ(norm->describe(), "RMSNorm(2)");
}

TEST(FfnKinds, EveryEntryBuildsItsFeedForwardWithTheParametersItCounts) {
  EXPECT_EQ(ffn_kind_names(), (std::vector<std::string>{"mlp", "swiglu"}));
  for (const FfnKind& kind : ffn_kinds()) {
    SCOPED_TRACE(kind.name);
    Generator gen(3);
    std::shared_ptr<FeedForward> ff =
        kind.make({.d_model = 5, .d_ff = 7, .init = {gen, DType::Float64}});
    EXPECT_EQ(ff->num_parameters(), kind.parameters(5, 7));
    EXPECT_EQ(ff->fc1->weight.shape(), (Shape{7, 5}));
    EXPECT_EQ(ff->fc2->weight.shape(), (Shape{5, 7}));
    // Differentiable in its input (every layout) and its parameters.
    for (const Tensor& x : {dense({2, 3, 5}), transposed({2, 3, 5}), strided({2, 3, 5})})
      EXPECT_GRADCHECK([&](const Vars& v) { return ff->forward(v[0]); }, {x});
    Variable x(dense({4, 5}));
    expect_parameter_grads(*ff, [&] { return ff->forward(x); });
  }
  try {
    ffn_kind("geglu");
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "ffn: unknown 'geglu' (expected one of mlp, swiglu)");
  }
}

TEST(FfnKinds, SwigluAgainstAHandLoop) {
  Generator gen(4);
  std::shared_ptr<FeedForward> ff =
      ffn_kind("swiglu").make({.d_model = 3, .d_ff = 4, .init = {gen, DType::Float64}});
  auto* swiglu = dynamic_cast<SwiGLU*>(ff.get());
  ASSERT_NE(swiglu, nullptr);
  ASSERT_NE(swiglu->fc3, nullptr);
  // Inputs large enough that fc1's outputs take both signs well away from 0,
  // where silu is far from the identity and from relu.
  Tensor x = mul(dense({2, 5, 3}), 3.0);
  expect_near_vec(ff->forward(Variable(x)).data(), swiglu_by_hand(*swiglu, x), 1e-12);
  EXPECT_EQ(ff->describe(), "SwiGLU");
  std::vector<std::string> names;
  for (const auto& [name, p] : ff->named_parameters()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias",
                                             "fc3.weight", "fc3.bias"}));
}

TEST(FfnKinds, MlpIsTheFeedForwardOfBefore) {
  Generator gen(5);
  for (const char* act : {"gelu", "relu"}) {
    std::shared_ptr<FeedForward> ff = ffn_kind("mlp").make(
        {.d_model = 3, .d_ff = 4, .activation = act, .init = {gen, DType::Float64}});
    Tensor x = dense({2, 3});
    Variable h = ff->fc1->forward(Variable(x));
    Variable want = ff->fc2->forward(std::string(act) == "gelu" ? gelu(h) : relu(h));
    expect_near_vec(ff->forward(Variable(x)).data(), want.data().to_vector(), 1e-12);
    EXPECT_EQ(ff->describe(), std::string("Mlp(") + act + ")");
  }
  EXPECT_THROW(Mlp(3, 4, "tanh"), Error);
  EXPECT_NO_THROW(check_ffn_activation("swiglu", "gelu"));
  try {
    check_ffn_activation("swiglu", "relu");
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "ffn swiglu takes no activation (its own is fixed); activation relu is for ffn "
                 "mlp");
  }
}

ModelConfig rms_swiglu() {
  ModelConfig c;
  c.vocab = 9, c.d_model = 8, c.heads = 2, c.layers = 2, c.d_ff = 12, c.max_len = 8;
  c.norm_type = "rmsnorm", c.ffn = "swiglu";
  return c;
}

// Every norm of the model is an RMSNorm and every feed-forward a SwiGLU,
// under the names of before plus ff.fc3; no norm has a bias.
TEST(ModelKinds, RmsNormAndSwigluReachEveryBlockAndTheFinalNorm) {
  Generator gen(6);
  EncoderDecoder m(rms_swiglu(), gen);
  int64_t norms = 0, fc3 = 0;
  for (const auto& [name, p] : m.named_parameters()) {
    EXPECT_EQ(name.find("norm.bias"), std::string::npos) << name;
    norms += name.size() > 11 && name.compare(name.size() - 11, 11, "norm.weight") == 0;
    fc3 += name.find(".ff.fc3.weight") != std::string::npos;
  }
  EXPECT_EQ(norms, 2 * 2 + 3 * 2 + 1);  // encoder 2 a layer, decoder 3, the final one
  EXPECT_EQ(fc3, 2 + 2);
  EXPECT_NE(dynamic_cast<RMSNorm*>(m.final_norm.get()), nullptr);
  for (const auto& layer : m.decoder->layers) {
    EXPECT_NE(dynamic_cast<RMSNorm*>(layer->cross_attn_norm.get()), nullptr);
    EXPECT_NE(dynamic_cast<SwiGLU*>(layer->ff.get()), nullptr);
  }
  ModelConfig bad = rms_swiglu();
  bad.activation = "relu";
  EXPECT_THROW(DecoderLM(bad, gen), Error);
}

TEST(ModelKinds, RmsNormAndSwigluModelIsDifferentiable) {
  ModelConfig c = rms_swiglu();
  c.layers = 1;
  for (NormPlacement placement : {NormPlacement::Pre, NormPlacement::Post}) {
    c.norm = placement;
    Generator gen(7);
    EncoderDecoder m(c, {gen, DType::Float64});
    GradcheckResult r = gradcheck(
        [&](const std::vector<Variable>& in) {
          return m.decoder->forward(in[0], causal_mask(3, 3, DType::Float64), in[1], Tensor());
        },
        {randn({1, 3, 8}, gen, DType::Float64), randn({1, 4, 8}, gen, DType::Float64)});
    EXPECT_TRUE(r.ok) << r.message;
  }
}

// A DecoderLM with both learns to reverse: its loss falls to a fifth.
TEST(ModelKinds, RmsNormAndSwigluModelLearns) {
  const ToyTaskConfig task{.task = "reverse", .n_symbols = 6, .min_len = 1, .max_len = 4};
  ModelConfig c = rms_swiglu();
  c.vocab = vocab_size(task), c.d_model = 32, c.heads = 2, c.layers = 1, c.d_ff = 64;
  c.max_len = src_len(task) + tgt_len(task);
  Generator init(0), data(1);
  DecoderLM model(c, init);
  AdamW opt(model.parameters(), 1e-2);
  double first = 0, last = 0;
  for (int step = 0; step < 150; ++step) {
    Seq2SeqBatch b = make_batch(task, 32, data);
    Tensor ids = cat({b.src, b.tgt_in}, 1), targets = cat({b.src, b.tgt_out}, 1);
    targets.narrow(1, 0, b.src.shape()[1]).fill_(kPadToken);  // score the answer only
    Variable loss = cross_entropy(model.forward(ids), targets, kPadToken);
    opt.zero_grad();
    loss.backward();
    opt.step();
    (step == 0 ? first : last) = loss.item();
  }
  EXPECT_LT(last, 0.2 * first) << "loss went from " << first << " to " << last;
}

}  // namespace
}  // namespace gradflow::nn
