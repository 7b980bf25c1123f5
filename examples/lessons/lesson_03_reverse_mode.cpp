// Lesson 3: why reverse mode, for one loss and many parameters.
//
// A small network, x (4) -> tanh(W1 x) -> tanh(W2 h1) -> y = w3 . h2, with
// the loss L = (y - t)^2 / 2, and its gradient with respect to all N of its
// weights, computed twice by hand in plain loops that count their
// multiply-adds:
//   forward mode carries one derivative, dz/dp for one parameter p, along
//     with every value (dual numbers: (a + a' e)(b + b' e) = ab + (a'b + ab') e),
//     so it needs one pass per parameter: N passes;
//   reverse mode runs forward once, keeping the values, then sends dL/dz
//     back once through every product (what loss.backward() does): one pass.
// Both are checked against gradflow's backward on the same network. The
// tanh and the loss cost a few operations per unit; the products, counted
// here, are nearly all the work.
// Page: docs/lessons/03_reverse_mode.md.
#include <cmath>
#include <cstdio>
#include <vector>

#include "autograd/ops.h"
#include "examples/lessons/lesson.h"
#include "examples/toolkit/plot/svg_plot.h"
#include "tensor/ops.h"

using namespace gradflow;

namespace {

constexpr int64_t kIn = 4;

using Vec = std::vector<double>;

// The network's weights, W1 (h, 4), W2 (h, h), w3 (h), row-major, as one
// flat list of N parameters in that order.
struct Net {
  int64_t h = 0;
  Vec p;
  int64_t n() const { return static_cast<int64_t>(p.size()); }
  const double* w1() const { return p.data(); }
  const double* w2() const { return p.data() + h * kIn; }
  const double* w3() const { return p.data() + h * kIn + h * h; }
};

int64_t multiply_adds = 0;

// y = W x for W (rows, cols): rows * cols multiply-adds.
Vec matvec(const double* w, const Vec& x, int64_t rows) {
  const auto cols = static_cast<int64_t>(x.size());
  Vec y(static_cast<size_t>(rows), 0.0);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) y[r] += w[r * cols + c] * x[c];
  multiply_adds += rows * cols;
  return y;
}

Vec tanh_of(Vec z) {
  for (double& v : z) v = std::tanh(v);
  return z;
}

// Forward mode for parameter `which`: values and their derivatives with
// respect to it, together. dW is 1 at one entry and 0 elsewhere, yet the
// products run whole, as a program that does not know which inputs are
// constant must run them; the input x has no derivative, so W1 dx is skipped
// (as reverse mode skips dL/dx).
double forward_mode(const Net& net, const Vec& x, double t, int64_t which) {
  Net d{net.h, Vec(net.p.size(), 0.0)};  // dp/dp_which: one-hot
  d.p[static_cast<size_t>(which)] = 1;
  const int64_t h = net.h;
  Vec z1 = matvec(net.w1(), x, h), dz1 = matvec(d.w1(), x, h);
  Vec h1 = tanh_of(z1), dh1(dz1.size());
  for (size_t i = 0; i < dz1.size(); ++i) dh1[i] = (1 - h1[i] * h1[i]) * dz1[i];
  Vec z2 = matvec(net.w2(), h1, h), dz2 = matvec(d.w2(), h1, h), w_dh = matvec(net.w2(), dh1, h);
  for (size_t i = 0; i < dz2.size(); ++i) dz2[i] += w_dh[i];
  Vec h2 = tanh_of(z2), dh2(dz2.size());
  for (size_t i = 0; i < dz2.size(); ++i) dh2[i] = (1 - h2[i] * h2[i]) * dz2[i];
  const double y = matvec(net.w3(), h2, 1)[0];
  const double dy = matvec(d.w3(), h2, 1)[0] + matvec(net.w3(), dh2, 1)[0];
  return (y - t) * dy;  // dL/dp = (y - t) dy/dp
}

