// The graph as a standalone SVG: layers left to right, so the forward pass
// reads left to right and the backward pass right to left, and every edge
// as wide as the log of the gradient that flowed back along it.
//
// Layout, the simple layered kind (Sugiyama's, without its dummy nodes):
//  1. each op one layer right of its furthest input; a node with no inputs
//     (a leaf) one layer left of its first user, so a parameter sits beside
//     the op that reads it rather than in a far first column;
//  2. within a layer, nodes ordered by the mean position of their neighbours
//     in the layer before (then after), a few sweeps: fewer crossings;
//  3. boxes as wide as their text (estimated: no font engine here), layers
//     centred on one another, edges as curves from right side to left side;
//  4. the layers cut into rows no wider than a screen (max_width), read like
//     text: an edge that crosses to the next row turns down at the row's end
//     and runs back left, under the row, to the next row's start.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "autograd/graph.h"

namespace gradflow {

namespace {

constexpr double kFont = 11, kCharWidth = 0.6 * kFont;  // an average sans-serif glyph
constexpr double kBoxHeight = 30, kRowGap = 6, kColumnGap = 48, kMargin = 20;
constexpr double kHeader = 124, kTitle = 36;  // title and legend; title alone
constexpr double kLane = 2.5, kBandGap = 18;  // under a row: a lane per edge running back
// Below this share of the largest norm an edge is drawn in the warning
// colour: the gradient has, for practical purposes, stopped there.
constexpr double kVanished = 1e-6;

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '&')
      out += "&amp;";
    else if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '"')
      out += "&quot;";
    else
      out += c;
  }
  return out;
}

double text_width(const std::string& s) { return kCharWidth * static_cast<double>(s.size()); }

// A leaf's name, long as a parameter's dotted path is, in a smaller font.
double label_font(const GraphNode& n) {
  return n.kind == GraphNodeKind::kLeaf ? kFont - 1.5 : kFont;
}

// A box's width: its wider line, and room on both sides.
double box_width(const GraphNode& n) {
  return std::max(text_width(n.label) * label_font(n) / kFont, text_width(n.detail)) + 16;
}

struct Layout {
  // Per node, the graph's nodes first, then the dummies: a long edge passes
  // one dummy in each layer it crosses, so that ordering the layers moves
  // it aside instead of leaving it to cut through the boxes in between.
  std::vector<size_t> layer;
  std::vector<std::vector<size_t>> layers;  // node ids, top to bottom
  std::vector<double> x, y, width, height;  // a box; a dummy is its column's width, 0 high
  std::vector<std::vector<size_t>> routes;  // per edge: the dummies it passes, in order
  std::vector<size_t> band_of;              // per layer: its row
  std::vector<double> band_bottom;          // per row: below its lowest box
  double total_width = 0, total_height = 0;
};

constexpr double kDummyPitch = 12;  // the room a passing edge takes in a layer

