// The extension point, used as a contributor would: variants defined in this
// file only, not in the library, plugged into MultiHeadAttention. ALiBi
// (Press et al. 2022, a fixed per-head bias linear in the distance) against
// attention written out by hand, with a KV cache and gradient checks; a
// variant's parameters named and loaded; the fused kernel kept while only q
// and k change.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

#include "nn/attention.h"
#include "nn/qk_norm.h"
#include "nn/rope.h"
#include "tests/nn/nn_check.h"

namespace gradflow::nn {
namespace {
using namespace gradflow::testing;

// logits[b, h, i, j] -= m_h |position_i - position_j|, m_h = 2^(-8 (h + 1) / H).
class Alibi : public AttentionVariant {
 public:
  static double slope(int64_t head, int64_t heads) {
    return std::pow(2.0, -8.0 * static_cast<double>(head + 1) / static_cast<double>(heads));
  }
  // Shape: (H, T, S) for queries from query_start and keys from key_start.
  static Tensor bias(int64_t h, int64_t t, int64_t s, const AttentionPositions& at, DType dtype) {
    Tensor out = zeros({h, t, s}, dtype);
    for (int64_t k = 0; k < h; ++k)
      for (int64_t i = 0; i < t; ++i)
        for (int64_t j = 0; j < s; ++j)
          out.set({k, i, j}, -slope(k, h) * std::abs(static_cast<double>(at.query_start + i -
                                                                         at.key_start - j)));
    return out;
  }
  bool transforms_scores() const override { return true; }
  Variable transform_scores(const Variable& logits, const AttentionPositions& at) const override {
    return logits + Variable(bias(logits.shape()[1], logits.shape()[2], logits.shape()[3], at,
                                  logits.dtype()));
  }
  std::string describe() const override { return "Alibi"; }
};

// q of head h times gain[h]: a q-only variant with a parameter.
class HeadGain : public AttentionVariant {
 public:
  HeadGain(int64_t heads, Init init) {
    weight = register_parameter("weight", ones({heads, 1, 1}, init.dtype));
  }
  Variable transform_query(const Variable& q, const AttentionPositions&) const override {
    return q * weight;
  }
  std::string describe() const override { return "HeadGain"; }
  Variable weight;  // (H, 1, 1)
};

// MultiHeadAttention with ALiBi, written out with autograd ops: project,
// split heads, scale, add the bias, mask, softmax, merge, project out.
Tensor alibi_by_hand(const MultiHeadAttention& mha, const Tensor& x, const Tensor& mem,
                     const Tensor& mask) {
  const int64_t b = x.shape()[0], t = x.shape()[1], s = mem.shape()[1], h = mha.heads();
  const int64_t d = mha.d_k();
  auto heads = [&](const Linear& proj, const Tensor& in, int64_t n) {
    return transpose(reshape(proj.forward(Variable(in)), {b, n, h, d}), 1, 2);
  };
  Variable q = heads(*mha.q_proj, x, t), k = heads(*mha.k_proj, mem, s);
  Variable v = heads(*mha.v_proj, mem, s);
  Variable logits = matmul(q, transpose(k, -1, -2)) * (1 / std::sqrt(static_cast<double>(d)));
  logits = logits + Variable(Alibi::bias(h, t, s, {}, x.dtype()));
  if (mask.defined()) logits = masked_fill(logits, mask, -std::numeric_limits<double>::infinity());
  Variable y = matmul(softmax(logits, -1), v);
  return mha.o_proj->forward(reshape(transpose(y, 1, 2), {b, t, h * d})).data();
}

TEST(AttentionVariant, AlibiDefinedOutsideTheLibraryMatchesTheHandComputation) {
  Generator gen(1);
  MultiHeadAttention mha(8, {.heads = 4}, {gen, DType::Float64});
  mha.add_variant("alibi", std::make_shared<Alibi>());
  EXPECT_EQ(mha.num_parameters(), 4 * (8 * 8 + 8));
  Tensor x = dense({2, 5, 8}), mem = dense({2, 3, 8});
  Tensor causal = causal_mask(5, 5, DType::Float64);
  expect_close(mha.forward(Variable(x), Variable(x), causal).data(),
               alibi_by_hand(mha, x, x, causal), 1e-12, "self-attention");
  expect_close(mha.forward(Variable(x), Variable(mem)).data(), alibi_by_hand(mha, x, mem, Tensor()),
               1e-12, "cross-attention");
}

TEST(AttentionVariant, AlibiWithTheCacheSeesTrueDistances) {
  Generator gen(2);
  MultiHeadAttention mha(8, {.heads = 2}, {gen, DType::Float64});
  mha.add_variant("alibi", std::make_shared<Alibi>());
  NoGradGuard no_grad;
  Tensor x = dense({2, 6, 8});
  Tensor full = mha.forward(Variable(x), Variable(x), causal_mask(6, 6, DType::Float64)).data();
  KVCache cache;
  int64_t start = 0;
  for (int64_t n : {2, 1, 3}) {
    Variable part(x.narrow(1, start, n));
    Tensor got =
        mha.forward(part, part, causal_mask(n, start + n, DType::Float64, start), &cache).data();
    expect_close(got, full.narrow(1, start, n), 1e-12, "from " + std::to_string(start));
    start += n;
  }
}

TEST(AttentionVariant, GradientsThroughVariantsAndTheirParameters) {
  Generator gen(3);
  MultiHeadAttention mha(8, {.heads = 2}, {gen, DType::Float64});
  auto gain = mha.add_variant("gain", std::make_shared<HeadGain>(2, DType::Float64));
  mha.add_variant("alibi", std::make_shared<Alibi>());
  Tensor live = gain->weight.data();
  live.copy_(dense({2, 1, 1}));  // away from 1, so a wrong gradient shows
  Tensor causal = causal_mask(3, 3, DType::Float64);
  EXPECT_GRADCHECK([&](const Vars& v) { return mha.forward(v[0], v[0], causal); },
                   {dense({2, 3, 8})});
  Variable x(dense({2, 3, 8}));
  expect_parameter_grads(mha, [&] { return mha.forward(x, x, causal); });
}

TEST(AttentionVariant, ParametersAreNamedSavedAndLoaded) {
  Generator gen(4);
  MultiHeadAttention a(8, {.heads = 2}, gen), b(8, {.heads = 2}, gen);
  a.add_variant("gain", std::make_shared<HeadGain>(2, DType::Float32));
  b.add_variant("gain", std::make_shared<HeadGain>(2, DType::Float32));
  EXPECT_EQ(a.named_parameters().back().first, "gain.weight");
  Tensor live = a.variant<HeadGain>()->weight.data();
  live.copy_(full({2, 1, 1}, 3.0));
  b.load_state_dict(a.state_dict());
  EXPECT_EQ(b.variant<HeadGain>()->weight.data().to_vector(), (std::vector<double>{3, 3}));
  EXPECT_EQ(b.variant<Alibi>(), nullptr);
  EXPECT_NE(a.summary().find("gain: HeadGain"), std::string::npos) << a.summary();
}

// The names of the ops in out's graph.
std::set<std::string> ops_of(const Variable& out) {
  std::set<std::string> names;
  std::vector<std::shared_ptr<VariableImpl>> todo = {out.impl()};
  std::set<const VariableImpl*> seen;
  while (!todo.empty()) {
    std::shared_ptr<VariableImpl> v = todo.back();
    todo.pop_back();
    if (!v || !v->grad_fn || !seen.insert(v.get()).second) continue;
    names.insert(v->grad_fn->name);
    for (const auto& in : v->grad_fn->inputs) todo.push_back(in);
  }
  return names;
}

TEST(AttentionVariant, QAndKTransformsKeepTheFusedKernelAScoreTransformLeavesIt) {
  Generator gen(5);
  Variable x(randn({2, 4, 8}, gen));
  MultiHeadAttention plain(8, {.heads = 2}, gen);
  MultiHeadAttention normed(8, {.heads = 2, .scale = ScaleMode::parse("qk_norm")}, gen);
  MultiHeadAttention rotary(8, {.heads = 2, .positional = "rope"}, gen);
  MultiHeadAttention gained(8, {.heads = 2}, gen);
  gained.add_variant("gain", std::make_shared<HeadGain>(2, DType::Float32));
  for (MultiHeadAttention* mha : {&plain, &normed, &rotary, &gained}) {
    std::set<std::string> ops = ops_of(mha->forward(x, x));
    EXPECT_EQ(ops.count("fused_attention"), 1u) << mha->summary();
    EXPECT_EQ(ops.count("softmax"), 0u) << mha->summary();
  }
  gained.add_variant("alibi", std::make_shared<Alibi>());
  std::set<std::string> ops = ops_of(gained.forward(x, x));
  EXPECT_EQ(ops.count("fused_attention"), 0u);
  EXPECT_EQ(ops.count("softmax"), 1u);
}

}  // namespace
}  // namespace gradflow::nn
