// Lesson 7: the gradient through a saturated softmax.
//
// The softmax's Jacobian is dp/dx = diag(p) - p p^T. It is 0 for a one-hot p
// and has entries of order 1/n for a uniform p over n keys, so a saturated
// softmax passes almost no gradient back to its scores. The lesson shows the
// Jacobian for a few p, then runs one attention head forward and backward
// with gradflow's autograd, unscaled (s = 1) and with s = 1/sqrt(d_k), and
// reads the gradient at every stage: the scores S, the queries q, and the
// weights W_Q and W_V.
//
// Two subtleties. A saturated row passes almost nothing back, but a fresh
// unscaled head is not saturated in every row: the few rows that are only
// partly peaked pass more than a near-uniform row does, so the norm of the
// whole dL/dS is not small, only a typical row's. And since S = s q k^T,
// dL/dq = s (dL/dS) k: the factor s missing from the forward pass is missing
// from the backward pass too, so unscaled, dL/dq and the W_Q gradient come
// out many times larger, not smaller. Comparing W_Q gradients alone misleads.
// Page: docs/lessons/07_saturated_gradient.md.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "autograd/graph.h"
#include "autograd/ops.h"
#include "examples/lessons/lesson.h"
#include "tensor/ops.h"

using namespace gradflow;

