// Lesson 1: the chain rule, walked node by node.
//
// L = (a b + c)^2 at a = -4, b = 2, c = 10, one number per node, so every
// step of the backward pass can be checked by hand. The forward pass records
// a node per op (autograd/variable.cpp, make_result); backward visits them
// from L back to the leaves and at each one multiplies the gradient that
// arrived, dL/dnode, by the op's local derivative, dnode/dinput, to get
// dL/dinput: the chain rule, once per node. The lesson reads the walk from
// the engine itself: a hook on every node records when backward reaches it
// and the gradient it brings (autograd/variable.h, register_hook), and each
// op's local derivative comes from its own backward, run with a gradient of
// 1. Finite differences check the result, and micrograd's README example
// (a = -4, b = 2, eleven lines) gets the numbers that README prints.
// Page: docs/lessons/01_chain_rule.md.
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "autograd/graph.h"
#include "autograd/ops.h"
#include "examples/lessons/lesson.h"
#include "tensor/ops.h"

using namespace gradflow;

namespace {

Variable number(double v) { return Variable(scalar_tensor(v, DType::Float64), true); }

// One node of the expression, as the lesson names it and says its op.
struct Named {
  std::string name, formula;  // "e", "a * b"
  Variable v;
  std::string local;  // the local derivatives in words: "de/da = b, de/db = a"
};

// L = (a b + c)^2 and its gradients, for the finite differences.
double expression(double a, double b, double c) { return (a * b + c) * (a * b + c); }

// micrograd's README example, the same lines in gradflow's ops. relu and
// pow are ops; 1 + c, 3 * d, 10 / f are ops with a constant.
Variable micrograd_example(const Variable& a, const Variable& b) {
  Variable c = a + b;
  Variable d = a * b + pow(b, 3);
  c = c + (c + 1.0);
  c = c + (1.0 + c + neg(a));
  d = d + (d * 2.0 + relu(b + a));
  d = d + (d * 3.0 + relu(b - a));
  Variable e = c - d;
  Variable f = pow(e, 2);
  Variable g = f / 2.0;
  return g + div(10.0, f);
}

// (f(x + h) - f(x - h)) / 2h, the slope a learner can compute with no
// autograd at all. h = 1e-6 in float64: error about 1e-9 here.
double central(const std::function<double(double)>& f, double x) {
  const double h = 1e-6;
  return (f(x + h) - f(x - h)) / (2 * h);
}

int run(int argc, char** argv) {
  cli::ArgParser args("lesson_01_chain_rule",
                      "Lesson 1: the chain rule, walked node by node: each node's value, local "
                      "derivative and the gradient that arrives, in the order backward visits "
                      "them, checked against finite differences.");
  const lessons::Lesson lesson = lessons::parse_lesson(args, "01_chain_rule", argc, argv);

  // Forward: one node per op, each a single number.
  std::vector<Named> nodes;
  Variable a = number(-4), b = number(2), c = number(10);
  Variable e = a * b, d = e + c, loss = pow(d, 2);
  nodes = {{"a", "", a, ""},
           {"b", "", b, ""},
           {"c", "", c, ""},
           {"e", "a * b", e, "de/da = b, de/db = a"},
           {"d", "e + c", d, "dd/de = 1, dd/dc = 1"},
           {"L", "d^2", loss, "dL/dd = 2 d"}};
  std::printf("forward: each node's value\n");
  for (const Named& n : nodes)
    std::printf("  %-2s %-8s %-6s = %g\n", n.name.c_str(),
                n.formula.empty() ? "" : ("= " + n.formula).c_str(),
                n.v.is_leaf() ? "(leaf)" : ("(" + n.v.grad_fn_name() + ")").c_str(), n.v.item());

  // Each op's local derivatives, from its own backward given a gradient of
  // 1: d(node)/d(input) for each input, before the real walk frees it.
  std::vector<std::vector<double>> local(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].v.is_leaf()) continue;
    for (const Tensor& t : nodes[i].v.impl()->grad_fn->backward(ones({}, DType::Float64)))
      local[i].push_back(t.item());
  }
  // The walk as the engine takes it: a hook sees each node when backward
  // reaches it, with every gradient that node will get already summed.
  std::vector<std::pair<size_t, double>> visits;  // node, dL/dnode on arrival
  for (size_t i = 0; i < nodes.size(); ++i) {
    nodes[i].v.register_hook([&visits, i](const Tensor& g) {
      visits.push_back({i, g.item()});
      return Tensor();
    });
    if (!nodes[i].v.is_leaf()) nodes[i].v.retain_grad();  // for the drawing
  }
  GraphCapture capture;
  loss.backward();

  std::printf("\nbackward: the nodes in the order it visits them; each sends back\n");
  std::printf("(gradient arriving) x (local derivative) to each of its inputs\n");
  std::printf("  node  op    dL/dnode  local derivatives       sends back\n");
  bool chain = true;  // every gradient sent is arriving x local, and arrives
  std::vector<double> arrived(nodes.size(), 0);
  for (const auto& [i, g] : visits) arrived[i] = g;
  for (const auto& [i, g] : visits) {
    const Named& n = nodes[i];
    std::string sends;
    if (!n.v.is_leaf()) {
      const auto& inputs = n.v.impl()->grad_fn->inputs;
      for (size_t k = 0; k < inputs.size(); ++k) {
        size_t to = 0;
        while (nodes[to].v.impl() != inputs[k]) ++to;
        char buf[64];
        std::snprintf(buf, sizeof buf, "%s%s: %g x %g = %g", sends.empty() ? "" : ", ",
                      nodes[to].name.c_str(), g, local[i][k], g * local[i][k]);
        sends += buf;
        chain = chain && arrived[to] == g * local[i][k];  // each input here has one use
      }
    }
    std::printf("  %-4s  %-4s  %8g  %-22s  %s\n", n.name.c_str(),
                n.v.is_leaf() ? "leaf" : n.v.grad_fn_name().c_str(), g, n.local.c_str(),
                sends.c_str());
  }
  // Each node's users (the ops that took it as an input) came before it.
  bool after_users = true;
  for (size_t at = 0; at < visits.size(); ++at)
    for (size_t later = at + 1; later < visits.size(); ++later) {
      const Named& user = nodes[visits[later].first];
      if (user.v.is_leaf()) continue;
      for (const auto& input : user.v.impl()->grad_fn->inputs)
        after_users = after_users && input != nodes[visits[at].first].v.impl();
    }
  lessons::claim("backward visits every node after all the nodes that use it", after_users);
  lessons::claim("each gradient sent back is the arriving gradient times the local derivative",
                 chain);

  // Finite differences: nudge one leaf, recompute L, take the slope.
  std::printf("\nleaf  autograd  finite difference (L(x + h) - L(x - h)) / 2h, h = 1e-6\n");
  const double by_fd[3] = {central([](double x) { return expression(x, 2, 10); }, -4),
                           central([](double x) { return expression(-4, x, 10); }, 2),
                           central([](double x) { return expression(-4, 2, x); }, 10)};
  bool match = true;
  for (int i = 0; i < 3; ++i) {
    std::printf("  %-2s  %8g  %17.6f\n", nodes[static_cast<size_t>(i)].name.c_str(),
                nodes[static_cast<size_t>(i)].v.grad().item(), by_fd[i]);
    match = match && std::abs(nodes[static_cast<size_t>(i)].v.grad().item() - by_fd[i]) < 1e-6;
  }
  lessons::claim("every leaf's gradient is its finite difference, to 1e-6", match);

  // micrograd's README example: the same numbers its README prints.
  Variable ma = number(-4), mb = number(2);
  Variable g = micrograd_example(ma, mb);
  g.backward();
  const auto g_of = [](double x, double y) {
    NoGradGuard no_grad;
    return micrograd_example(Variable(scalar_tensor(x, DType::Float64)),
                             Variable(scalar_tensor(y, DType::Float64)))
        .item();
  };
  const double fd_a = central([&](double x) { return g_of(x, 2); }, -4);
  const double fd_b = central([&](double x) { return g_of(-4, x); }, 2);
  std::printf("\nmicrograd's README example at a = -4, b = 2 (%llu ops):\n",
              static_cast<unsigned long long>(forward_order(g.impl().get()).size() - 2));
  std::printf("  g = %.4f   dg/da = %.4f   dg/db = %.4f\n", g.item(), ma.grad().item(),
              mb.grad().item());
  std::printf("  finite differences:   dg/da = %.4f   dg/db = %.4f\n", fd_a, fd_b);
  const auto four = [](double x, double want) { return std::abs(x - want) < 5e-5; };
  lessons::claim(
      "gradflow gets micrograd's 24.7041, 138.8338 and 645.5773, as do finite "
      "differences",
      four(g.item(), 24.7041) && four(ma.grad().item(), 138.8338) &&
          four(mb.grad().item(), 645.5773) && four(fd_a, 138.8338) && four(fd_b, 645.5773));

  std::unordered_map<const void*, std::string> names;
  for (const Named& n : nodes)
    names[n.v.impl().get()] = n.formula.empty() ? n.name : n.name + " = " + n.formula;
  lessons::write_figure(lesson, "chain_rule.svg",
                        to_svg(loss, {.capture = &capture,
                                      .names = names,
                                      .title = "L = (a b + c)^2: each node's value and gradient"}));
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return cli::run_cli(argc, argv, run); }