// Reverse mode: forward keeping h1 and h2, then dL/dz back through each
// product: dW = g x^T and dx = W^T g, the two products of matmul's backward.
Vec reverse_mode(const Net& net, const Vec& x, double t) {
  const int64_t h = net.h;
  Vec h1 = tanh_of(matvec(net.w1(), x, h));
  Vec h2 = tanh_of(matvec(net.w2(), h1, h));
  const double g = matvec(net.w3(), h2, 1)[0] - t;  // dL/dy
  Vec grad(net.p.size(), 0.0);
  double* dw1 = grad.data();
  double* dw2 = grad.data() + h * kIn;
  double* dw3 = grad.data() + h * kIn + h * h;
  Vec dz2(static_cast<size_t>(h)), dz1(static_cast<size_t>(h), 0.0);
  for (int64_t i = 0; i < h; ++i) {
    dw3[i] = g * h2[i];                              // dL/dw3 = g h2
    dz2[i] = g * net.w3()[i] * (1 - h2[i] * h2[i]);  // dL/dz2 = g w3 tanh'
  }
  multiply_adds += 2 * h;
  for (int64_t i = 0; i < h; ++i)
    for (int64_t j = 0; j < h; ++j) {
      dw2[i * h + j] = dz2[i] * h1[j];         // dL/dW2 = dz2 h1^T
      dz1[j] += net.w2()[i * h + j] * dz2[i];  // dL/dh1 = W2^T dz2
    }
  multiply_adds += 2 * h * h;
  for (int64_t j = 0; j < h; ++j) dz1[j] *= 1 - h1[j] * h1[j];
  for (int64_t i = 0; i < h; ++i)
    for (int64_t k = 0; k < kIn; ++k) dw1[i * kIn + k] = dz1[i] * x[k];  // dL/dW1 = dz1 x^T
  multiply_adds += h * kIn;
  return grad;
}

// gradflow's backward on the same network and loss.
Vec autograd_gradient(const Net& net, const Vec& x, double t) {
  const int64_t h = net.h;
  const auto leaf = [&](const double* from, const Shape& shape) {
    const auto n = static_cast<size_t>(numel_of(shape));
    return Variable(from_vector(Vec(from, from + n), shape, DType::Float64), true);
  };
  Variable w1 = leaf(net.w1(), Shape{h, kIn});
  Variable w2 = leaf(net.w2(), Shape{h, h});
  Variable w3 = leaf(net.w3(), Shape{1, h});
  Variable xv(from_vector(x, {kIn, 1}, DType::Float64));
  Variable y = matmul(w3, tanh(matmul(w2, tanh(matmul(w1, xv)))));  // (1, 1)
  Variable loss = pow(y - t, 2) * 0.5;
  sum(loss).backward();
  Vec out;
  for (const Variable* w : {&w1, &w2, &w3})
    for (double v : w->grad().to_vector()) out.push_back(v);
  return out;
}

struct Count {
  int64_t n = 0, forward_pass = 0, forward_mode = 0, reverse_mode = 0;
  double gap = 0;  // the largest difference between the three gradients
};

Count count(int64_t h, Generator& gen) {
  Net net{h, randn({kIn * h + h * h + h}, gen, DType::Float64, 0, 0.5).to_vector()};
  const Vec x = randn({kIn}, gen, DType::Float64).to_vector();
  const double t = 0.5;
  Count c{.n = net.n()};
  multiply_adds = 0;
  tanh_of(matvec(net.w3(), tanh_of(matvec(net.w2(), tanh_of(matvec(net.w1(), x, h)), h)), 1));
  c.forward_pass = multiply_adds;
  multiply_adds = 0;
  Vec by_forward;
  for (int64_t p = 0; p < net.n(); ++p) by_forward.push_back(forward_mode(net, x, t, p));
  c.forward_mode = multiply_adds;
  multiply_adds = 0;
  const Vec by_reverse = reverse_mode(net, x, t);
  c.reverse_mode = multiply_adds;
  const Vec by_autograd = autograd_gradient(net, x, t);
  for (size_t i = 0; i < by_forward.size(); ++i)
    c.gap = std::max({c.gap, std::abs(by_forward[i] - by_autograd[i]),
                      std::abs(by_reverse[i] - by_autograd[i])});
  return c;
}