Layout lay_out(const Graph& g, double max_width, double header) {
  const size_t n = g.nodes.size();
  std::vector<std::vector<size_t>> in(n), out(n);
  for (const GraphEdge& e : g.edges) in[e.to].push_back(e.from), out[e.from].push_back(e.to);
  Layout l;
  l.layer.assign(n, 0);
  // Nodes are in forward order, so inputs are placed before their users.
  for (size_t i = 0; i < n; ++i)
    for (size_t from : in[i]) l.layer[i] = std::max(l.layer[i], l.layer[from] + 1);
  for (size_t i = n; i-- > 0;) {
    if (!in[i].empty() || out[i].empty()) continue;
    size_t first_user = SIZE_MAX;
    for (size_t to : out[i]) first_user = std::min(first_user, l.layer[to]);
    l.layer[i] = first_user - 1;
  }
  // Dummies, and the graph with every edge cut into one-layer links.
  std::vector<std::vector<size_t>> in2 = {}, out2 = {};
  in2.resize(n), out2.resize(n);
  for (const GraphEdge& e : g.edges) {
    std::vector<size_t> route;
    size_t prev = e.from;
    for (size_t k = l.layer[e.from] + 1; k < l.layer[e.to]; ++k) {
      const size_t d = l.layer.size();
      l.layer.push_back(k), in2.push_back({prev}), out2.push_back({});
      out2[prev].push_back(d);
      route.push_back(d), prev = d;
    }
    out2[prev].push_back(e.to), in2[e.to].push_back(prev);
    l.routes.push_back(std::move(route));
  }
  const size_t total = l.layer.size();
  const size_t depth = n == 0 ? 0 : *std::max_element(l.layer.begin(), l.layer.end()) + 1;
  l.layers.assign(depth, {});
  for (size_t i = 0; i < total; ++i) l.layers[l.layer[i]].push_back(i);

  // Barycentre sweeps: order each layer by its neighbours' mean position.
  std::vector<double> pos(total);
  for (const auto& layer : l.layers)
    for (size_t k = 0; k < layer.size(); ++k) pos[layer[k]] = static_cast<double>(k);
  auto sweep = [&](const std::vector<std::vector<size_t>>& neighbours, bool forward) {
    for (size_t step = 0; step < depth; ++step) {
      auto& layer = l.layers[forward ? step : depth - 1 - step];
      std::vector<double> key(layer.size());
      for (size_t k = 0; k < layer.size(); ++k) {
        const auto& nb = neighbours[layer[k]];
        double sum = 0;
        for (size_t m : nb) sum += pos[m];
        key[k] = nb.empty() ? pos[layer[k]] : sum / static_cast<double>(nb.size());
      }
      std::vector<size_t> order(layer.size());
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&](size_t a, size_t b) { return key[a] < key[b]; });
      std::vector<size_t> sorted;
      for (size_t k : order) sorted.push_back(layer[k]);
      layer = sorted;
      for (size_t k = 0; k < layer.size(); ++k) pos[layer[k]] = static_cast<double>(k);
    }
  };
  for (int round = 0; round < 3; ++round) sweep(in2, true), sweep(out2, false);

  // Coordinates: each layer a column as wide as its widest box, its boxes
  // and passing edges stacked and centred on the tallest layer of its row;
  // a row ends where the next column would pass max_width.
  l.x.assign(total, 0), l.y.assign(total, 0), l.width.assign(total, 0), l.height.assign(total, 0);
  auto slot = [&](size_t i) { return i < n ? kBoxHeight + kRowGap : kDummyPitch; };
  std::vector<double> stack(depth, 0), columns(depth, 16);
  for (size_t k = 0; k < depth; ++k)
    for (size_t i : l.layers[k]) {
      stack[k] += slot(i);
      if (i < n) columns[k] = std::max(columns[k], box_width(g.nodes[i]));
    }
  l.band_of.assign(depth, 0);
  std::vector<double> tallest(1, 0), crossing(1, 0);  // per row
  double run = 0;                                     // the row's width so far
  for (size_t k = 0; k < depth; ++k) {
    if (k > 0 && kMargin + run + columns[k] + kMargin > max_width)
      tallest.push_back(0), crossing.push_back(0), run = 0;
    l.band_of[k] = tallest.size() - 1;
    tallest.back() = std::max(tallest.back(), stack[k]);
    run += columns[k] + kColumnGap;
  }
  for (size_t k = 0; k + 1 < depth; ++k)  // links from a row's last layer run back under it
    if (l.band_of[k + 1] != l.band_of[k])
      for (size_t i : l.layers[k]) crossing[l.band_of[k]] += static_cast<double>(out2[i].size());
  std::vector<double> band_top(tallest.size(), header);
  for (size_t b = 0; b < tallest.size(); ++b) {
    if (b > 0) band_top[b] = l.band_bottom.back() + kBandGap + kLane * crossing[b - 1];
    l.band_bottom.push_back(band_top[b] + tallest[b]);
  }
  double left = kMargin, widest = 0;
  for (size_t k = 0; k < depth; ++k) {
    if (k > 0 && l.band_of[k] != l.band_of[k - 1]) left = kMargin;
    const double column = columns[k];
    const size_t b = l.band_of[k];
    double top = band_top[b] + (tallest[b] - stack[k]) / 2;
    for (size_t i : l.layers[k]) {
      if (i < n) {  // each box as wide as its own text, centred in the column
        l.width[i] = box_width(g.nodes[i]);
        l.x[i] = left + (column - l.width[i]) / 2, l.y[i] = top, l.height[i] = kBoxHeight;
      } else {
        l.width[i] = column, l.x[i] = left, l.y[i] = top + kDummyPitch / 2;
      }
      top += slot(i);
    }
    widest = std::max(widest, left + column + kMargin);
    left += column + kColumnGap;
  }
  l.total_width = std::max(widest, 500.0);
  l.total_height = (depth ? l.band_bottom.back() : header) + kMargin;
  return l;
}

