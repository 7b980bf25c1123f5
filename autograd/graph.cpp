// What a drawing of the graph needs: the capture (scopes and gradient norms),
// the graph read back from a root with its modules folded when asked, and
// the Graphviz text. The SVG layout is in graph_svg.cpp.
#include "autograd/graph.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <queue>

namespace gradflow {

namespace {

thread_local GraphCapture* current_capture = nullptr;
thread_local std::vector<ScopeEntry> open_scopes;
thread_local uint64_t scope_calls = 0;

const std::vector<ScopeEntry> kNoScopes;

// The Frobenius norm in double, whatever the dtype and layout.
double frobenius(const Tensor& t) {
  const Tensor c = t.contiguous();  // summed in place: a vector of a large gradient grows the heap
  double sum = 0;
  if (const float* p = c.dtype() == DType::Float32 ? c.data<float>() : nullptr)
    for (int64_t i = 0; i < c.numel(); ++i) sum += double(p[i]) * p[i];
  else
    for (double v : c.to_vector()) sum += v * v;
  return std::sqrt(sum);
}

// "-8", "0.9640": a single number as a box writes it.
std::string short_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// The graph with every op and leaf its own node.
Graph full_graph(const std::vector<VariableImpl*>& order, const GraphOptions& options) {
  Graph g;
  std::unordered_map<const VariableImpl*, size_t> index;
  for (VariableImpl* v : order) {
    index[v] = g.nodes.size();
    GraphNode n{.kind = v->grad_fn ? GraphNodeKind::kOp : GraphNodeKind::kLeaf,
                .label = v->grad_fn ? v->grad_fn->name : "leaf",
                .detail = shape_str(v->shape)};
    if (auto it = options.names.find(v); it != options.names.end())
      n.label = v->grad_fn ? n.label + ": " + it->second : it->second;
    if (v->data.defined() && v->data.numel() == 1) {  // one number: its value, its gradient
      n.detail = (v->shape.empty() ? "" : n.detail + " ") + "value " + short_number(v->data.item());
      if (v->grad.defined()) n.detail += ", grad " + short_number(v->grad.item());
    }
    g.nodes.push_back(std::move(n));
    if (!v->grad_fn) continue;
    const Node* node = v->grad_fn.get();
    for (size_t i = 0; i < node->inputs.size(); ++i) {
      if (!node->inputs[i]) continue;
      const GraphCapture* c = options.capture;
      g.edges.push_back({.from = index.at(node->inputs[i].get()),
                         .to = index[v],
                         .grad_norm = c ? c->grad_norm(node, i) : std::nan(""),
                         .structural_zero = c && c->rounding_zero(node, i)});
    }
  }
  return g;
}

// The ops inside one call of a scope collapse_depth levels deep become one
// node, with the leaves that feed only that call.
Graph folded_graph(const std::vector<VariableImpl*>& order, const Graph& full,
                   const GraphOptions& options) {
  const size_t n = order.size(), kNone = SIZE_MAX;
  const auto depth = static_cast<size_t>(options.collapse_depth);
  // group_of[i]: a key (owner, call) for node i, or none.
  std::vector<ScopeEntry> group_of(n);
  std::vector<bool> grouped(n, false);
  for (size_t i = 0; i < n; ++i) {
    if (!order[i]->grad_fn) continue;
    const auto& scopes = options.capture->scopes_of(order[i]->grad_fn.get());
    if (scopes.size() >= depth) group_of[i] = scopes[depth - 1], grouped[i] = true;
  }
  // A leaf joins a group when every op that uses it is in that one call.
  std::vector<std::vector<size_t>> users(n);
  for (const GraphEdge& e : full.edges) users[e.from].push_back(e.to);
  for (size_t i = 0; i < n; ++i) {
    if (order[i]->grad_fn || users[i].empty()) continue;
    bool same = true;
    for (size_t u : users[i])
      same = same && grouped[u] && group_of[u].call == group_of[users[i][0]].call;
    if (same) group_of[i] = group_of[users[i][0]], grouped[i] = true;
  }
  // New node ids: one per ungrouped node, one per group call.
  std::map<uint64_t, size_t> group_id;  // call -> new id
  std::vector<size_t> id(n, kNone);
  Graph g;
  std::vector<std::pair<int64_t, int64_t>> counts;  // ops, leaves of each new node
  std::vector<const void*> owners;
  for (size_t i = 0; i < n; ++i) {
    if (grouped[i]) {
      auto [it, fresh] = group_id.try_emplace(group_of[i].call, g.nodes.size());
      id[i] = it->second;
      if (fresh) {
        g.nodes.push_back({.kind = GraphNodeKind::kGroup, .label = "", .detail = ""});
        counts.push_back({0, 0});
        owners.push_back(group_of[i].owner);
      }
      (order[i]->grad_fn ? counts[id[i]].first : counts[id[i]].second) += 1;
    } else {
      id[i] = g.nodes.size();
      g.nodes.push_back(full.nodes[i]);
      counts.push_back({0, 0});
      owners.push_back(nullptr);
    }
  }
  // Edges between different new nodes, parallel ones folded: the norm of
  // their gradients taken together as one vector.
  std::map<std::pair<size_t, size_t>, size_t> edge_at;
  std::vector<size_t> outputs_from(g.nodes.size(), kNone);  // a group's single output node
  std::vector<bool> many_outputs(g.nodes.size(), false);
  for (const GraphEdge& e : full.edges) {
    const size_t a = id[e.from], b = id[e.to];
    if (a == b) continue;
    if (outputs_from[a] == kNone) outputs_from[a] = e.from;
    if (outputs_from[a] != e.from) many_outputs[a] = true;
    auto [it, fresh] = edge_at.try_emplace({a, b}, g.edges.size());
    if (fresh) {
      g.edges.push_back(e);
      g.edges.back().from = a, g.edges.back().to = b;
      continue;
    }
    GraphEdge& merged = g.edges[it->second];
    merged.folded += 1;
    merged.structural_zero = merged.structural_zero && e.structural_zero;
    if (std::isnan(merged.grad_norm))
      merged.grad_norm = e.grad_norm;
    else if (!std::isnan(e.grad_norm))
      merged.grad_norm = std::hypot(merged.grad_norm, e.grad_norm);
  }
  // Labels: the scope's name, "#k" when one owner has several calls here.
  std::unordered_map<const void*, int> calls_of;
  for (size_t k = 0; k < g.nodes.size(); ++k)
    if (owners[k]) calls_of[owners[k]] += 1;
  std::unordered_map<const void*, int> seen_calls;
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    if (!owners[k]) continue;
    auto name = options.names.find(owners[k]);
    std::string label = name != options.names.end() ? name->second : "module";
    if (calls_of[owners[k]] > 1) label += " #" + std::to_string(++seen_calls[owners[k]]);
    std::string detail = std::to_string(counts[k].first) + " ops";
    if (counts[k].second > 0) detail += ", " + std::to_string(counts[k].second) + " leaves";
    if (outputs_from[k] != kNone && !many_outputs[k])
      detail += " -> " + shape_str(order[outputs_from[k]]->shape);
    g.nodes[k].label = label, g.nodes[k].detail = detail;
  }
  // New node ids are in order of each node's first member, which need not be
  // a forward order: sort topologically (Kahn), ties by id.
  std::vector<std::vector<size_t>> out(g.nodes.size());
  std::vector<size_t> indegree(g.nodes.size(), 0);
  for (const GraphEdge& e : g.edges) out[e.from].push_back(e.to), ++indegree[e.to];
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t k = 0; k < g.nodes.size(); ++k)
    if (indegree[k] == 0) ready.push(k);
  std::vector<size_t> rank(g.nodes.size(), kNone);
  size_t next = 0;
  while (!ready.empty()) {
    const size_t k = ready.top();
    ready.pop();
    rank[k] = next++;
    for (size_t m : out[k])
      if (--indegree[m] == 0) ready.push(m);
  }
  if (next != g.nodes.size()) fail("build_graph: folding modules made a cycle (internal error)");
  Graph sorted;
  sorted.nodes.resize(g.nodes.size());
  for (size_t k = 0; k < g.nodes.size(); ++k) sorted.nodes[rank[k]] = std::move(g.nodes[k]);
  for (GraphEdge e : g.edges) {
    e.from = rank[e.from], e.to = rank[e.to];
    sorted.edges.push_back(e);
  }
  return sorted;
}

