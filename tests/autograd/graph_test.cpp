// The graph read back and drawn: nodes, edges and the gradient norms on them,
// checked on graphs small enough to work out by hand.
#include "autograd/graph.h"

#include <algorithm>
#include <cmath>

#include "check.h"

namespace gradflow {
namespace {

Variable leaf(const std::vector<double>& values) {
  return Variable(from_vector(values, DType::Float64), true);
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// loss = sum(w * w), w = [1, 2, 3]: sum sends ones(3) back to mul (norm
// sqrt 3), mul sends g * w = [1, 2, 3] along each of its two edges to w
// (norm sqrt 14 each).
TEST(Graph, NodesEdgesAndTheNormsOnThem) {
  Variable w = leaf({1, 2, 3});
  GraphCapture capture;
  Variable loss = sum(w * w);
  loss.backward();
  const Graph g = build_graph(loss, {.capture = &capture, .names = {{w.impl().get(), "w"}}});
  ASSERT_EQ(g.nodes.size(), 3u);
  EXPECT_EQ(g.nodes[0].kind, GraphNodeKind::kLeaf);
  EXPECT_EQ(g.nodes[0].label, "w");
  EXPECT_EQ(g.nodes[0].detail, "(3)");
  EXPECT_EQ(g.nodes[1].kind, GraphNodeKind::kOp);
  EXPECT_EQ(g.nodes[1].label, "mul");
  EXPECT_EQ(g.nodes[1].detail, "(3)");
  EXPECT_EQ(g.nodes[2].label, "sum");
  EXPECT_EQ(g.nodes[2].detail, "value 14");  // a single number: its value, not "()"
  ASSERT_EQ(g.edges.size(), 3u);
  EXPECT_EQ(g.edges[0].from, 0u);
  EXPECT_EQ(g.edges[0].to, 1u);
  EXPECT_EQ(g.edges[1].from, 0u);
  EXPECT_EQ(g.edges[1].to, 1u);
  EXPECT_EQ(g.edges[2].from, 1u);
  EXPECT_EQ(g.edges[2].to, 2u);
  EXPECT_DOUBLE_EQ(g.edges[0].grad_norm, std::sqrt(14.0));
  EXPECT_DOUBLE_EQ(g.edges[1].grad_norm, std::sqrt(14.0));
  EXPECT_DOUBLE_EQ(g.edges[2].grad_norm, std::sqrt(3.0));
}

// Without a capture, or before backward, the structure is there and the
// norms are not; inputs that need no gradient are not in the graph.
TEST(Graph, NoNormsWithoutACaptureOrBeforeBackward) {
  Variable w = leaf({1, -2});
  Variable x(from_vector({3, 4}, DType::Float64));  // data: no gradient
  GraphCapture capture;
  Variable loss = sum(w * x);
  const Graph before = build_graph(loss, {.capture = &capture});
  ASSERT_EQ(before.nodes.size(), 3u);
  EXPECT_EQ(before.nodes[0].label, "leaf");  // unnamed
  ASSERT_EQ(before.edges.size(), 2u);
  for (const GraphEdge& e : before.edges) EXPECT_TRUE(std::isnan(e.grad_norm));
  loss.backward();
  // After backward: w's edge carries g * x = [3, 4], norm 5.
  EXPECT_DOUBLE_EQ(build_graph(loss, {.capture = &capture}).edges[0].grad_norm, 5.0);
  EXPECT_TRUE(std::isnan(build_graph(loss).edges[0].grad_norm));
}

// Two ops inside one scope fold into one box with the leaf only they use;
// the edge out of it carries sum's gradient, ones(3), norm sqrt 3.
TEST(Graph, ScopesFoldIntoOneBox) {
  Variable w = leaf({1, 2, 3}), b = leaf({1, 1, 1});
  const int block = 0;
  GraphCapture capture;
  Variable y;
  {
    GraphScope scope(&block);
    y = exp(w * w);
  }
  Variable loss = sum(y + b);
  loss.backward();
  GraphOptions options{.capture = &capture,
                       .names = {{&block, "block"}, {b.impl().get(), "b"}},
                       .collapse_depth = 1};
  const Graph g = build_graph(loss, options);
  ASSERT_EQ(g.nodes.size(), 4u);  // block, b, add, sum
  EXPECT_EQ(g.nodes[0].kind, GraphNodeKind::kGroup);
  EXPECT_EQ(g.nodes[0].label, "block");
  EXPECT_EQ(g.nodes[0].detail, "2 ops, 1 leaves -> (3)");
  EXPECT_EQ(g.nodes[1].label, "b");
  EXPECT_EQ(g.nodes[2].label, "add");
  EXPECT_EQ(g.nodes[3].label, "sum");
  ASSERT_EQ(g.edges.size(), 3u);
  EXPECT_EQ(g.edges[0].from, 0u);
  EXPECT_EQ(g.edges[0].to, 2u);
  EXPECT_DOUBLE_EQ(g.edges[0].grad_norm, std::sqrt(3.0));
  // Unfolded, the same graph has every op: w, mul, exp, b, add, sum.
  options.collapse_depth = 0;
  EXPECT_EQ(build_graph(loss, options).nodes.size(), 6u);
  // Deeper than any scope: nothing folds.
  options.collapse_depth = 2;
  EXPECT_EQ(build_graph(loss, options).nodes.size(), 6u);
}

// A scope entered twice (a module called twice, as tied weights are) gives
// two boxes, numbered, not one box with a cycle through the op between.
TEST(Graph, AScopeCalledTwiceIsTwoBoxes) {
  Variable w = leaf({0.5, -1});
  const int layer = 0;
  GraphCapture capture;
  auto apply = [&](const Variable& x) {
    GraphScope scope(&layer);
    return tanh(x * w);
  };
  Variable loss = sum(apply(exp(apply(w))));
  loss.backward();
  const Graph g =
      build_graph(loss, {.capture = &capture, .names = {{&layer, "layer"}}, .collapse_depth = 1});
  std::vector<std::string> labels;
  for (const GraphNode& n : g.nodes) labels.push_back(n.label);
  EXPECT_EQ(labels, (std::vector<std::string>{"leaf", "layer #1", "exp", "layer #2", "sum"}));
  for (const GraphEdge& e : g.edges) EXPECT_LT(e.from, e.to);
}

// Parallel edges between two boxes fold into one whose norm is that of their
// gradients taken together: w feeds the scope twice, ones(2) along each edge
// (norm sqrt 2), so the folded edge has norm 2. w is used outside the scope
// too, so it stays a box of its own.
TEST(Graph, FoldedEdgesAddInQuadrature) {
  Variable w = leaf({1, 2});
  const int outer = 0;
  GraphCapture capture;
  Variable y;
  {
    GraphScope scope(&outer);
    y = w + w * 1.0;
  }
  Variable loss = sum(y) + sum(w);
  loss.backward();
  const Graph g = build_graph(loss, {.capture = &capture, .collapse_depth = 1});
  std::vector<std::string> labels;
  for (const GraphNode& n : g.nodes) labels.push_back(n.label);
  EXPECT_EQ(labels, (std::vector<std::string>{"leaf", "module", "sum", "sum", "add"}));
  EXPECT_EQ(g.nodes[1].detail, "2 ops -> (2)");  // no name given: "module"
  ASSERT_EQ(g.edges.size(), 5u);
  const GraphEdge& into = g.edges[0];
  EXPECT_EQ(into.from, 0u);
  EXPECT_EQ(into.to, 1u);
  EXPECT_EQ(into.folded, 2);
  EXPECT_DOUBLE_EQ(into.grad_norm, 2.0);
}

// A focus keeps one module's ops op by op, the leaf only it uses, and the
// nodes just outside (the op feeding it, the op using its result), so the
// gradient coming in and going out shows; w and b, which touch only ops
// outside, and the final sum are left out.
TEST(Graph, AFocusKeepsOneModuleAndItsNeighbours) {
  Variable w = leaf({1, 2, 3}), v = leaf({1, 1, 1}), b = leaf({0, 0, 0});
  const int block = 0;
  GraphCapture capture;
  Variable pre = w * 2.0;
  Variable y;
  {
    GraphScope scope(&block);
    y = exp(pre * v);
  }
  Variable loss = sum(y + b);
  loss.backward();
  const Graph g =
      build_graph(loss, {.capture = &capture, .names = {{v.impl().get(), "v"}}, .focus = &block});
  std::vector<std::string> labels;
  for (const GraphNode& n : g.nodes) labels.push_back(n.label);
  EXPECT_EQ(labels, (std::vector<std::string>{"mul", "v", "mul", "exp", "add"}));
  ASSERT_EQ(g.edges.size(), 4u);
  for (const GraphEdge& e : g.edges) EXPECT_LT(e.from, e.to);
  // add sends ones(3) back to exp: norm sqrt 3. mul sends exp(2w) * pre to v.
  EXPECT_EQ(g.edges.back().from, 3u);
  EXPECT_EQ(g.edges.back().to, 4u);
  EXPECT_DOUBLE_EQ(g.edges.back().grad_norm, std::sqrt(3.0));
  double to_v = 0;
  for (double p : {2.0, 4.0, 6.0}) to_v += std::exp(p) * p * std::exp(p) * p;
  for (const GraphEdge& e : g.edges) {
    if (e.from == 1) {
      EXPECT_NEAR(e.grad_norm, std::sqrt(to_v), 1e-9 * std::sqrt(to_v));
    }
  }
  // Drawn on a range shared with another drawing, the widest edge of this
  // one is narrower than it would be on its own.
  const NormRange wider{.lo = 1e-3, .hi = 1e6};
  EXPECT_LT(edge_width(norm_range(g).hi, wider), edge_width(norm_range(g).hi, norm_range(g)));
  EXPECT_EQ(count(to_svg(g, "shared", wider), "class=\"edge\""), 4u);
  EXPECT_NE(to_svg(g, "shared", wider), to_svg(g, "shared"));
}

TEST(Graph, DotNamesEveryNodeAndLabelsEveryEdge) {
  Variable w = leaf({1, 2, 3});
  GraphCapture capture;
  Variable loss = sum(w * w);
  loss.backward();
  const std::string dot =
      to_dot(loss, {.capture = &capture, .names = {{w.impl().get(), "w \"the\" weight"}}});
  EXPECT_EQ(dot.rfind("digraph gradflow {", 0), 0u);
  EXPECT_NE(dot.find("rankdir=LR"), std::string::npos);
  EXPECT_NE(dot.find("n0 [label=\"w \\\"the\\\" weight\n(3)\", fillcolor=\"#fff3c4\"]"),
            std::string::npos);
  EXPECT_NE(dot.find("n1 [label=\"mul\n(3)\"]"), std::string::npos);
  EXPECT_EQ(count(dot, "n0 -> n1 [label=\"3.7e+00\", penwidth=6.00]"), 2u);
  EXPECT_EQ(count(dot, "n1 -> n2 [label=\"1.7e+00\", penwidth=0.50]"), 1u);
  EXPECT_EQ(dot.substr(dot.size() - 2), "}\n");
}

TEST(Graph, SvgHasABoxPerNodeAndACurvePerEdge) {
  Variable w = leaf({1, 2, 3});
  GraphCapture capture;
  Variable loss = sum(w * w);
  loss.backward();
  const std::string svg = to_svg(loss, {.capture = &capture, .title = "w <squared>"});
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_EQ(count(svg, "class=\"node\""), 3u);
  EXPECT_EQ(count(svg, "class=\"edge\""), 3u);
  EXPECT_EQ(count(svg, ">3.7e+00</text>"), 2u);
  EXPECT_EQ(count(svg, ">1.7e+00</text>"), 1u);
  EXPECT_NE(svg.find("w &lt;squared&gt;"), std::string::npos);
  EXPECT_NE(svg.find("stroke-width=\"6.0\""), std::string::npos);  // the largest norm
  EXPECT_NE(svg.find("stroke-width=\"0.5\""), std::string::npos);  // the smallest
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
}

// Where the gradient stops: an edge below 1e-6 of the largest is drawn in
// the warning colour; one that is zero whatever reached its op (c * 0) is a
// zero by structure, grey and dotted, "~0"; the others are neither.
TEST(Graph, SvgTellsAVanishedGradientFromAZeroByStructure) {
  Variable a = leaf({1, 2}), b = leaf({3, 4}), c = leaf({5});
  GraphCapture capture;
  Variable loss = sum(a * 1e-9) + sum(b) + sum(c * 0.0);
  loss.backward();
  const Graph g = build_graph(loss, {.capture = &capture});
  int zeros = 0;
  for (const GraphEdge& e : g.edges) zeros += e.structural_zero;
  EXPECT_EQ(zeros, 1);
  const std::string svg = to_svg(g);
  EXPECT_EQ(count(svg, "class=\"edge\" d="), g.edges.size());
  EXPECT_EQ(count(svg, "stroke=\"#d55e00\""), 1u);  // a's edge: vanished
  EXPECT_EQ(count(svg, "stroke-dasharray"), 1u);    // c's: zero by structure
  EXPECT_EQ(count(svg, ">~0</text>"), 1u);
  EXPECT_EQ(count(svg, ">1.4e-09</text>"), 1u);  // ||1e-9 * [1, 1]||
  EXPECT_NE(to_dot(g).find("[label=\"~0\", style=dotted"), std::string::npos);
}

// A shift added to every score of a softmax row changes nothing, so its
// gradient is zero up to rounding (as a key's bias in attention): in float32
// it comes out near 1e-8 of what reached the add, and is drawn as a zero by
// structure, while x's gradient, as small as it may be, is not.
TEST(Graph, AShiftBeforeASoftmaxIsAZeroByStructure) {
  Generator gen(3);
  Variable x(randn({3, 4}, gen), true), shift(randn({3, 1}, gen), true);
  Variable weights(randn({3, 4}, gen));
  GraphCapture capture;
  Variable loss = sum(softmax(x + shift, -1) * weights);
  loss.backward();
  const Graph g = build_graph(
      loss, {.capture = &capture, .names = {{x.impl().get(), "x"}, {shift.impl().get(), "s"}}});
  for (const GraphEdge& e : g.edges) {
    const std::string& from = g.nodes[e.from].label;
    EXPECT_EQ(e.structural_zero, from == "s") << from << " " << e.grad_norm;
    if (from == "s") {
      EXPECT_GT(e.grad_norm, 0);  // not exactly 0: rounding
      EXPECT_LT(e.grad_norm, 1e-5);
    }
  }
}

// micrograd's picture: a single number's box shows its value, and its
// gradient where one is kept (a leaf's; an intermediate's with retain_grad);
// a name given to an op's result joins the op's name.
TEST(Graph, ASingleNumberShowsItsValueAndGradient) {
  Variable a(scalar_tensor(-4, DType::Float64), true), b(scalar_tensor(2, DType::Float64), true);
  Variable e = a * b;  // -8
  e.retain_grad();
  Variable d = e + 10.0;      // 2, held: an intermediate nobody holds keeps no value
  Variable loss = pow(d, 2);  // 4: dL/de = 2 (e + 10) = 4
  loss.backward();
  const Graph g = build_graph(
      loss, {.names = {{a.impl().get(), "a"}, {b.impl().get(), "b"}, {e.impl().get(), "e"}}});
  std::vector<std::string> boxes;
  for (const GraphNode& n : g.nodes) boxes.push_back(n.label + " | " + n.detail);
  EXPECT_EQ(boxes, (std::vector<std::string>{"a | value -4, grad 8", "b | value 2, grad -16",
                                             "mul: e | value -8, grad 4", "add | value 2",
                                             "pow | value 4"}));
}

// A chain too long for one row wraps into rows no wider than a screen, each
// edge into the next row running back under the row it leaves.
TEST(Graph, ALongGraphWrapsIntoRowsThatFitAScreen) {
  Variable x = leaf({1, 2});
  Variable y = x;
  for (int i = 0; i < 120; ++i) y = y * 1.0;
  GraphCapture capture;
  Variable loss = sum(y);
  loss.backward();
  const std::string svg = to_svg(loss, {.capture = &capture});
  const double width = std::stod(svg.substr(svg.find("width=\"") + 7));
  const double height = std::stod(svg.substr(svg.find("height=\"") + 8));
  EXPECT_LE(width, 2400);
  EXPECT_GT(width, 2000);  // the rows are filled
  // 122 boxes of about 100 px and a gap: six or so rows, an edge back each.
  const size_t back = count(svg, "class=\"back\"");
  EXPECT_GE(back, 4u);
  EXPECT_LE(back, 8u);
  EXPECT_GT(height, 128 + static_cast<double>(back) * 36);  // the rows stack
  EXPECT_EQ(count(svg, "class=\"edge\""), 121u);
}

// While a capture records, fused attention runs as its composed reference,
// so a drawing shows the softmax with its gradient on every edge; without
// one it is one op. The gradients are the same either way, to rounding.
TEST(Graph, ACaptureDrawsAttentionAsItsOps) {
  Generator gen(5);
  const auto input = [&](Shape s) { return Variable(randn(s, gen, DType::Float64), true); };
  Variable q = input({2, 3, 4}), k = input({2, 5, 4}), v = input({2, 5, 4});
  const auto labels = [](const Graph& g) {
    std::vector<std::string> out;
    for (const GraphNode& n : g.nodes) out.push_back(n.label);
    return out;
  };
  Variable fused = sum(fused_attention(q, k, v, 0.5, Tensor()));
  fused.backward();
  const Tensor dq = q.grad().clone();
  q.zero_grad();
  EXPECT_EQ(labels(build_graph(fused)).size(), 5u);  // q, k, v, fused_attention, sum
  EXPECT_EQ(labels(build_graph(fused))[3], "fused_attention");
  GraphCapture capture;
  Variable drawn = sum(fused_attention(q, k, v, 0.5, Tensor()));
  drawn.backward();
  const std::vector<std::string> ops = labels(build_graph(drawn, {.capture = &capture}));
  for (const char* op : {"transpose", "matmul", "mul", "softmax"})
    EXPECT_NE(std::find(ops.begin(), ops.end(), op), ops.end()) << op;
  EXPECT_EQ(std::find(ops.begin(), ops.end(), "fused_attention"), ops.end());
  testing::expect_near_vec(q.grad(), dq.to_vector(), 1e-12);
}

TEST(Graph, WithoutNormsTheLegendSaysHowToGetThem) {
  Variable w = leaf({1});
  const std::string svg = to_svg(exp(w));
  EXPECT_NE(svg.find("No gradient norms recorded"), std::string::npos);
  EXPECT_EQ(count(svg, "class=\"norm\""), 0u);
}

// Scopes cost nothing and record nothing without a capture; captures nest.
TEST(Graph, ScopesAndCapturesNest) {
  const int a = 0;
  EXPECT_EQ(current_graph_capture(), nullptr);
  Variable w = leaf({1});
  Variable before;
  {
    GraphScope scope(&a);
    before = exp(w);
  }
  GraphCapture outer;
  EXPECT_TRUE(outer.scopes_of(before.impl()->grad_fn.get()).empty());
  {
    GraphCapture inner;
    EXPECT_EQ(current_graph_capture(), &inner);
    GraphScope scope(&a);
    Variable y = exp(w);
    ASSERT_EQ(inner.scopes_of(y.impl()->grad_fn.get()).size(), 1u);
    EXPECT_EQ(inner.scopes_of(y.impl()->grad_fn.get())[0].owner, &a);
    EXPECT_TRUE(outer.scopes_of(y.impl()->grad_fn.get()).empty());
  }
  EXPECT_EQ(current_graph_capture(), &outer);
}

TEST(Graph, BadCallsThrow) {
  EXPECT_THROW(build_graph(Variable()), Error);
  Variable w = leaf({1});
  EXPECT_THROW(build_graph(exp(w), {.collapse_depth = 1}), Error);  // no capture
  GraphCapture capture;
  EXPECT_THROW(build_graph(exp(w), {.capture = &capture, .collapse_depth = -1}), Error);
  const int block = 0;
  EXPECT_THROW(build_graph(exp(w), {.focus = &block}), Error);  // no capture
  EXPECT_THROW(build_graph(exp(w), {.capture = &capture, .collapse_depth = 1, .focus = &block}),
               Error);
}

// A leaf alone is a graph of one node and no edges.
TEST(Graph, ALeafAlone) {
  Variable w = leaf({1, 2});
  const Graph g = build_graph(w);
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_TRUE(g.edges.empty());
  EXPECT_EQ(count(to_svg(g), "class=\"node\""), 1u);
}

}  // namespace
}  // namespace gradflow