namespace {

constexpr int64_t kTokens = 64;  // T: queries and keys alike (self-attention)

double norm(const Tensor& t) { return std::sqrt(sum(mul(t, t)).item()); }

// diag(p) - p p^T for a probability vector p (n).
Tensor softmax_jacobian(const Tensor& p) {
  const int64_t n = p.numel();
  Tensor eye = zeros({n, n}, p.dtype());
  for (int64_t i = 0; i < n; ++i) eye.set({i, i}, 1);
  Tensor column = p.reshape({n, 1}), row = p.reshape({1, n});
  return sub(mul(eye, row), matmul(column, row));
}

// The same Jacobian as autograd sees it: row i is the gradient of p_i with
// respect to the logits, from one backward pass with a one-hot seed.
Tensor jacobian_by_autograd(const Tensor& logits) {
  const int64_t n = logits.numel();
  Tensor out = zeros({n, n}, logits.dtype());
  for (int64_t i = 0; i < n; ++i) {
    Variable x(logits, true);
    Tensor seed = zeros({n}, logits.dtype());
    seed.set({i}, 1);
    softmax(x, 0).backward(seed);
    out.select(0, i).copy_(x.grad());
  }
  return out;
}

// Logits whose softmax over n keys puts `top` on key 0 and the rest evenly.
Tensor logits_with_top(double top, int64_t n) {
  std::vector<double> x(static_cast<size_t>(n), 0.0);
  if (top > 1.0 / static_cast<double>(n)) x[0] = std::log(top * (n - 1) / (1 - top));
  return from_vector(x, DType::Float64);
}

// A quantile of values (0: smallest, 1: largest), the nearest rank.
double quantile(std::vector<double> values, double at) {
  std::sort(values.begin(), values.end());
  return values[static_cast<size_t>(std::lround(at * static_cast<double>(values.size() - 1)))];
}

struct HeadGrads {
  double max_weight = 0;      // the largest weight of a query row, mean over rows
  int64_t saturated = 0;      // query rows whose largest weight is above 0.99
  double jacobian = 0;        // ||J|| of a query row, median over rows
  std::vector<double> d_row;  // ||dL/dS_t||: the gradient at one query row's scores
  double d_scores = 0, d_q = 0, d_wq = 0, d_wv = 0;  // whole gradients' norms
  double check = 0;                                  // the largest |s (dL/dS) k - dL/dq|
  std::string graph_svg;
};

// One head of width d_k on T tokens x (T, d_k), every draw from `seed` (the
// same for both scales): q = x W_Q, k = x W_K, v = x W_V, S = s q k^T,
// out = softmax(S) v, and the loss L = sum(out * G) for a fixed random G, so
// that dL/dout = G whatever the scale. W is N(0, 1/d_k): q and k then have
// entries of variance about 1, as in lessons 5 and 6.
HeadGrads run_head(int64_t d_k, double s, uint64_t seed, const std::string& title) {
  Generator gen(seed);
  const double w_std = 1 / std::sqrt(static_cast<double>(d_k));
  Variable x(randn({kTokens, d_k}, gen, DType::Float64));  // data: needs no gradient
  Variable w_q(randn({d_k, d_k}, gen, DType::Float64, 0, w_std), true);
  Variable w_k(randn({d_k, d_k}, gen, DType::Float64, 0, w_std), true);
  Variable w_v(randn({d_k, d_k}, gen, DType::Float64, 0, w_std), true);
  Variable g(randn({kTokens, d_k}, gen, DType::Float64));

  GraphCapture capture;  // records each gradient's norm for the drawing
  Variable q = matmul(x, w_q), k = matmul(x, w_k), v = matmul(x, w_v);
  Variable scores = matmul(q, transpose(k, 0, 1)) * s;  // (T, T); s = 1 is still an op
  Variable p = softmax(scores, -1);
  Variable weighted = matmul(p, v) * g;  // out * G
  Variable loss = sum(weighted);
  // Intermediates keep no gradient unless asked (autograd/variable.h).
  scores.retain_grad();
  q.retain_grad();
  loss.backward();

  HeadGrads r;
  const Tensor top = max(p.data(), -1).values;  // (T)
  r.max_weight = mean(top).item();
  r.saturated = static_cast<int64_t>(sum(gt(top, 0.99)).item());
  std::vector<double> jacobians;
  for (int64_t t = 0; t < kTokens; ++t)
    jacobians.push_back(norm(softmax_jacobian(p.data().select(0, t))));
  r.jacobian = quantile(jacobians, 0.5);
  const Tensor d_s = scores.grad();  // (T, T): row t is query t's scores
  r.d_row = sqrt(sum(mul(d_s, d_s), {-1})).to_vector();
  r.d_scores = norm(d_s);
  r.d_q = norm(q.grad());
  r.d_wq = norm(w_q.grad());
  r.d_wv = norm(w_v.grad());
  // The backward of S = s q k^T with respect to q, by hand.
  r.check = max(abs(sub(mul(matmul(scores.grad(), k.data()), s), q.grad()))).item();
  r.graph_svg = to_svg(loss, {.capture = &capture,
                              .names = {{w_q.impl().get(), "W_Q"},
                                        {w_k.impl().get(), "W_K"},
                                        {w_v.impl().get(), "W_V"},
                                        {scores.impl().get(), "S = s q k^T"},
                                        {weighted.impl().get(), "out * G"}},
                              .title = title});
  return r;
}

int run(int argc, char** argv) {
  cli::ArgParser args("lesson_07_saturated_gradient",
                      "Lesson 7: the softmax Jacobian diag(p) - p p^T and the gradient through "
                      "a saturated attention head.");
  const lessons::Lesson lesson = lessons::parse_lesson(args, "07_saturated_gradient", argc, argv);
  const uint64_t seed = static_cast<uint64_t>(lesson.seed);

  // Part 1: the Jacobian alone, for p from uniform to one-hot over 64 keys.
  std::printf("the softmax Jacobian J = diag(p) - p p^T over %lld keys\n",
              static_cast<long long>(kTokens));
  std::printf("  largest p   ||J|| (Frobenius)   largest |entry|\n");
  std::vector<double> j_norms;  // at the five p
  for (double top : {1.0 / kTokens, 0.5, 0.9, 0.99, 0.999}) {
    const Tensor p = softmax(logits_with_top(top, kTokens), 0);
    const Tensor j = softmax_jacobian(p);
    j_norms.push_back(norm(j));
    std::printf("  %9.4f   %8.4f            %8.4f  %s\n", top, norm(j), max(abs(j)).item(),
                lessons::bar(norm(j), 0.15, 20).c_str());
  }
  std::printf("  (uniform p: ||J|| = sqrt(1/n - 1/n^2) = %.4f, entries 1/n - 1/n^2 = %.4f)\n",
              std::sqrt(1.0 / kTokens - 1.0 / (kTokens * kTokens)),
              1.0 / kTokens - 1.0 / (kTokens * kTokens));
  // Autograd knows no Jacobian; it applies one (autograd/softmax.cpp). Its
  // rows, one backward pass each, are the formula's up to rounding.
  const Tensor logits = logits_with_top(0.9, kTokens);
  const double gap =
      max(abs(sub(jacobian_by_autograd(logits), softmax_jacobian(softmax(logits, 0))))).item();
  std::printf("  autograd's Jacobian (64 backward passes, p 0.9) is the formula to 1e-15: %s\n",
              gap < 1e-15 ? "yes" : "no");
  lessons::claim("||J|| at p 0.999 is under a hundredth of the uniform p's, at p 0.5 over twice it",
                 j_norms[4] < j_norms[0] / 100 && j_norms[1] > 2 * j_norms[0]);

  // Part 2: one head, d_k 256, the same draws under both scales.
  const int64_t d_k = 256;
  const double inv_sqrt = 1 / std::sqrt(static_cast<double>(d_k));
  const HeadGrads none = run_head(d_k, 1.0, seed, "none (s = 1), d_k 256: gradient norms");
  const HeadGrads scaled =
      run_head(d_k, inv_sqrt, seed, "1/sqrt(d_k) (s = 1/16), d_k 256: gradient norms");
  std::printf("\none head, T = %lld tokens, d_k %lld, L = sum(softmax(s q k^T) v * G)\n",
              static_cast<long long>(kTokens), static_cast<long long>(d_k));
  std::printf("                                  none  1/sqrt(d_k)\n");
  const auto line = [](const char* name, double a, double b, int digits) {
    std::printf("  %-28s %7.*f  %7.*f\n", name, digits, a, digits, b);
  };
  line("largest weight, mean", none.max_weight, scaled.max_weight, 3);
  std::printf("  %-28s %7lld  %7lld   of %lld\n", "rows with largest weight > .99",
              static_cast<long long>(none.saturated), static_cast<long long>(scaled.saturated),
              static_cast<long long>(kTokens));
  line("||J|| of a row, median", none.jacobian, scaled.jacobian, 3);
  line("||dL/dS_t|| of a row, 10%", quantile(none.d_row, 0.1), quantile(scaled.d_row, 0.1), 2);
  line("||dL/dS_t|| of a row, median", quantile(none.d_row, 0.5), quantile(scaled.d_row, 0.5), 2);
  line("||dL/dS_t|| of a row, 90%", quantile(none.d_row, 0.9), quantile(scaled.d_row, 0.9), 2);
  line("||dL/dS||, all rows", none.d_scores, scaled.d_scores, 2);
  line("||dL/dq||", none.d_q, scaled.d_q, 2);
  line("||dL/dW_Q||", none.d_wq, scaled.d_wq, 1);
  line("||dL/dW_V||", none.d_wv, scaled.d_wv, 1);
  line("||dL/dW_Q|| / ||dL/dW_V||", none.d_wq / none.d_wv, scaled.d_wq / scaled.d_wv, 2);
  std::printf("dL/dq = s (dL/dS) k, by hand against autograd: largest difference %.1e, %.1e\n",
              none.check, scaled.check);
  lessons::claim(
      "unscaled, a typical row's dL/dS_t is smaller, yet the whole dL/dS is larger",
      quantile(none.d_row, 0.5) < quantile(scaled.d_row, 0.5) && none.d_scores > scaled.d_scores);
  lessons::claim("unscaled, dL/dq and dL/dW_Q are over 10 times larger",
                 none.d_q > 10 * scaled.d_q && none.d_wq > 10 * scaled.d_wq);
  lessons::claim("dL/dq by hand is autograd's to 1e-12",
                 std::max(none.check, scaled.check) < 1e-12);

  // Other head sizes, other draws: without scaling a typical row's gradient
  // at the scores falls behind as d_k grows, while dL/dq, not divided by
  // sqrt(d_k), pulls ahead.
  std::printf("\n       median ||dL/dS_t||        ||dL/dq||\n");
  std::printf("  d_k    none  1/sqrt(d_k)     none  1/sqrt(d_k)\n");
  bool row_order = true, q_larger = true;
  for (int64_t d : {16, 64, 256, 1024}) {
    const HeadGrads a = run_head(d, 1.0, seed + 1, "");
    const HeadGrads b = run_head(d, 1 / std::sqrt(static_cast<double>(d)), seed + 1, "");
    std::printf("  %4lld  %6.2f  %6.2f       %7.1f  %6.1f\n", static_cast<long long>(d),
                quantile(a.d_row, 0.5), quantile(b.d_row, 0.5), a.d_q, b.d_q);
    // More to a typical row unscaled at d_k 16, less from 64 on.
    row_order = row_order && (quantile(a.d_row, 0.5) > quantile(b.d_row, 0.5)) == (d == 16);
    q_larger = q_larger && a.d_q > b.d_q;
  }
  lessons::claim("a typical row gets more unscaled at d_k 16 and less from 64 on", row_order);
  lessons::claim("unscaled, dL/dq is larger at every d_k", q_larger);

  lessons::write_figure(lesson, "graph_none.svg", none.graph_svg);
  lessons::write_figure(lesson, "graph_inv_sqrt_dk.svg", scaled.graph_svg);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return cli::run_cli(argc, argv, run); }
