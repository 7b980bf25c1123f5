// Seeing the graph: the ops a backward walks, with the gradient that flowed
// along each edge, as Graphviz text (to_dot) or as a standalone SVG (to_svg)
// that needs no Graphviz.
//
//   GraphCapture capture;                  // from here on, this thread records
//   Variable loss = sum(mul(w, w));        //   which module each op ran in,
//   loss.backward();                       //   and each gradient's norm
//   std::string svg = to_svg(loss, {.capture = &capture, .names = {{w.impl().get(), "w"}}});
//
// A box per op (its name and output shape), a box per leaf that requires grad
// (its name when `names` has one: nn::graph_names(model) gives every
// parameter's dotted name), and for a single number its value and, where
// kept (a leaf's, or retain_grad()), its gradient: micrograd's picture. An
// edge runs from an input to the op that used it, in the direction of the
// forward pass; after a backward under a capture it is labelled with the norm
// of the gradient the backward sent back along it, and drawn thicker for a
// larger one (log scale). This is where a vanishing gradient shows: an edge
// that narrows to a hairline, orange below 1e-6 of the largest. An edge whose
// gradient is zero up to the rounding of what reached its op (a key's bias,
// which every softmax row ignores; a product with 0) is a zero by structure,
// not a vanished gradient: grey, dotted, "~0".
//
// While a capture lives and gradients are on, fused_attention runs as its
// composed reference (autograd/attention.cpp), so that a drawing shows the
// scale, the mask, the softmax and the two products, each edge with its
// gradient; the two paths' gradients agree to rounding (Graph.ACapture...).
//
// Inputs that require no grad (data, masks) are not in the graph: no
// gradient flows to them. A capture sees the ops of its own thread only
// (backward_in_parallel's parts run elsewhere).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

#include "autograd/variable.h"

namespace gradflow {

// One scope an op ran in: its owner and which of the owner's calls (a module
// used twice, as tied weights are, gives two boxes, not one with a cycle).
struct ScopeEntry {
  const void* owner = nullptr;
  uint64_t call = 0;  // unique per GraphScope opened on this thread
};

// While one lives on this thread, ops record the GraphScopes they run in and
// backward records the norm of every gradient it passes to an op's input.
// Without one, neither costs more than a check. Captures nest; the innermost
// records. REQUIRES: the graph is drawn before the capture is destroyed.
class GraphCapture {
 public:
  GraphCapture();
  ~GraphCapture();
  GraphCapture(const GraphCapture&) = delete;
  GraphCapture& operator=(const GraphCapture&) = delete;

  // The scopes node ran in, outermost first (empty: none, or not recorded).
  const std::vector<ScopeEntry>& scopes_of(const Node* node) const;
  // The Frobenius norm of the gradient backward sent to input i of node;
  // NaN when none was recorded (no backward yet, or that input got none).
  double grad_norm(const Node* node, size_t input) const;

  // The norm of the gradient that reached node's output; NaN when none was.
  double received_norm(const Node* node) const;
  // grad_norm(node, input) is at most 64 units of rounding of received_norm:
  // zero but for rounding, whatever reached the op.
  bool rounding_zero(const Node* node, size_t input) const;

  // Called by make_result and the engine (variable.cpp, engine.cpp).
  void note_node(const Node* node);
  void note_gradients(const Node* node, const Tensor& received, const std::vector<Tensor>& grads);

 private:
  std::unordered_map<const Node*, std::vector<ScopeEntry>> scopes_;
  // Per node: the norm it received, then the norm it sent to each input.
  std::unordered_map<const Node*, std::vector<double>> norms_;
  GraphCapture* previous_;
};

// The innermost capture of this thread, or null.
GraphCapture* current_graph_capture();

// Ops recorded while one lives run "inside" owner (a module: nn's layers
// open one in forward), which lets a drawing fold them into one box. Costs a
// check when no capture is on.
class GraphScope {
 public:
  explicit GraphScope(const void* owner);
  ~GraphScope();
  GraphScope(const GraphScope&) = delete;
  GraphScope& operator=(const GraphScope&) = delete;

 private:
  bool pushed_;
};

struct GraphOptions {
  const GraphCapture* capture = nullptr;  // the gradient norms and scopes; none: structure only
  // Names of leaves and of ops' results (by VariableImpl address: an op's
  // box reads "mul: S"), and of scopes (by owner).
  std::unordered_map<const void*, std::string> names = {};
  // 0: every op its own box. d >= 1: the ops that ran inside a scope d levels
  // deep are one box named after it (a model's forward is level 1, its
  // encoder level 2, ...), with the leaves only it uses.
  int collapse_depth = 0;
  // Non-null: only the ops that ran inside a call of this owner (at any depth
  // below it: a block and its layers), the leaves only they use, and the nodes
  // just outside that feed them or use their results, so the gradient coming
  // in and going out shows. One attention block of a whole model, op by op.
  // Needs the capture; not with collapse_depth.
  const void* focus = nullptr;
  std::string title = "";  // the SVG's heading
};

enum class GraphNodeKind { kOp, kLeaf, kGroup };

struct GraphNode {
  GraphNodeKind kind = GraphNodeKind::kOp;
  std::string label;   // the op's name, the leaf's name ("leaf" if unnamed), the scope's
  std::string detail;  // the output shape "(2, 3)", or for a group "12 ops, 4 leaves"
};

struct GraphEdge {
  size_t from = 0, to = 0;  // node indices: the input, the node that used it
  // The norm of the gradient sent back along this edge (edges folded into one
  // count as one vector); NaN when not recorded.
  double grad_norm = std::numeric_limits<double>::quiet_NaN();
  int64_t folded = 1;  // how many edges of the full graph this one stands for
  // The norm is at most 64 units of rounding (of the input's dtype) of the
  // gradient that reached the op: a zero by structure (every folded edge).
  bool structural_zero = false;
};

// The graph behind root, nodes in forward order (every edge runs from a lower
// index to a higher one; root is last). Edges in the order the ops listed
// their inputs.
struct Graph {
  std::vector<GraphNode> nodes;
  std::vector<GraphEdge> edges;
};
Graph build_graph(const Variable& root, const GraphOptions& options = {});

// Graphviz text: `dot -Tsvg graph.dot > graph.svg`.
std::string to_dot(const Graph& graph, const std::string& title = "");
std::string to_dot(const Variable& root, const GraphOptions& options = {});

// A standalone SVG, laid out in layers left to right (inputs left, root
// right), wrapped into rows like text when wider than a screen, with a
// legend for the edge widths. graph_svg.cpp.
std::string to_svg(const Graph& graph, const std::string& title = "");
std::string to_svg(const Variable& root, const GraphOptions& options = {});

// "1.2e-03", "0", "nan": how an edge's norm is written in both formats.
std::string format_norm(double norm);

// An edge's width in both formats: 0.5 for the smallest positive norm of the
// graph (and for 0 or Inf) to 6 for the largest, on a log scale; 1 when no
// norm was recorded.
struct NormRange {
  double lo = 0, hi = 0;  // the smallest and largest finite positive norms; 0, 0 if none
};
NormRange norm_range(const Graph& graph);
double edge_width(double norm, const NormRange& range);

// to_svg with the widths spanning `range` rather than the graph's own norms:
// drawings set side by side pass one range, so one width means one norm.
// Rows wrap at max_width; without the legend, the caller draws one for all.
std::string to_svg(const Graph& graph, const std::string& title, const NormRange& range,
                   double max_width = 2400, bool legend = true);

}  // namespace gradflow
