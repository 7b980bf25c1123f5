// The reference path end to end: a small encoder-decoder and a small decoder
// trained three AdamW steps with every fused op (linear, gelu_linear,
// layer_norm, fused_attention, cross_entropy, the AdamW update) and again
// with reference_ops() on, from the same weights on the same batches, padding
// included. The loss at every step and every parameter's gradient at every
// step agree:
//
//   |loss - loss_ref| <= tol |loss_ref|
//   ||grad - grad_ref|| <= tol max(||grad_ref||, 1e-3 ||all grads_ref||), per parameter,
//
// with tol 1e-10 in float64 and 1e-5 in float32, || || the L2 norm (seen:
// 1e-14 and 2e-6). The floor, a thousandth of the whole model's gradient
// norm, is for k_proj.bias: softmax ignores a shift common to a query's
// scores, so that gradient is 0 but for rounding, on either path, and
// rounding cannot agree relative to itself.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "autograd/reference.h"
#include "nn/loss.h"
#include "nn/models.h"
#include "nn/optim/optim.h"
#include "tensor/ops.h"

namespace gradflow::nn {
namespace {

constexpr int64_t kPad = 0;  // token id, ignore_index and padding alike
constexpr int64_t kBatch = 3, kLen = 7, kSteps = 3;

ModelConfig small_config(const std::string& scale = "inv_sqrt_dk") {
  ModelConfig c;
  c.vocab = 11, c.d_model = 16, c.heads = 2, c.layers = 2, c.d_ff = 32, c.max_len = kLen;
  c.scale = ScaleMode::parse(scale);
  return c;
}

// Tokens in [1, V) with each row's tail padded: rows of kLen, kLen - 2 and 3
// real tokens. src_pad is 1 at padding; the targets are the inputs shifted
// one to the left, kPad (ignored) past the end.
struct Batch {
  Tensor src, src_pad, tgt_in, tgt_out;
};

Batch make_batch(Generator& gen) {
  const int64_t lengths[kBatch] = {kLen, kLen - 2, 3};
  Tensor src = randint(1, small_config().vocab, {kBatch, kLen}, gen);
  Tensor tgt = randint(1, small_config().vocab, {kBatch, kLen + 1}, gen);
  Tensor pad = zeros({kBatch, kLen}, DType::Float32);
  for (int64_t b = 0; b < kBatch; ++b)
    for (int64_t t = lengths[b]; t < kLen; ++t) {
      src.set({b, t}, kPad);
      pad.set({b, t}, 1);
    }
  for (int64_t b = 0; b < kBatch; ++b)
    for (int64_t t = lengths[b]; t <= kLen; ++t) tgt.set({b, t}, kPad);
  return {src, pad, tgt.narrow(1, 0, kLen).contiguous(), tgt.narrow(1, 1, kLen).contiguous()};
}

struct Trace {
  std::vector<double> losses;                           // per step
  std::vector<std::vector<std::string>> names;          // per step, per parameter
  std::vector<std::vector<std::vector<double>>> grads;  // per step, per parameter
};

// Three steps of zero_grad, forward, cross_entropy, backward, AdamW.
Trace train(const std::string& kind, DType dtype, bool reference, const std::string& scale) {
  ReferenceOpsGuard path(reference);
  Generator weights(7), data(11);
  std::shared_ptr<Module> model;
  std::function<Variable(const Batch&)> loss;
  if (kind == "encdec") {
    auto m = std::make_shared<EncoderDecoder>(small_config(scale), Init(weights, dtype));
    loss = [m](const Batch& b) {
      return cross_entropy(m->forward(b.src, b.tgt_in, b.src_pad), b.tgt_out, kPad);
    };
    model = m;
  } else {
    auto m = std::make_shared<DecoderLM>(small_config(scale), Init(weights, dtype));
    loss = [m](const Batch& b) { return cross_entropy(m->forward(b.tgt_in), b.tgt_out, kPad); };
    model = m;
  }
  // eps 1e-6, not PyTorch's 1e-8: Adam moves an element by about lr g / (|g| + eps), which
  // turns a difference d in a gradient element near 0 into one of up to lr d / eps in the
  // weight. At 1e-8 a float32 rounding of 2e-9 in a gradient of 4e-8 moved that weight by
  // 9e-5 on one path only (lr 1e-2), and later gradients then differed by 1e-4: a property
  // of Adam, not of either path. At 1e-6 the worst seen is 2e-6.
  AdamW opt(model->parameters(), 1e-3, 0.9, 0.999, 1e-6, 0.01);
  Trace trace;
  for (int64_t step = 0; step < kSteps; ++step) {
    const Batch batch = make_batch(data);
    opt.zero_grad();
    Variable l = loss(batch);
    l.backward();
    trace.losses.push_back(l.item());
    trace.names.emplace_back();
    trace.grads.emplace_back();
    for (const auto& [name, p] : model->named_parameters()) {
      trace.names.back().push_back(name);
      trace.grads.back().push_back(p.grad().to_vector());
    }
    opt.step();
  }
  return trace;
}

double norm(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x * x;
  return std::sqrt(s);
}

double distance(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += (a[i] - b[i]) * (a[i] - b[i]);
  return std::sqrt(s);
}

void expect_same_training(const std::string& kind, DType dtype, double tol,
                          const std::string& scale = "inv_sqrt_dk") {
  SCOPED_TRACE(kind + " " + std::string(dtype_name(dtype)) + " " + scale);
  const Trace fused = train(kind, dtype, false, scale), ref = train(kind, dtype, true, scale);
  ASSERT_EQ(fused.losses.size(), static_cast<size_t>(kSteps));
  ASSERT_EQ(ref.names, fused.names);
  for (int64_t step = 0; step < kSteps; ++step) {
    const double loss = fused.losses[step], loss_ref = ref.losses[step];
    EXPECT_TRUE(std::isfinite(loss_ref));
    EXPECT_LE(std::abs(loss - loss_ref), tol * std::abs(loss_ref))
        << "step " << step << ": loss " << loss << ", reference " << loss_ref;
    double total = 0;
    for (const std::vector<double>& g : ref.grads[step]) total += norm(g) * norm(g);
    const double floor = 1e-3 * std::sqrt(total);
    ASSERT_GT(floor, 0);
    for (size_t i = 0; i < fused.names[step].size(); ++i) {
      const std::vector<double>& g = fused.grads[step][i];
      const std::vector<double>& g_ref = ref.grads[step][i];
      ASSERT_EQ(g.size(), g_ref.size());
      const double scale = std::max(norm(g_ref), floor);
      EXPECT_LE(distance(g, g_ref), tol * scale)
          << "step " << step << ", " << fused.names[step][i] << ": |grad - reference| "
          << distance(g, g_ref) << ", |reference| " << norm(g_ref);
    }
  }
  // The switch took: rounding differs somewhere between the two paths.
  EXPECT_NE(fused.grads, ref.grads) << "both runs took the same path";
}

TEST(ReferencePath, EncoderDecoderTrainsAlikeBothWays) {
  expect_same_training("encdec", DType::Float64, 1e-10);
  expect_same_training("encdec", DType::Float32, 1e-5);
}

TEST(ReferencePath, DecoderTrainsAlikeBothWays) {
  expect_same_training("decoder", DType::Float64, 1e-10);
  expect_same_training("decoder", DType::Float32, 1e-5);
}

// The scale modes with parameters or variants of their own, and two fixed ones.
TEST(ReferencePath, EveryScaleModeTrainsAlikeBothWays) {
  for (const char* scale :
       {"none", "inv_dk", "learned", "qk_norm", "qk_l2norm", "learned_log", "log_n", "ssmax"}) {
    expect_same_training("encdec", DType::Float64, 1e-10, scale);
    expect_same_training("decoder", DType::Float32, 1e-5, scale);
  }
}

}  // namespace
}  // namespace gradflow::nn