// The focus's ops, the leaves only they use, and their neighbours outside;
// edges with an end inside. Kept nodes stay in forward order.
Graph focused_graph(const std::vector<VariableImpl*>& order, const Graph& full,
                    const GraphOptions& options) {
  const size_t n = order.size();
  std::vector<bool> inside(n, false), kept(n, false);
  for (size_t i = 0; i < n; ++i) {
    if (!order[i]->grad_fn) continue;
    for (const ScopeEntry& s : options.capture->scopes_of(order[i]->grad_fn.get()))
      inside[i] = inside[i] || s.owner == options.focus;
  }
  std::vector<std::vector<size_t>> users(n);
  for (const GraphEdge& e : full.edges) users[e.from].push_back(e.to);
  for (size_t i = 0; i < n; ++i) {
    if (order[i]->grad_fn || users[i].empty()) continue;
    bool only_inside = true;
    for (size_t u : users[i]) only_inside = only_inside && inside[u];
    inside[i] = only_inside;
  }
  for (const GraphEdge& e : full.edges)
    if (inside[e.from] || inside[e.to]) kept[e.from] = kept[e.to] = true;
  for (size_t i = 0; i < n; ++i) kept[i] = kept[i] || inside[i];
  std::vector<size_t> id(n, SIZE_MAX);
  Graph g;
  for (size_t i = 0; i < n; ++i)
    if (kept[i]) id[i] = g.nodes.size(), g.nodes.push_back(full.nodes[i]);
  for (GraphEdge e : full.edges) {
    if (!inside[e.from] && !inside[e.to]) continue;
    e.from = id[e.from], e.to = id[e.to];
    g.edges.push_back(e);
  }
  return g;
}

