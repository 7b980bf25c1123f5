// gradient_flow.svg: where the gradient stops. The key layer's part of one
// training step's backward graph, op by op (autograd/graph.h, `focus`), for
// the anchor arms (unscaled attention and 1/sqrt(d_k)) at the train part's
// largest d_k, at initialisation and late in training; and the norms on it
// that the report quotes: the gradient that reaches the softmax's input, the
// logits, against the one that leaves the layer's output. gradient_flow.csv
// holds every drawn edge's norm, so the quoted ones can be checked.
//
// The drawings stand one under another, so that the same op sits at about the
// same place in each, with one scale of widths for all of them: an edge as
// wide in two drawings carried a gradient of the same norm.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "examples/study/parts.h"

namespace gradflow::study {

namespace {

const std::vector<FlowGraph>* flows_of(const TrainResult& b, const std::string& task,
                                       const std::string& mode) {
  for (const auto& [run, flows] : b.flows)
    if (run.task == task && run.mode == mode) return &flows;
  return nullptr;
}

const FlowGraph* at_step(const std::vector<FlowGraph>& flows, int64_t step) {
  for (const FlowGraph& f : flows)
    if (f.step == step) return &f;
  return nullptr;
}

// The tasks and arms drawn, in the order they ran and drawing order.
std::pair<std::vector<std::string>, std::vector<std::string>> tasks_and_modes(
    const TrainResult& b) {
  std::vector<std::string> tasks, modes;
  for (const auto& [run, flows] : b.flows)
    if (std::find(tasks.begin(), tasks.end(), run.task) == tasks.end()) tasks.push_back(run.task);
  for (const auto& [run, flows] : b.flows) modes.push_back(run.mode);
  return {tasks, in_drawing_order(modes)};
}

// "width=\"123.0\"" -> 123.0 in the root element of an SVG.
double root_size(const std::string& svg, const std::string& attribute) {
  const std::string key = attribute + "=\"";
  const size_t at = svg.find(key);
  if (at == std::string::npos) fail("gradient_flow: a drawing without ", attribute);
  return std::stod(svg.substr(at + key.size()));
}

// The run stopped before its budget because it reached the task's threshold.
bool stopped_solved(const TrainResult& b, const std::string& task, const std::string& mode) {
  for (const FinalRow& f : b.finals)
    if (f.run.task == task && f.run.mode == mode && f.run.seed == 0 &&
        f.run.d_k == b.flows.front().first.d_k)
      return !f.diverged && f.steps_run < f.steps;
  return false;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

}  // namespace

int64_t late_flow_step(const TrainResult& b, const std::string& task, const std::string& mode) {
  const std::vector<FlowGraph>* flows = flows_of(b, task, mode);
  return flows && !flows->empty() ? flows->back().step : -1;
}

FlowNorms flow_norms(const TrainResult& b, const std::string& task, const std::string& mode,
                     int64_t step) {
  FlowNorms n;
  const std::vector<FlowGraph>* flows = flows_of(b, task, mode);
  const FlowGraph* f = flows ? at_step(*flows, step) : nullptr;
  if (!f) return n;
  const Graph& g = f->graph;
  for (const GraphEdge& e : g.edges) {
    if (g.nodes[e.to].label == "softmax") n.logits = e.grad_norm;
    if (g.nodes[e.from].label == "q_proj.weight") n.wq = e.grad_norm;
    // The layer's output: the edge into the op outside that uses it, the last node.
    if (e.to + 1 == g.nodes.size() && std::isnan(n.output)) n.output = e.grad_norm;
  }
  return n;
}

PlotFile gradient_flow_figure(const TrainResult& b) {
  const auto [tasks, modes] = tasks_and_modes(b);
  struct Drawing {
    std::string title;
    const Graph* graph;
  };
  std::vector<Drawing> drawings;
  for (const std::string& task : tasks)
    for (const bool late : {false, true})
      for (const std::string& mode : modes) {
        const std::vector<FlowGraph>* flows = flows_of(b, task, mode);
        if (!flows || flows->empty()) continue;
        const FlowGraph& f = late ? flows->back() : flows->front();
        if (late && f.step == flows->front().step) continue;  // it stopped at once
        std::string when = f.step == 0 ? "at initialisation" : "step " + std::to_string(f.step);
        if (late && stopped_solved(b, task, mode)) when += ", where it solved the task and stopped";
        drawings.push_back({task + ", " + key_layer(task) + ", " + mode + ", d_k = " +
                                std::to_string(b.flows.front().first.d_k) + ", " + when,
                            &f.graph});
      }
  // One range of widths for every drawing.
  NormRange range{.lo = INFINITY, .hi = 0};
  for (const Drawing& d : drawings) {
    const NormRange r = norm_range(*d.graph);
    if (r.hi > 0) range.lo = std::min(range.lo, r.lo), range.hi = std::max(range.hi, r.hi);
  }
  // Four decades below the largest: the widths tell apart the norms that
  // matter, and anything smaller is a hairline (its label still says it).
  range.lo = range.hi == 0 ? 0 : std::max(range.lo, range.hi * 1e-4);
  // Each drawing wraps its ops into rows of at most kWidth, so that the
  // figure reads at that width; one legend above them all.
  constexpr double kWidth = 1400;
  const std::vector<std::string> legend = {
      "Where the gradient stops: one attention layer's backward graph, op by op, forward left to "
      "right in rows read like text.",
      "On each edge the norm of the gradient the step sent back along it, the width its log, "
      "one scale for every drawing: " +
          format_norm(range.lo) + " (hairline) to " + format_norm(range.hi) + ".",
      "Orange: below 1e-6 of the largest, a vanished gradient. Grey dotted, ~0: zero but for "
      "rounding of what reached the op,",
      "a zero by structure (k_proj.bias: the softmax ignores a shift of every logit), not a "
      "vanished gradient. Yellow: parameters."};
  std::string body;
  double width = kWidth, height = 18 + 14 * static_cast<double>(legend.size());
  for (size_t i = 0; i < legend.size(); ++i)
    body += "<text x=\"20\" y=\"" + num(22 + 14 * static_cast<double>(i)) +
            "\" font-family=\"sans-serif\" font-size=\"12\" fill=\"#333\"" +
            (i == 0 ? " font-weight=\"bold\"" : "") + ">" + legend[i] + "</text>\n";
  for (const Drawing& d : drawings) {
    std::string svg = to_svg(*d.graph, d.title, range, kWidth, /*legend=*/false);
    const double w = root_size(svg, "width"), h = root_size(svg, "height");
    svg.replace(0, 4, "<svg x=\"0\" y=\"" + num(height) + "\"");
    body += svg;
    width = std::max(width, w), height += h;
  }
  const std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(width) +
                          "\" height=\"" + num(height) + "\" viewBox=\"0 0 " + num(width) + " " +
                          num(height) + "\">\n<rect width=\"100%\" height=\"100%\" " +
                          "fill=\"white\"/>\n" + body + "</svg>\n";
  return {"gradient_flow.svg", svg,
          "Where the gradient stops: the backward graph of the layer where each task looks its "
          "answer up, op by op, for unscaled attention and 1/sqrt(d_k) at d_k " +
              std::to_string(b.flows.empty() ? 0 : b.flows.front().first.d_k) +
              ", on the first seed's training batch, at the first step and at the last "
              "evaluation step of each run (a run that solves the task stops there). Each edge is "
              "labelled with the norm of the gradient the step sent back "
              "along it and drawn as wide as its log, on one scale for every drawing (a hairline: "
              "below 1e-4 of the largest; orange: below 1e-6 of it). Read right to left: the "
              "gradient enters at the layer's output (the `add` of the residual path), passes "
              "o_proj, splits at the product of the weights with V, and only through the "
              "softmax, the scale (`mul`) and the product q k^T (`matmul`, (B, heads, L, L)) "
              "does it reach W_Q and W_K. The near-zero gradient of k_proj.bias is exact, not "
              "a vanishing gradient: adding the same vector to every key adds the same number "
              "to every logit of a query, which the softmax ignores."};
}

// The drawn graphs' edges: for each (task, anchor arm) its first graph and,
// if it ran past it, its last, the ones gradient_flow_figure draws. A node is named by its index in
// its graph (the edges run from lower to higher) and its label, as drawn.
CsvFile gradient_flow_csv(const TrainResult& b) {
  CsvFile out{"gradient_flow.csv",
              {"task", "d_k", "mode", "seed", "step", "layer", "edge", "from_node", "from",
               "to_node", "to", "grad_norm"},
              {}};
  for (const auto& [run, flows] : b.flows) {
    if (flows.empty()) continue;
    std::vector<const FlowGraph*> drawn = {&flows.front()};
    if (flows.back().step != flows.front().step) drawn.push_back(&flows.back());
    for (const FlowGraph* f : drawn) {
      const Graph& g = f->graph;
      for (size_t i = 0; i < g.edges.size(); ++i) {
        const GraphEdge& e = g.edges[i];
        out.rows.push_back({run.task, run.d_k, run.mode, run.seed, f->step, key_layer(run.task), i,
                            e.from, g.nodes[e.from].label, e.to, g.nodes[e.to].label,
                            csv_number(e.grad_norm)});
      }
    }
  }
  return out;
}

}  // namespace gradflow::study
