// Lesson 2: why backward walks the graph in a topological order.
//
// The diamond b = 2a, c = a + b, L = b c: a and b are each used twice; a
// reaches L along three paths, b along two. Backward runs each node's
// backward once, with the gradient that has arrived at it, so a node must
// wait until every node that uses it has sent its share. The lesson walks
// gradflow's own graph, calling each node's own backward (Node::backward),
// in three orders:
//   the engine's: reverse of forward_order (autograd/engine.cpp), a
//     topological order: every node after all its users. dL/da = 12 a.
//   breadth-first from L, each node as soon as it is reached: b runs before
//     c has sent it its share, and that share, arriving after b ran, is
//     stranded there: dL/da comes out short by exactly that share times
//     db/da.
//   recursion, each share passed on the moment it arrives (a backward that
//     calls its inputs' backward): the right sum, since every path is walked,
//     but a node runs once per path to L, which doubles with each diamond.
// Page: docs/lessons/02_topological_order.md.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "autograd/graph.h"
#include "autograd/ops.h"
#include "examples/lessons/lesson.h"
#include "tensor/ops.h"

using namespace gradflow;

namespace {

using Names = std::map<const VariableImpl*, std::string>;

// What one walk found: each leaf's gradient, and the visits in order.
struct Walk {
  std::map<const VariableImpl*, double> grads;  // what reached each node in all
  int64_t visits = 0;
  std::vector<std::string> lines;  // "2  b  9  a: 18", one per visit
  std::vector<std::string> stranded;
};

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// Runs `node`'s own backward on g and returns (input, gradient) pairs.
std::vector<std::pair<VariableImpl*, double>> send(VariableImpl* node, double g) {
  std::vector<std::pair<VariableImpl*, double>> out;
  const Node& n = *node->grad_fn;
  const std::vector<Tensor> grads = n.backward(scalar_tensor(g, DType::Float64));
  for (size_t i = 0; i < grads.size(); ++i)
    if (n.inputs[i] && grads[i].defined()) out.push_back({n.inputs[i].get(), grads[i].item()});
  return out;
}

// Visits the nodes in `order`, each once, with whatever gradient has reached
// it by then; a share that reaches a node already visited is stranded.
Walk walk_in_order(const std::vector<VariableImpl*>& order, VariableImpl* root,
                   const Names& names) {
  Walk w;
  std::map<const VariableImpl*, std::vector<double>> pending{{root, {1.0}}};
  std::map<const VariableImpl*, bool> done;
  for (VariableImpl* v : order) {
    double g = 0;
    std::string parts;
    for (double share : pending[v]) g += share, parts += (parts.empty() ? "" : " + ") + fmt(share);
    if (pending[v].size() > 1) parts += " = " + fmt(g);
    done[v] = true, w.grads[v] = g, ++w.visits;
    std::string sent;
    if (v->grad_fn)
      for (const auto& [input, share] : send(v, g)) {
        sent += (sent.empty() ? "" : ", ") + names.at(input) + ": " + fmt(share);
        if (done[input]) {
          w.stranded.push_back(fmt(share) + " from " + names.at(v) + " reaches " + names.at(input) +
                               " after " + names.at(input) + " has run");
          sent += " (stranded)";
        }
        pending[input].push_back(share);
      }
    char buf[160];
    std::snprintf(buf, sizeof buf, "  %2lld  %-2s  %-12s  %s", static_cast<long long>(w.visits),
                  names.at(v).c_str(), parts.c_str(), sent.c_str());
    w.lines.push_back(buf);
  }
  return w;
}

// Breadth-first from the root: each node the first time it is reached.
std::vector<VariableImpl*> breadth_first(VariableImpl* root) {
  std::vector<VariableImpl*> order;
  std::deque<VariableImpl*> queue{root};
  std::map<const VariableImpl*, bool> seen{{root, true}};
  while (!queue.empty()) {
    VariableImpl* v = queue.front();
    queue.pop_front();
    order.push_back(v);
    if (!v->grad_fn) continue;
    for (const auto& input : v->grad_fn->inputs)
      if (input && !seen[input.get()]) seen[input.get()] = true, queue.push_back(input.get());
  }
  return order;
}

// A backward that recurses: each share goes on down at once, so a node runs
// once per path from the root. Returns the leaves' sums; counts the runs.
void recurse(VariableImpl* v, double g, std::map<const VariableImpl*, double>& leaves,
             int64_t& runs) {
  ++runs;
  if (!v->grad_fn) {
    leaves[v] += g;
    return;
  }
  for (const auto& [input, share] : send(v, g)) recurse(input, share, leaves, runs);
}

// k diamonds in a row: y -> b = 2y -> (y + b) / 3 -> ...: two paths from each
// y to the next, so 2^k from the end back to x.
Variable diamonds(const Variable& x, int k) {
  Variable y = x;
  for (int i = 0; i < k; ++i) {
    Variable b = y * 2.0;
    y = (y + b) / 3.0;
  }
  return y;
}

void print_walk(const char* title, const Walk& w) {
  std::printf("%s\n  visit node  dL/dnode      sends back\n", title);
  for (const std::string& line : w.lines) std::printf("%s\n", line.c_str());
}

int run(int argc, char** argv) {
  cli::ArgParser args("lesson_02_topological_order",
                      "Lesson 2: the diamond b = 2a, c = a + b, L = b c walked by backward in "
                      "its topological order, in a wrong order, and by recursion.");
  const lessons::Lesson lesson = lessons::parse_lesson(args, "02_topological_order", argc, argv);

  Variable a(scalar_tensor(3, DType::Float64), true);
  Variable b = a * 2.0;   // 6
  Variable c = a + b;     // 9
  Variable loss = b * c;  // 54 = 6 a^2
  const Names names = {{a.impl().get(), "a"},
                       {b.impl().get(), "b"},
                       {c.impl().get(), "c"},
                       {loss.impl().get(), "L"}};
  std::printf("a = 3, b = 2a = %g, c = a + b = %g, L = b c = %g = 6 a^2, so dL/da = 12 a = 36\n\n",
              b.item(), c.item(), loss.item());
  VariableImpl* root = loss.impl().get();

  // The engine's order: forward_order reversed, each node after its users.
  std::vector<VariableImpl*> order = forward_order(root);
  std::reverse(order.begin(), order.end());
  const Walk right = walk_in_order(order, root, names);
  print_walk("the engine's order (every node after all the nodes that use it):", right);
  const double right_a = right.grads.at(a.impl().get());
  std::printf("dL/da = %g\n", right_a);

  const Walk wrong = walk_in_order(breadth_first(root), root, names);
  print_walk("\nbreadth-first from L (each node as soon as it is reached):", wrong);
  const double wrong_a = wrong.grads.at(a.impl().get());
  std::printf("dL/da = %g, short by %g\n", wrong_a, right_a - wrong_a);
  for (const std::string& s : wrong.stranded) std::printf("stranded: %s\n", s.c_str());

  // gradflow's own backward, for the record.
  loss.backward(Tensor(), /*retain_graph=*/true);
  const double engine_a = a.grad().item();
  std::printf("\ngradflow's backward: dL/da = %g\n", engine_a);
  lessons::claim("the engine's order gives dL/da = 12 a = 36, as gradflow's backward does",
                 right_a == 36 && engine_a == 36 && right.stranded.empty());
  // The missing part is the share stranded at b (c's 6) times db/da = 2.
  lessons::claim(
      "breadth-first gives 24: c's share 6 reaches b after b has run, and 2 x 6 "
      "never reaches a",
      wrong_a == 24 && wrong.stranded.size() == 1 && right_a - wrong_a == 2 * 6);
  // Why += : a's gradient is the sum of the shares from its two uses.
  std::printf("\na's two shares: %g through c (dc/da = 1) and %g through b (db/da = 2): %g\n",
              right.grads.at(c.impl().get()), 2 * right.grads.at(b.impl().get()), right_a);
  lessons::claim("a's gradient is the sum of its two shares, 6 and 30",
                 right.grads.at(c.impl().get()) + 2 * right.grads.at(b.impl().get()) == right_a);

  // Recursion gets the sum right, at the price of a run per path.
  std::map<const VariableImpl*, double> leaves;
  int64_t runs = 0;
  recurse(root, 1.0, leaves, runs);
  std::printf(
      "\nrecursion (each share passed on at once): dL/da = %g, %lld node runs for %zu "
      "nodes\n",
      leaves[a.impl().get()], static_cast<long long>(runs), order.size());
  std::printf("  diamonds   nodes   runs in order   runs by recursion\n");
  bool doubles = true;
  for (int k : {1, 2, 4, 8, 12}) {
    Variable x(scalar_tensor(1, DType::Float64), true);
    Variable end = diamonds(x, k);
    std::map<const VariableImpl*, double> got;
    int64_t n = 0;
    recurse(end.impl().get(), 1.0, got, n);
    const size_t nodes = forward_order(end.impl().get()).size();
    std::printf("  %8d   %5zu   %13zu   %17lld\n", k, nodes, nodes, static_cast<long long>(n));
    doubles = doubles && n >= (int64_t{1} << k);
  }
  lessons::claim(
      "recursion gets 36 too, but runs nodes 2^k times or more over k diamonds, "
      "where the engine runs each once",
      leaves[a.impl().get()] == 36 && doubles);

  // The drawing: each node's value and gradient (from the engine's pass).
  b.retain_grad(), c.retain_grad(), loss.retain_grad();
  a.zero_grad();
  GraphCapture capture;
  loss.backward();
  std::unordered_map<const void*, std::string> labels;
  for (const auto& [impl, name] : names) labels[impl] = name;
  labels[b.impl().get()] = "b = 2a", labels[c.impl().get()] = "c = a + b";
  labels[loss.impl().get()] = "L = b c";
  lessons::write_figure(lesson, "diamond.svg",
                        to_svg(loss, {.capture = &capture,
                                      .names = labels,
                                      .title = "The diamond: a and b each used twice"}));
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return cli::run_cli(argc, argv, run); }