std::string dot_quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

GraphCapture::GraphCapture() : previous_(current_capture) { current_capture = this; }
GraphCapture::~GraphCapture() { current_capture = previous_; }
GraphCapture* current_graph_capture() { return current_capture; }

const std::vector<ScopeEntry>& GraphCapture::scopes_of(const Node* node) const {
  auto it = scopes_.find(node);
  return it == scopes_.end() ? kNoScopes : it->second;
}

// norms_[node]: what reached it, the unit roundoff of its dtype, then what it
// sent to each input.
double GraphCapture::grad_norm(const Node* node, size_t input) const {
  auto it = norms_.find(node);
  return it == norms_.end() || input + 2 >= it->second.size() ? std::nan("")
                                                              : it->second[input + 2];
}

double GraphCapture::received_norm(const Node* node) const {
  auto it = norms_.find(node);
  return it == norms_.end() ? std::nan("") : it->second[0];
}

bool GraphCapture::rounding_zero(const Node* node, size_t input) const {
  auto it = norms_.find(node);
  return it != norms_.end() && input + 2 < it->second.size() &&
         it->second[input + 2] <= 64 * it->second[1] * it->second[0];
}

void GraphCapture::note_node(const Node* node) {
  // A node freed earlier may have left its address to this one: overwrite.
  scopes_[node] = open_scopes;
  norms_.erase(node);
}

void GraphCapture::note_gradients(const Node* node, const Tensor& received,
                                  const std::vector<Tensor>& grads) {
  std::vector<double>& norms = norms_[node];
  norms.assign(grads.size() + 2, std::nan(""));
  norms[0] = frobenius(received);
  norms[1] = received.dtype() == DType::Float64 ? 0x1p-53 : 0x1p-24;
  for (size_t i = 0; i < grads.size(); ++i)
    if (grads[i].defined()) norms[i + 2] = frobenius(grads[i]);
}