int run(int argc, char** argv) {
  cli::ArgParser args("lesson_03_reverse_mode",
                      "Lesson 3: the gradient of one loss with respect to N weights, by forward "
                      "mode (N passes) and by reverse mode (one), multiply-adds counted.");
  const lessons::Lesson lesson = lessons::parse_lesson(args, "03_reverse_mode", argc, argv);
  Generator gen(static_cast<uint64_t>(lesson.seed));

  std::printf("x (4) -> h1 = tanh(W1 x) -> h2 = tanh(W2 h1) -> y = w3 . h2, L = (y - t)^2 / 2\n");
  const Count small = count(8, gen);
  std::printf(
      "hidden width 8: N = %lld weights (W1 8 x 4, W2 8 x 8, w3 8); one forward pass "
      "%lld multiply-adds\n\n",
      static_cast<long long>(small.n), static_cast<long long>(small.forward_pass));
  std::printf("                 passes  multiply-adds\n");
  std::printf("forward mode     %6lld  %13lld\n", static_cast<long long>(small.n),
              static_cast<long long>(small.forward_mode));
  std::printf("reverse mode     %6d  %13lld\n", 1, static_cast<long long>(small.reverse_mode));
  std::printf("forward / reverse: %.1f; N = %lld\n",
              static_cast<double>(small.forward_mode) / static_cast<double>(small.reverse_mode),
              static_cast<long long>(small.n));
  std::printf("both gradients against gradflow's backward: largest difference %.1e\n", small.gap);

  std::printf(
      "\nwider:\n     h       N   forward pass   forward mode   reverse mode   forward / "
      "reverse\n");
  std::vector<Count> counts = {small};
  for (int64_t h : {16, 32, 64}) counts.push_back(count(h, gen));
  Vec ns, forward, reverse;
  bool ratio_n = true, three = true, same = true;
  for (size_t i = 0; i < counts.size(); ++i) {
    const Count& c = counts[i];
    const double ratio = static_cast<double>(c.forward_mode) / static_cast<double>(c.reverse_mode);
    std::printf("  %4lld  %6lld   %12lld   %12lld   %12lld   %8.0f\n",
                static_cast<long long>(i == 0 ? 8 : 8 << i), static_cast<long long>(c.n),
                static_cast<long long>(c.forward_pass), static_cast<long long>(c.forward_mode),
                static_cast<long long>(c.reverse_mode), ratio);
    ratio_n = ratio_n && ratio == static_cast<double>(c.n);
    three = three && c.reverse_mode <= 3 * c.forward_pass;
    same = same && c.gap < 1e-12;
    ns.push_back(static_cast<double>(c.n));
    forward.push_back(static_cast<double>(c.forward_mode));
    reverse.push_back(static_cast<double>(c.reverse_mode));
  }
  lessons::claim(
      "forward mode, reverse mode and gradflow's backward give the same gradient, to "
      "1e-12",
      same);
  lessons::claim("reverse mode costs at most three forward passes, whatever N", three);
  lessons::claim("forward mode costs N times as much as reverse mode", ratio_n);

  plot::Figure fig{.title = "The gradient of one loss: forward mode against reverse mode",
                   .x = {.label = "N, the number of weights (log scale)", .log = true},
                   .y = {.label = "multiply-adds for the whole gradient (log scale)", .log = true}};
  fig.series.push_back({.label = "forward mode: N passes", .x = ns, .y = forward, .markers = true});
  fig.series.push_back({.label = "reverse mode: one pass",
                        .x = ns,
                        .y = reverse,
                        .markers = true,
                        .emphasis = true});
  lessons::write_figure(lesson, "reverse_mode.svg", plot::render_svg(fig));
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return cli::run_cli(argc, argv, run); }
