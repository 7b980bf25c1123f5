// Lesson 4: what the graph keeps for backward, and why an in-place edit of
// a kept value is refused.
//
// A backward formula needs some of its forward's values: exp's gradient is
// g exp(x), so exp keeps its output; tanh's is g (1 - tanh^2), so tanh keeps
// its output too; a product's needs the other factor; a sum, a shift or a
// product with a constant needs nothing. Each op's backward closure keeps
// just those tensors (autograd/unary.cpp, arithmetic.cpp), and an
// intermediate's own data goes with its last handle (autograd/variable.h),
// so the graph holds what backward needs and no more, until backward has
// used it and frees it. The lesson measures that memory (memory_stats,
// tensor/storage.h), shows that a second backward through the freed graph is
// refused and that, with the graph kept, it adds into .grad again, and edits
// a kept tensor in place before backward: the engine's version check
// (autograd/engine.cpp) refuses, where the formula would have used the new
// value and given a wrong gradient without a word.
// Page: docs/lessons/04_what_the_graph_keeps.md.
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "autograd/graph.h"
#include "autograd/ops.h"
#include "examples/lessons/lesson.h"
#include "tensor/ops.h"

using namespace gradflow;

namespace {

constexpr int64_t kSize = 1 << 20;  // a million float32: 4 MiB a tensor

double mib(int64_t bytes) { return static_cast<double>(bytes) / (1 << 20); }
int64_t live() { return static_cast<int64_t>(memory_stats().live_bytes); }

// The message of the Error `f` throws, or "" when it throws none.
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

struct Step {
  const char* name;   // "h1 = exp(x)"
  const char* needs;  // what its backward needs
  std::function<Variable(const Variable&)> op;
};

int run(int argc, char** argv) {
  cli::ArgParser args("lesson_04_what_the_graph_keeps",
                      "Lesson 4: the tensors the graph keeps for backward, their memory, a second "
                      "backward, and why an in-place edit of a kept tensor is refused.");
  const lessons::Lesson lesson = lessons::parse_lesson(args, "04_what_the_graph_keeps", argc, argv);
  Generator gen(static_cast<uint64_t>(lesson.seed));

  // 1. Each op's output, once the next op is made and the handle to it is
  // dropped: it stays only if some backward keeps it.
  Variable x(randn({kSize}, gen, DType::Float32, 0, 0.5), true);
  const int64_t start = live();
  std::printf("x: a leaf of %lld float32 numbers, %.0f MiB; each h below is as large\n\n",
              static_cast<long long>(kSize), mib(start));
  const std::vector<Step> steps = {
      {"h1 = exp(x)", "its output: g exp(x)", [](const Variable& v) { return exp(v); }},
      {"h2 = h1 * 2", "nothing: g 2", [](const Variable& v) { return v * 2.0; }},
      {"h3 = tanh(h2)", "its output: g (1 - h3^2)", [](const Variable& v) { return tanh(v); }},
      {"h4 = h3 + 1", "nothing: g", [](const Variable& v) { return v + 1.0; }},
      {"L = sum(h4)", "x's shape only", [](const Variable& v) { return sum(v); }}};
  std::printf("op              its backward needs           its output once the handle is gone\n");
  GraphCapture capture;  // for the drawing
  std::unordered_map<const void*, std::string> names = {{x.impl().get(), "x"}};
  Variable h = x;
  std::vector<bool> kept;
  for (size_t i = 0; i < steps.size(); ++i) {
    Variable next = steps[i].op(h);
    const int64_t with_both = live();
    h = next;  // the handle to the previous output goes
    if (i > 0) {
      const bool stays = live() == with_both;
      kept.push_back(stays);
      std::printf("%-14s  %-27s  %s\n", steps[i - 1].name, steps[i - 1].needs,
                  stays ? "kept, 4.0 MiB" : "freed");
    }
    names[h.impl().get()] = steps[i].name;
  }
  Variable loss = h;
  std::printf("%-14s  %-27s  %s\n", steps.back().name, steps.back().needs, "(held: it is L)");
  const int64_t held = live() - start;
  std::printf("the graph holds %.1f MiB beyond x until backward\n", mib(held));
  lessons::claim(
      "exp and tanh keep their outputs; the product with 2, the shift and the sum "
      "keep nothing",
      kept == std::vector<bool>{true, false, true, false});

  loss.backward();
  const int64_t after = live() - start;
  std::printf("after backward: %.1f MiB beyond x (x.grad, %.1f MiB): the kept outputs are freed\n",
              mib(after), mib(4 * kSize));
  lessons::claim("backward frees what the graph kept: only x.grad is left",
                 held >= 2 * 4 * kSize && after < 4 * kSize + 4096);

  // 2. A second backward through the freed graph.
  const std::string again = error_of([&] { loss.backward(); });
  std::printf("\na second loss.backward():\n  %s\n", again.c_str());
  lessons::claim("a second backward through a freed graph is refused, naming the op",
                 again.find("was freed by an earlier backward") != std::string::npos);

  // 3. With retain_graph, a second backward adds into .grad again.
  Variable w(scalar_tensor(3, DType::Float64), true);
  Variable square = w * w;  // d(w w)/dw = 2 w = 6
  square.backward(Tensor(), /*retain_graph=*/true);
  const double once = w.grad().item();
  square.backward(Tensor(), /*retain_graph=*/true);
  const double twice = w.grad().item();
  w.zero_grad();
  square.backward();
  const double zeroed = w.grad().item();
  std::printf("\nw = 3, L = w * w (dL/dw = 2w = 6), the graph kept (retain_graph):\n");
  std::printf("  after one backward: w.grad = %g\n", once);
  std::printf("  after a second:     w.grad = %g (it adds: gradients accumulate)\n", twice);
  std::printf("  zero_grad, then a third: w.grad = %g\n", zeroed);
  lessons::claim("with the graph kept, a second backward adds 6 again; zero_grad starts over",
                 once == 6 && twice == 12 && zeroed == 6);

  // 4. An in-place edit of a kept tensor, before backward.
  Variable a(scalar_tensor(2, DType::Float64), true), b(scalar_tensor(3, DType::Float64), true);
  Variable product = a * b;  // mul keeps a and b: dL/da = b = 3, dL/db = a = 2
  Tensor b_data = b.data();  // the same memory as b
  b_data.fill_(5);           // as an optimizer step would, before the backward
  const std::vector<Tensor> would = product.impl()->grad_fn->backward(ones({}, DType::Float64));
  std::printf("\na = 2, b = 3, p = a * b (mul keeps a and b); then b is set to 5 in place\n");
  std::printf("  dp/da for the product that was computed: 3 (the old b)\n");
  std::printf("  what mul's formula gives now, if run:    %g (the new b)\n", would[0].item());
  const std::string refused = error_of([&] { product.backward(); });
  std::printf("  p.backward():\n  %s\n", refused.c_str());
  lessons::claim(
      "after b is edited in place, the formula would give 5 where 3 is right, and "
      "backward refuses",
      would[0].item() == 5 && refused.find("modified in place") != std::string::npos);

  lessons::write_figure(
      lesson, "kept.svg",
      to_svg(loss,
             {.capture = &capture,
              .names = names,
              .title = "What backward used: exp and tanh kept their outputs, the rest none"}));
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return cli::run_cli(argc, argv, run); }