const char* fill_of(GraphNodeKind kind) {
  switch (kind) {
    case GraphNodeKind::kLeaf:
      return "#fff3c4";
    case GraphNodeKind::kGroup:
      return "#e3eefa";
    case GraphNodeKind::kOp:
      break;
  }
  return "#ffffff";
}

// Short lines, so that a small graph's drawing holds them too.
void draw_legend(std::string& out, const NormRange& range, bool any_norm) {
  std::vector<std::string> lines = {
      "Forward left to right, rows in reading order. Boxes: white an op and its output",
      "shape (a single number: its value and gradient), yellow a leaf (a parameter),",
      "blue a module's ops folded together."};
  if (!any_norm)
    lines.push_back("No gradient norms recorded: draw after a backward run under a GraphCapture.");
  else
    lines.insert(
        lines.end(),
        {"On each edge the norm of the gradient backward sent along it; the width its",
         "log, " + format_norm(range.lo) + " (thinnest) to " + format_norm(range.hi) +
             " (thickest). Orange: below " + format_norm(kVanished) + " of the largest: vanished.",
         "Grey dotted, ~0: zero but for rounding of what reached the op, a zero by",
         "structure (a key's bias, which a softmax ignores), not a vanished gradient."});
  for (size_t i = 0; i < lines.size(); ++i)
    out += "<text x=\"" + num(kMargin) + "\" y=\"" + num(42 + 12 * static_cast<double>(i)) +
           "\" font-size=\"10\" fill=\"#444\">" + escape(lines[i]) + "</text>\n";
}

}  // namespace

std::string to_svg(const Graph& graph, const std::string& title) {
  return to_svg(graph, title, norm_range(graph));
}