GraphScope::GraphScope(const void* owner) : pushed_(current_capture != nullptr) {
  if (pushed_) open_scopes.push_back({owner, ++scope_calls});
}
GraphScope::~GraphScope() {
  if (pushed_) open_scopes.pop_back();
}

Graph build_graph(const Variable& root, const GraphOptions& options) {
  if (!root.defined()) fail("build_graph: undefined variable");
  if (options.collapse_depth < 0)
    fail("build_graph: collapse_depth must be 0 or more, got ", options.collapse_depth);
  if (options.collapse_depth > 0 && !options.capture)
    fail("build_graph: collapse_depth ", options.collapse_depth,
         " needs the capture the graph was recorded under (its scopes)");
  if (options.focus && !options.capture)
    fail("build_graph: focus needs the capture the graph was recorded under (its scopes)");
  if (options.focus && options.collapse_depth > 0)
    fail("build_graph: focus draws its module op by op; collapse_depth ", options.collapse_depth,
         " would fold it: pass one or the other");
  const std::vector<VariableImpl*> order = forward_order(root.impl().get());
  Graph full = full_graph(order, options);
  if (options.focus) return focused_graph(order, full, options);
  if (options.collapse_depth == 0) return full;
  return folded_graph(order, full, options);
}

std::string format_norm(double norm) {
  if (std::isnan(norm)) return "nan";
  if (norm == 0) return "0";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1e", norm);
  return buf;
}

NormRange norm_range(const Graph& graph) {
  NormRange r{.lo = INFINITY, .hi = 0};
  for (const GraphEdge& e : graph.edges)  // a zero by structure is no gradient's size
    if (e.grad_norm > 0 && std::isfinite(e.grad_norm) && !e.structural_zero)
      r.lo = std::min(r.lo, e.grad_norm), r.hi = std::max(r.hi, e.grad_norm);
  if (r.hi == 0) r.lo = 0;
  return r;
}

double edge_width(double norm, const NormRange& range) {
  if (std::isnan(norm)) return 1;
  if (!(norm > 0) || !std::isfinite(norm) || range.hi <= 0) return 0.5;
  const double t =
      range.hi > range.lo ? std::log(norm / range.lo) / std::log(range.hi / range.lo) : 1;
  return 0.5 + 5.5 * std::clamp(t, 0.0, 1.0);
}

std::string to_dot(const Graph& graph, const std::string& title) {
  std::string out = "digraph gradflow {\n  rankdir=LR;\n";
  if (!title.empty()) out += "  label=" + dot_quote(title) + "; labelloc=t;\n";
  out += "  node [shape=box, style=\"rounded,filled\", fillcolor=white, fontname=sans];\n";
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const GraphNode& n = graph.nodes[i];
    out += "  n" + std::to_string(i) + " [label=" + dot_quote(n.label + "\n" + n.detail);
    if (n.kind == GraphNodeKind::kLeaf) out += ", fillcolor=\"#fff3c4\"";
    if (n.kind == GraphNodeKind::kGroup) out += ", fillcolor=\"#e3eefa\"";
    out += "];\n";
  }
  const NormRange range = norm_range(graph);
  for (const GraphEdge& e : graph.edges) {
    out += "  n" + std::to_string(e.from) + " -> n" + std::to_string(e.to);
    if (e.structural_zero) {
      out += " [label=\"~0\", style=dotted, color=grey];\n";
      continue;
    }
    if (!std::isnan(e.grad_norm)) {
      char width[32];
      std::snprintf(width, sizeof width, "%.2f", edge_width(e.grad_norm, range));
      out += " [label=" + dot_quote(format_norm(e.grad_norm)) + ", penwidth=" + width + "]";
    }
    out += ";\n";
  }
  return out + "}\n";
}

std::string to_dot(const Variable& root, const GraphOptions& options) {
  return to_dot(build_graph(root, options), options.title);
}

std::string to_svg(const Variable& root, const GraphOptions& options) {
  return to_svg(build_graph(root, options), options.title);
}

}  // namespace gradflow
