// MultiHeadAttention: parameter names per scale mode, shape errors, values
// against hand projections plus the composed reference attention
// (fused_attention_reference), gradient checks of a
// tiny float64 layer, the probe, and KV-cache equivalence.
#include <gtest/gtest.h>

#include <cmath>

#include "nn/attention.h"
#include "nn/length_scale.h"
#include "nn/qk_norm.h"
#include "nn/scale_variants.h"
#include "tests/nn/nn_check.h"

namespace gradflow::nn {
namespace {
using namespace gradflow::testing;

std::vector<std::string> names_of(const Module& m) {
  std::vector<std::string> out;
  for (const auto& [name, p] : m.named_parameters()) out.push_back(name);
  return out;
}

// (B, T, C) rows times lin's W^T plus b, in double, returned as (B, H, T, D)
// (a permuted view of (B, T, H, D)).
Tensor project_heads(const Tensor& x, const Linear& lin, int64_t heads) {
  const int64_t b = x.shape()[0], t = x.shape()[1], c = x.shape()[2];
  std::vector<double> xv = x.to_vector(), w = lin.weight.data().to_vector();
  std::vector<double> bias = lin.bias.data().to_vector(), y(b * t * c);
  for (int64_t r = 0; r < b * t; ++r)
    for (int64_t o = 0; o < c; ++o) {
      double acc = bias[o];
      for (int64_t i = 0; i < c; ++i) acc += xv[r * c + i] * w[o * c + i];
      y[r * c + o] = acc;
    }
  return from_vector(y, {b, t, heads, c / heads}, DType::Float64).permute({0, 2, 1, 3});
}

// Layer norm over D of a (B, H, N, D) tensor, in double.
Tensor norm_heads(const Tensor& x, const LayerNorm& ln) {
  const int64_t d = x.shape()[3];
  std::vector<double> v = x.to_vector(), w = ln.weight.data().to_vector();
  std::vector<double> b = ln.bias.data().to_vector();
  for (size_t r = 0; r < v.size(); r += d) {
    double mu = 0, var = 0;
    for (int64_t i = 0; i < d; ++i) mu += v[r + i] / d;
    for (int64_t i = 0; i < d; ++i) var += (v[r + i] - mu) * (v[r + i] - mu) / d;
    for (int64_t i = 0; i < d; ++i)
      v[r + i] = (v[r + i] - mu) / std::sqrt(var + 1e-5) * w[i] + b[i];
  }
  return from_vector(v, x.shape(), DType::Float64);
}

// Rows of a (B, H, N, D) tensor divided by their L2 norms, in double.
Tensor unit_rows(const Tensor& x) {
  const int64_t d = x.shape()[3];
  std::vector<double> v = x.to_vector();
  for (size_t r = 0; r < v.size(); r += d) {
    double n = 0;
    for (int64_t i = 0; i < d; ++i) n += v[r + i] * v[r + i];
    for (int64_t i = 0; i < d; ++i) v[r + i] /= std::sqrt(n);
  }
  return from_vector(v, x.shape(), DType::Float64);
}

// Row (b, h, t, :) of q times factor(b, t, n), n the keys query t of
// sequence b sees: S less the keys the mask hides from it (at least 1),
// counted here from the mask's values at (b, t, j), independently of the
// library's count.
template <class Factor>
Tensor scale_rows_by_keys(const Tensor& q, const Tensor& mask, int64_t s, Factor factor) {
  const int64_t b = q.shape()[0], h = q.shape()[1], t = q.shape()[2], d = q.shape()[3];
  std::vector<double> v = q.contiguous().to_vector();
  for (int64_t i = 0; i < b; ++i)
    for (int64_t r = 0; r < t; ++r) {
      int64_t n = s;
      if (mask.defined())
        for (int64_t j = 0; j < s; ++j)
          if (mask.expand({b, 1, t, s}).at({i, 0, r, j}) != 0) --n;
      for (int64_t head = 0; head < h; ++head)
        for (int64_t c = 0; c < d; ++c)
          v[((i * h + head) * t + r) * d + c] *=
              factor(head, static_cast<double>(std::max<int64_t>(n, 1)));
    }
  return from_vector(v, q.shape(), DType::Float64);
}

// The whole layer by hand: project, split heads, attend, merge, project out.
std::vector<double> mha_by_hand(const MultiHeadAttention& mha, const Tensor& x, const Tensor& mem,
                                const Tensor& mask) {
  const int64_t h = mha.heads(), b = x.shape()[0], t = x.shape()[1], c = x.shape()[2];
  Tensor q = project_heads(x, *mha.q_proj, h), k = project_heads(mem, *mha.k_proj, h);
  Tensor v = project_heads(mem, *mha.v_proj, h);
  if (const QkNorm* norms = mha.variant<QkNorm>()) {
    q = norm_heads(q, *norms->q_norm);
    k = norm_heads(k, *norms->k_norm);
  }
  if (const QkL2Norm* l2 = mha.variant<QkL2Norm>()) {  // g q / |q|, k / |k|, per head
    q = mul(unit_rows(q), l2->g.data().item());
    k = unit_rows(k);
  }
  if (const LearnedLogScale* t = mha.variant<LearnedLogScale>())
    q = mul(q, std::exp(t->log_scale.data().item()));
  if (const LearnedScale* l = mha.variant<LearnedScale>()) q = mul(q, l->scale.data().item());
  const int64_t s = mem.shape()[1];
  const double d_k = static_cast<double>(mha.d_k());
  if (mha.variant<LogNScale>())  // log(n) / sqrt(d_k)
    q = scale_rows_by_keys(q, mask, s,
                           [&](int64_t, double n) { return std::log(n) / std::sqrt(d_k); });
  if (const ScalableSoftmax* ss = mha.variant<ScalableSoftmax>()) {  // s_h log(n)
    const std::vector<double> per_head = ss->s.data().to_vector();
    q = scale_rows_by_keys(q, mask, s,
                           [&](int64_t h, double n) { return per_head[h] * std::log(n); });
  }
  const double scale = mha.scale_mode().value(mha.d_k());
  std::vector<double> heads =  // (B, H, T, D)
      fused_attention_reference(Variable(q), Variable(k), Variable(v), scale, mask)
          .data()
          .to_vector();
  Tensor merged = from_vector(heads, {b, h, t, mha.d_k()}, DType::Float64)
                      .permute({0, 2, 1, 3})
                      .reshape({b, t, c});
  return project_heads(merged, *mha.o_proj, 1).permute({0, 2, 1, 3}).reshape({b, t, c}).to_vector();
}

const char* const kProj[] = {"q_proj", "k_proj", "v_proj", "o_proj"};

TEST(MultiHeadAttention, ParameterNamesPerScaleMode) {
  Generator gen(1);
  std::vector<std::string> base;
  for (const char* p : kProj) {
    base.push_back(std::string(p) + ".weight");
    base.push_back(std::string(p) + ".bias");
  }
  MultiHeadAttention plain(8, {.heads = 2, .scale = ScaleMode::parse("inv_sqrt_dk")}, gen);
  EXPECT_EQ(names_of(plain), base);
  EXPECT_EQ(plain.num_parameters(), 4 * (8 * 8 + 8));
  EXPECT_EQ(plain.variant<QkNorm>(), nullptr);

  // A mode with a variant: its parameters under the mode's name, after the
  // projections.
  const std::vector<std::pair<const char*, std::vector<std::string>>> own = {
      {"qk_norm",
       {"qk_norm.q_norm.weight", "qk_norm.q_norm.bias", "qk_norm.k_norm.weight",
        "qk_norm.k_norm.bias"}},
      {"learned", {"learned.scale"}},
      {"learned_log", {"learned_log.log_scale"}},
      {"qk_l2norm", {"qk_l2norm.g"}},
      {"log_n", {}},
      {"ssmax", {"ssmax.s"}}};
  for (const auto& [mode, names] : own) {
    MultiHeadAttention m(8, {.heads = 2, .scale = ScaleMode::parse(mode), .max_len = 8}, gen);
    std::vector<std::string> expected = base;
    expected.insert(expected.end(), names.begin(), names.end());
    EXPECT_EQ(names_of(m), expected) << mode;
    EXPECT_EQ(m.num_parameters() - plain.num_parameters(), ScaleMode::parse(mode).parameters(2, 4))
        << mode;
  }
  MultiHeadAttention normed(8, {.heads = 2, .scale = ScaleMode::parse("qk_norm")}, gen);
  EXPECT_EQ(normed.variant<QkNorm>()->q_norm->weight.shape(), (Shape{4}));  // over D, per head
  MultiHeadAttention learned(8, {.heads = 2, .scale = ScaleMode::parse("learned")}, gen);
  EXPECT_DOUBLE_EQ(learned.variant<LearnedScale>()->scale.data().item(), 0.5);  // 1/sqrt(4)
  // ssmax: one s per head, started at 1/(sqrt(d_k) log L) = 1/(2 log 8).
  MultiHeadAttention ss(8, {.heads = 2, .scale = ScaleMode::parse("ssmax"), .max_len = 8},
                        {gen, DType::Float64});
  EXPECT_EQ(ss.variant<ScalableSoftmax>()->s.shape(), (Shape{2}));
  for (double s0 : ss.variant<ScalableSoftmax>()->s.data().to_vector())
    EXPECT_DOUBLE_EQ(s0, 1 / (2 * std::log(8.0)));
  EXPECT_THROW(MultiHeadAttention(8, {.heads = 2, .scale = ScaleMode::parse("ssmax")}, gen), Error);

  for (const char* fixed : {"none", "inv_dk", "inv_2sqrt_dk", "const:0.3"})
    EXPECT_EQ(names_of(MultiHeadAttention(8, {.heads = 4, .scale = ScaleMode::parse(fixed)}, gen)),
              base)
        << fixed;
  EXPECT_EQ(learned.describe(), "MultiHeadAttention(d_model=8, heads=2, d_k=4, scale=learned)");
}

TEST(MultiHeadAttention, RejectsBadShapes) {
  Generator gen(2);
  EXPECT_THROW(MultiHeadAttention(10, {.heads = 3}, gen), Error);
  EXPECT_THROW(MultiHeadAttention(8, {.heads = 0}, gen), Error);
  EXPECT_THROW(MultiHeadAttention(0, {.heads = 2}, gen), Error);
  MultiHeadAttention mha(8, {.heads = 2}, gen);
  Variable x(randn({2, 3, 8}, gen));
  EXPECT_EQ(mha.forward(x, x).shape(), (Shape{2, 3, 8}));
  EXPECT_THROW(mha.forward(Variable(randn({3, 8}, gen)), x), Error);
  EXPECT_THROW(mha.forward(x, Variable(randn({2, 3, 6}, gen))), Error);
  EXPECT_THROW(mha.forward(x, Variable(randn({1, 3, 8}, gen))), Error);
}

TEST(MultiHeadAttention, SelfAndCrossAttentionMatchTheHandComputation) {
  for (const char* mode : {"inv_sqrt_dk", "none", "const:0.3", "learned", "qk_norm", "qk_l2norm",
                           "learned_log", "log_n", "ssmax"}) {
    SCOPED_TRACE(mode);
    Generator gen(3);
    MultiHeadAttention mha(6, {.heads = 3, .scale = ScaleMode::parse(mode), .max_len = 5},
                           {gen, DType::Float64});
    if (LearnedScale* l = mha.variant<LearnedScale>()) l->scale.data().data<double>()[0] = 0.37;
    if (ScalableSoftmax* ss = mha.variant<ScalableSoftmax>()) {  // each head its own
      Tensor live = ss->s.data();
      live.copy_(from_vector({0.3, -0.2, 0.9}, {3}, DType::Float64));
    }
    // The learned scalars away from their starts.
    if (QkL2Norm* l2 = mha.variant<QkL2Norm>()) l2->g.data().data<double>()[0] = 2.7;
    if (LearnedLogScale* t = mha.variant<LearnedLogScale>())
      t->log_scale.data().data<double>()[0] = -0.4;
    if (const QkNorm* norms = mha.variant<QkNorm>()) {  // away from the initial 1 and 0
      for (const Module* norm :
           {static_cast<Module*>(norms->q_norm.get()), static_cast<Module*>(norms->k_norm.get())})
        for (auto& [name, p] : norm->named_parameters()) {
          Tensor live = p.data();
          live.copy_(dense(p.shape()));
        }
    }
    // Self-attention, causal.
    Tensor x = dense({2, 4, 6});
    Tensor causal = causal_mask(4, 4, DType::Float64);
    expect_near_vec(mha.forward(Variable(x), Variable(x), causal).data(),
                    mha_by_hand(mha, x, x, causal), 1e-10);
    // Cross-attention, S = 5 != T = 4, with key padding (B, 1, 1, S).
    Tensor mem = dense({2, 5, 6});
    Tensor pad = from_vector({0, 0, 0, 0, 1, 0, 0, 1, 1, 1}, {2, 1, 1, 5}, DType::Float64);
    Variable y = mha.forward(Variable(x), Variable(mem), pad);
    ASSERT_EQ(y.shape(), (Shape{2, 4, 6}));
    expect_near_vec(y.data(), mha_by_hand(mha, x, mem, pad), 1e-10);
  }
}

// Each head attends with its own channels (split_heads): with identity
// projections, head 0 is channels 0 and 1 of each position, head 1 channels
// 2 and 3, and each weighs its two keys by softmax(q.k / sqrt(2)), the
// sigmoid of the logits' difference. Numbers by hand, no mask; a split that
// gives a head another position's or another head's channels moves them.
TEST(MultiHeadAttention, EachHeadAttendsWithItsOwnChannels) {
  Generator gen(8);
  MultiHeadAttention mha(4, {.heads = 2}, {gen, DType::Float64});
  for (const auto& proj : {mha.q_proj, mha.k_proj, mha.v_proj, mha.o_proj}) {
    Tensor w = proj->weight.data(), b = proj->bias.data();
    w.copy_(from_vector({1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}, {4, 4}, DType::Float64));
    b.copy_(zeros({4}, DType::Float64));
  }
  // Head 0: positions (1, 0) and (0, 1); head 1: (2, 1) and (-1, 0).
  Tensor x = from_vector({1, 0, 2, 1, 0, 1, -1, 0}, {1, 2, 4}, DType::Float64);
  const auto sigmoid = [](double z) { return 1 / (1 + std::exp(-z)); };
  const double r = std::sqrt(2.0);
  const double a = sigmoid(1 / r);   // head 0, query 0: logits (1, 0) / sqrt(2), key 0's weight
  const double c = sigmoid(7 / r);   // head 1, query 0: logits (5, -2) / sqrt(2)
  const double e = sigmoid(-3 / r);  // head 1, query 1: logits (-2, 1) / sqrt(2)
  // Query 1 of head 0 (logits (0, 1) / sqrt(2)) gives key 0 the weight 1 - a.
  SCOPED_TRACE(
      "identity projections: head 0 must attend with channels 0-1 of each position, "
      "head 1 with channels 2-3; outputs out of place mean a head got another head's "
      "or another position's channels");
  expect_near_vec(mha.forward(Variable(x), Variable(x)).data(),
                  {a, 1 - a, 3 * c - 1, c, 1 - a, a, 3 * e - 1, e}, 1e-12);
}

TEST(MultiHeadAttention, GradcheckTinyLayerInputAndParameters) {
  for (const char* mode :
       {"inv_sqrt_dk", "learned", "qk_norm", "qk_l2norm", "learned_log", "log_n", "ssmax"}) {
    SCOPED_TRACE(mode);
    Generator gen(4);
    MultiHeadAttention mha(4, {.heads = 2, .scale = ScaleMode::parse(mode), .max_len = 4},
                           {gen, DType::Float64});
    Tensor causal = causal_mask(3, 3, DType::Float64);
    EXPECT_GRADCHECK([&](const Vars& v) { return mha.forward(v[0], v[0], causal); },
                     {dense({2, 3, 4})});
    EXPECT_GRADCHECK([&](const Vars& v) { return mha.forward(v[0], v[1]); },
                     {dense({1, 2, 4}), dense({1, 3, 4})});
    Variable x(dense({2, 3, 4})), mem(dense({2, 2, 4}));
    expect_parameter_grads(mha, [&] { return mha.forward(x, x, causal); });
    expect_parameter_grads(mha, [&] { return mha.forward(x, mem); });
  }
}

TEST(MultiHeadAttention, ProbeRecordsWeightsWithoutChangingTheOutput) {
  Generator gen(5);
  MultiHeadAttention mha(8, {.heads = 2}, {gen, DType::Float64});
  Tensor x = dense({2, 3, 8}), mem = dense({2, 5, 8});
  Tensor plain = mha.forward(Variable(x), Variable(mem)).data();
  EXPECT_FALSE(mha.probe.weights.defined());
  mha.record_probe = true;
  Tensor probed = mha.forward(Variable(x), Variable(mem)).data();
  // Equal to rounding: without the probe the fused kernel computes the weights.
  expect_close(plain, probed, 1e-14);
  ASSERT_EQ(mha.probe.logits.shape(), (Shape{2, 2, 3, 5}));
  ASSERT_EQ(mha.probe.weights.shape(), (Shape{2, 2, 3, 5}));
  expect_near_vec(sum(mha.probe.weights.data(), {-1}), std::vector<double>(12, 1.0), 1e-12);
}

// Feeds x to a self-attention layer in chunks of the given sizes with a KV
// cache, and checks each chunk's output against full causal attention.
void expect_cache_matches_full(MultiHeadAttention& mha, const Tensor& x,
                               const std::vector<int64_t>& chunks) {
  NoGradGuard no_grad;
  const int64_t t = x.shape()[1];
  Tensor full = mha.forward(Variable(x), Variable(x), causal_mask(t, t, x.dtype())).data();
  KVCache cache;
  int64_t start = 0;
  for (int64_t n : chunks) {
    Variable part(x.narrow(1, start, n));
    Tensor mask = n > 1 ? causal_mask(n, start + n, x.dtype(), start) : Tensor();
    Tensor got = mha.forward(part, part, mask, &cache).data();
    EXPECT_EQ(cache.length(), start + n);
    expect_close(got, full.narrow(1, start, n), 1e-10, "positions from " + std::to_string(start));
    start += n;
  }
  ASSERT_EQ(start, t);
}

TEST(MultiHeadAttention, KVCacheEqualsFullCausalAttention) {
  for (const char* mode :
       {"inv_sqrt_dk", "learned", "qk_norm", "qk_l2norm", "learned_log", "log_n", "ssmax"}) {
    SCOPED_TRACE(mode);
    Generator gen(6);
    MultiHeadAttention mha(8, {.heads = 2, .scale = ScaleMode::parse(mode), .max_len = 6},
                           {gen, DType::Float64});
    Tensor x = dense({2, 6, 8});
    expect_cache_matches_full(mha, x, {1, 1, 1, 1, 1, 1});
    expect_cache_matches_full(mha, x, {3, 1, 2});
  }
}

TEST(MultiHeadAttention, FixedCacheForCrossAttentionReusesTheMemory) {
  // log_n and ssmax count the memory's keys, cached or not.
  for (const char* mode : {"inv_sqrt_dk", "log_n", "ssmax"}) {
    SCOPED_TRACE(mode);
    Generator gen(7);
    MultiHeadAttention mha(8, {.heads = 2, .scale = ScaleMode::parse(mode), .max_len = 6},
                           {gen, DType::Float64});
    Tensor x = dense({2, 4, 8}), mem = dense({2, 5, 8});
    NoGradGuard no_grad;
    Tensor full = mha.forward(Variable(x), Variable(mem)).data();
    KVCache cache;
    cache.fixed = true;
    for (int64_t t = 0; t < 4; ++t) {
      // After the first step the memory passed in is not read again.
      Variable memory = t == 0 ? Variable(mem) : Variable(zeros({2, 5, 8}, DType::Float64));
      Tensor got = mha.forward(Variable(x.narrow(1, t, 1)), memory, Tensor(), &cache).data();
      EXPECT_EQ(cache.length(), 5);
      expect_close(got, full.narrow(1, t, 1), 1e-10, "step " + std::to_string(t));
    }
  }
}

}  // namespace
}  // namespace gradflow::nn