std::string to_svg(const Graph& graph, const std::string& title, const NormRange& range,
                   double max_width, bool legend) {
  const Layout l = lay_out(graph, max_width, legend ? kHeader : kTitle);
  bool any_norm = false;
  for (const GraphEdge& e : graph.edges) any_norm = any_norm || !std::isnan(e.grad_norm);

  std::string out = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(l.total_width) +
                    "\" height=\"" + num(l.total_height) + "\" viewBox=\"0 0 " +
                    num(l.total_width) + " " + num(l.total_height) +
                    "\" font-family=\"sans-serif\">\n";
  out += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  out += "<text x=\"" + num(kMargin) + "\" y=\"24\" font-size=\"15\" font-weight=\"bold\">" +
         escape(title.empty() ? "Computation graph" : title) + "</text>\n";
  if (legend) draw_legend(out, range, any_norm);

  // Edges first, under the boxes; their labels after the boxes, on top.
  std::string labels;
  std::vector<double> lanes_used(l.band_bottom.size(), 0);  // per row, edges running back
  for (size_t k = 0; k < graph.edges.size(); ++k) {
    const GraphEdge& e = graph.edges[k];
    // Right side of the input's box, across each layer passed, left side of
    // the user's box; curves with level ends between the columns.
    std::vector<std::pair<double, double>> points = {
        {l.x[e.from] + l.width[e.from], l.y[e.from] + kBoxHeight / 2}};
    for (size_t d : l.routes[k])
      points.push_back({l.x[d], l.y[d]}), points.push_back({l.x[d] + l.width[d], l.y[d]});
    points.push_back({l.x[e.to], l.y[e.to] + kBoxHeight / 2});
    std::string d = "M" + num(points[0].first) + " " + num(points[0].second), back;
    double mx = 0, my = 0;  // where the label goes: on the first curve, by the input
    for (size_t p = 1; p < points.size(); ++p) {
      const auto [x1, y1] = points[p - 1];
      const auto [x2, y2] = points[p];
      if (p % 2 == 0) {  // across a layer: straight
        d += " L" + num(x2) + " " + num(y2);
        continue;
      }
      const size_t from = l.layer[e.from] + (p - 1) / 2, row = l.band_of[from];
      if (l.band_of[from + 1] == row) {  // to the next column: a level-ended curve
        const double bend = std::min((x2 - x1) / 2, 120.0);
        d += " C" + num(x1 + bend) + " " + num(y1) + " " + num(x2 - bend) + " " + num(y2) + " " +
             num(x2) + " " + num(y2);
        if (p == 1) mx = (x1 + x2) / 2, my = (y1 + y2) / 2;  // (P0 + 3 P1 + 3 P2 + P3) / 8
        continue;
      }
      // To the next row: down past the row's end, back left under it in a
      // lane of its own, down into the next row's first column.
      // Drawn thin: the width is read where the edge leaves and arrives.
      const double lane = l.band_bottom[row] + kBandGap / 2 + kLane * lanes_used[row]++;
      back += "M" + num(x1) + " " + num(y1) + " C" + num(x1 + 24) + " " + num(y1) + " " +
              num(x1 + 24) + " " + num(lane) + " " + num(x1) + " " + num(lane) + " L" + num(x2) +
              " " + num(lane) + " C" + num(x2 - 24) + " " + num(lane) + " " + num(x2 - 24) + " " +
              num(y2) + " " + num(x2) + " " + num(y2) + " ";
      d += " M" + num(x2) + " " + num(y2);
      if (p == 1) mx = x1 - 30, my = lane - 3;  // on the lane, at the row's end
    }
    const bool known = !std::isnan(e.grad_norm), zero = known && e.structural_zero;
    const bool vanished = known && !zero && !(e.grad_norm > kVanished * range.hi);
    const char* colour = !known || zero ? "#999999" : vanished ? "#d55e00" : "#3b6ea5";
    out += "<path class=\"edge\" d=\"" + d + "\" fill=\"none\" stroke=\"" + colour +
           "\" stroke-opacity=\"0.75\" stroke-width=\"" +
           num(zero ? 1.0 : edge_width(e.grad_norm, range)) + "\"" +
           (zero ? " stroke-dasharray=\"1 3\"" : "") + "/>\n";
    if (!back.empty())
      out += "<path class=\"back\" d=\"" + back + "\" fill=\"none\" stroke=\"" + colour +
             "\" stroke-opacity=\"0.5\" stroke-width=\"1\"/>\n";
    if (!known) continue;
    std::string text = zero ? "~0" : format_norm(e.grad_norm);
    if (e.folded > 1) text += " (" + std::to_string(e.folded) + ")";
    labels += "<text class=\"norm\" x=\"" + num(mx) + "\" y=\"" + num(my - 3) +
              "\" font-size=\"9\" text-anchor=\"middle\" fill=\"" + colour +
              "\" stroke=\"white\" stroke-width=\"3\" paint-order=\"stroke\">" + escape(text) +
              "</text>\n";
  }
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const GraphNode& n = graph.nodes[i];
    const double cx = l.x[i] + l.width[i] / 2;
    out += "<g class=\"node\"><rect x=\"" + num(l.x[i]) + "\" y=\"" + num(l.y[i]) + "\" width=\"" +
           num(l.width[i]) + "\" height=\"" + num(kBoxHeight) + "\" rx=\"5\" fill=\"" +
           fill_of(n.kind) + "\" stroke=\"#333\"" +
           (i + 1 == graph.nodes.size() ? " stroke-width=\"2\"" : "") + "/>";
    out += "<text x=\"" + num(cx) + "\" y=\"" + num(l.y[i] + 13) + "\" font-size=\"" +
           num(label_font(n)) + "\" text-anchor=\"middle\" font-weight=\"bold\">" +
           escape(n.label) + "</text>";
    out += "<text x=\"" + num(cx) + "\" y=\"" + num(l.y[i] + 25) + "\" font-size=\"" +
           num(kFont - 1) + "\" text-anchor=\"middle\" fill=\"#555\">" + escape(n.detail) +
           "</text></g>\n";
  }
  return out + labels + "</svg>\n";
}

}  // namespace gradflow
