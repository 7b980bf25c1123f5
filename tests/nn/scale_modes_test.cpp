// The scale-mode table's columns (scale_modes.h) and the logit factors that
// code above nn reads instead of a mode's name or its variant's type: each
// mode's start_factor against numbers worked out by hand, a built layer's
// logit_factor() against it for every row of the table (so a new row is
// covered without editing this file), logit_factor() following trained
// parameters, and logit_factor() against the logits a layer computes.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "nn/attention.h"
#include "nn/length_scale.h"
#include "nn/scale_variants.h"
#include "tests/nn/nn_check.h"

namespace gradflow::nn {
namespace {
using namespace gradflow::testing;

// A mode of each row: a row that takes a value gets 0.125.
ScaleMode mode_of(const ScaleModeEntry& entry) {
  return ScaleMode::parse(entry.takes_value ? entry.name + std::string(":0.125") : entry.name);
}

// d_k = 16, L = 12: log(12) = 2.484906649788..., log2(12^2 - 12) = log2(132).
TEST(ScaleModes, StartFactorsMatchTheHandNumbers) {
  const ScaleContext c{.d_k = 16, .heads = 2, .max_len = 12};
  const std::map<std::string, double> expected = {
      {"inv_sqrt_dk", 0.25},
      {"none", 1},
      {"inv_dk", 0.0625},
      {"inv_2sqrt_dk", 0.125},
      {"const:0.125", 0.125},
      {"learned", 0.25},
      {"learned_log", 0.25},
      {"qk_norm", 0.25},
      {"qk_l2norm", 7.044394119358453},   // log2(132)
      {"log_n", 2.4849066497880004 / 4},  // log(12) / sqrt(16)
      {"ssmax", 0.25},                    // s = 1/(4 log 12), times log 12
      {"softcap", 0.25},                  // c tanh(x / c) has slope 1 at 0
  };
  for (const auto& [name, value] : expected)
    EXPECT_NEAR(ScaleMode::parse(name).start_factor(c), value, 1e-15) << name;
  EXPECT_EQ(expected.size(), scale_modes().size());  // a new row: add its hand number here
  // learned is exactly 1 / sqrt(d), as the study's init part computes it.
  EXPECT_EQ(ScaleMode::parse("learned").start_factor({.d_k = 48}), 1 / std::sqrt(48.0));
  // L is floored at 2 for log_n (an unknown length is 0) ...
  EXPECT_DOUBLE_EQ(ScaleMode::parse("log_n").start_factor({.d_k = 4}), std::log(2.0) / 2);
  // ... and qk_l2norm and ssmax refuse it, as building their variants does.
  EXPECT_THROW(ScaleMode::parse("qk_l2norm").start_factor({.d_k = 4, .max_len = 1}), Error);
  EXPECT_THROW(ScaleMode::parse("ssmax").start_factor({.d_k = 4, .max_len = 0}), Error);
}

TEST(ScaleModes, ABuiltLayerStartsAtItsModesStartFactor) {
  for (const ScaleModeEntry& entry : scale_modes())
    for (int64_t d_k : {4, 16, 48})
      for (int64_t max_len : {2, 12, 512}) {
        const ScaleMode mode = mode_of(entry);
        MultiHeadAttention a(2 * d_k, {.heads = 2, .scale = mode, .max_len = max_len});
        const double start = mode.start_factor({.d_k = d_k, .heads = 2, .max_len = max_len});
        // The layer's parameters are float32: the start factor to float rounding.
        EXPECT_NEAR(a.logit_factor(), start, 2e-7 * start)
            << mode.name() << " d_k " << d_k << " L " << max_len;
      }
}

TEST(ScaleModes, LogitFactorFollowsTheLearnedParameters) {
  const AttentionConfig base{.heads = 2, .max_len = 12};
  auto layer = [&](const char* mode) {
    AttentionConfig c = base;
    c.scale = mode;
    return MultiHeadAttention(8, c);
  };
  MultiHeadAttention learned = layer("learned");
  Tensor(learned.variant<LearnedScale>()->scale.data()).fill_(0.75);
  EXPECT_EQ(learned.logit_factor(), 0.75);
  MultiHeadAttention learned_log = layer("learned_log");
  Tensor(learned_log.variant<LearnedLogScale>()->log_scale.data()).fill_(1);
  EXPECT_EQ(learned_log.logit_factor(), std::exp(1.0));
  MultiHeadAttention l2 = layer("qk_l2norm");
  Tensor(l2.variant<QkL2Norm>()->g.data()).fill_(3);
  EXPECT_EQ(l2.logit_factor(), 3.0);
  // ssmax: the mean over the heads, times log L.
  MultiHeadAttention ssmax = layer("ssmax");
  Tensor(ssmax.variant<ScalableSoftmax>()->s.data())
      .copy_(from_vector({0.5, 1.5}, {2}, DType::Float32));
  EXPECT_DOUBLE_EQ(ssmax.logit_factor(), std::log(12.0));
  // A fixed mode and qk_norm (whose LayerNorms do not scale) stay put.
  EXPECT_EQ(layer("qk_norm").logit_factor(), 1 / std::sqrt(4.0));
  EXPECT_EQ(layer("const:0.3").logit_factor(), 0.3);
}

// q and k of one head (heads = 1, so no split) from the layer's projections,
// (T, D) each, in double.
std::vector<double> rows_of(const Linear& proj, const Tensor& x) {
  return proj.forward(Variable(x)).data().to_vector();
}

// logit_factor() is the factor the logits carry: for every mode that does
// not normalise q and k, the probe's logits are logit_factor() q.k; for an
// L2-normalising mode, logit_factor() times the cosine. Each on several
// inputs, so one that happens to fit does not pass. T = max_len and no
// mask, so log_n's and ssmax's n is the L logit_factor() is reported at.
TEST(ScaleModes, LogitFactorIsTheFactorOnTheLogits) {
  const int64_t t = 5, d = 4;
  for (int trial = 0; trial < 4; ++trial)
    for (const ScaleModeEntry& entry : scale_modes()) {
      const Tensor x = dense({1, t, d});
      if (entry.qk_normalisation == QkNormalisation::LayerNorm) continue;
      const ScaleMode mode = mode_of(entry);
      Generator gen(3 + trial);
      MultiHeadAttention a(d, {.heads = 1, .scale = mode, .max_len = t}, {gen, DType::Float64});
      a.record_probe = true;
      a.forward(Variable(x), Variable(x));
      const std::vector<double> q = rows_of(*a.q_proj, x), k = rows_of(*a.k_proj, x);
      const std::vector<double> logits = a.probe.logits.data().to_vector();
      auto dot = [&](const std::vector<double>& u, int64_t i, const std::vector<double>& v,
                     int64_t j) {
        double s = 0;
        for (int64_t c = 0; c < d; ++c) s += u[i * d + c] * v[j * d + c];
        return s;
      };
      for (int64_t i = 0; i < t; ++i)
        for (int64_t j = 0; j < t; ++j) {
          double want = a.logit_factor() * dot(q, i, k, j);
          if (entry.qk_normalisation == QkNormalisation::L2)  // l2_normalize's 1e-12 included
            want /= std::sqrt(dot(q, i, q, i) + 1e-12) * std::sqrt(dot(k, j, k, j) + 1e-12);
          EXPECT_NEAR(logits[i * t + j], want, 1e-12 * (1 + std::abs(want)))
              << mode.name() << " " << i << "," << j;
        }
    }
}

// The variants of a layer, in the order its forward calls them.
std::vector<const AttentionVariant*> variants_of(const MultiHeadAttention& a) {
  std::vector<const AttentionVariant*> out;
  for (const auto& [name, m] : a.named_modules())
    if (const auto* v = dynamic_cast<const AttentionVariant*>(m)) out.push_back(v);
  return out;
}

// How a layer built with `mode` normalises q, found from what it does: a
// normalisation gives 5q the q it gives q (up to LayerNorm's eps), and
// LayerNorm, which centres, also gives q + 1 the same; L2 does not.
QkNormalisation normalisation_of(const ScaleMode& mode) {
  Generator gen(5);
  MultiHeadAttention a(8, {.heads = 2, .scale = mode, .max_len = 8}, {gen, DType::Float64});
  auto through = [&](const Tensor& q) {
    Variable out(q);
    for (const AttentionVariant* v : variants_of(a))
      out = v->transform_query(out, {.key_length = 3});
    return out.data();
  };
  // Rows of variance 7.5 (not a random draw, which may give a row of small
  // variance, where LayerNorm's eps is no longer negligible).
  std::vector<double> rows;
  for (int r = 0; r < 6; ++r)
    for (double v : {3.0, -1.0, 2.0, -4.0}) rows.push_back(v + 0.5 * r);
  const Tensor q = from_vector(rows, {1, 2, 3, 4}, DType::Float64);
  auto same = [&](const Tensor& other) {
    return max(abs(sub(through(q), through(other)))).item() < 1e-4;
  };
  if (!same(mul(q, 5.0))) return QkNormalisation::None;
  return same(add(q, 1.0)) ? QkNormalisation::LayerNorm : QkNormalisation::L2;
}

// Each column against what the layers built from its row do, so a new row
// is checked without a list here: the memory estimate reads the columns,
// the layer its variants.
TEST(ScaleModes, Columns) {
  for (const ScaleModeEntry& entry : scale_modes()) {
    SCOPED_TRACE(entry.name);
    EXPECT_EQ(entry.qk_normalisation, normalisation_of(mode_of(entry)));
    MultiHeadAttention a(8, {.heads = 2, .scale = mode_of(entry), .max_len = 8});
    bool transforms = false;
    for (const AttentionVariant* v : variants_of(a))
      transforms = transforms || v->transforms_scores();
    EXPECT_EQ(entry.transforms_scores, transforms);
    if (!entry.takes_value) continue;
    // The value reaches the layer: two values, the same weights, other outputs.
    const Tensor x = mul(dense({1, 4, 8}), 3.0);
    auto output = [&](const char* value) {
      Generator gen(6);
      MultiHeadAttention layer(8, {.heads = 2, .scale = entry.name + std::string(value)},
                               {gen, DType::Float64});
      return layer.forward(Variable(x), Variable(x)).data();
    };
    EXPECT_GT(max(abs(sub(output(":0.5"), output(":2")))).item(), 1e-3);
  }
}

// A bare name is its default if the row has one (written back with the
// value, softcap:30), refused if not; the help text says which.
TEST(ScaleModes, OnlyAModeThatTakesAValueIsWrittenWithOne) {
  for (const ScaleModeEntry& entry : scale_modes()) {
    const std::string name = entry.name;
    if (entry.takes_value) {
      const bool has_default = entry.default_value > 0;
      EXPECT_NE(scale_mode_names().find(name + (has_default ? "[:<value>]" : ":<value>")),
                std::string::npos)
          << scale_mode_names();
      if (has_default) {
        const ScaleMode bare = ScaleMode::parse(name);
        EXPECT_EQ(bare.constant(), entry.default_value) << name;
        EXPECT_EQ(ScaleMode::parse(bare.name()), bare) << name;
        EXPECT_NE(bare.name(), name);  // the value is written out
      } else {
        EXPECT_THROW(ScaleMode::parse(name), Error) << name;
      }
      EXPECT_EQ(ScaleMode::parse(name + ":0.5").constant(), 0.5);
      EXPECT_EQ(ScaleMode::parse(name + ":0.5").name(), name + ":0.5");
    } else {
      EXPECT_THROW(ScaleMode::parse(name + ":0.5"), Error) << name;
      EXPECT_EQ(ScaleMode::parse(name).name(), name);
    }
  }
}

}  // namespace
}  // namespace gradflow::nn
