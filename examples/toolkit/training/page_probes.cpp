#include "examples/toolkit/training/page_probes.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "autograd/graph.h"
#include "nn/models.h"

namespace gradflow::training {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The Frobenius norm of t, summed in double in place (a vector of its values would grow the
// heap, graph.cpp's frobenius says); NaN for an undefined tensor.
double norm(const Tensor& t) {
  if (!t.defined()) return kNaN;
  const Tensor c = t.contiguous();
  double sum = 0;
  if (c.dtype() == DType::Float32)
    for (const float *p = c.data<float>(), *end = p + c.numel(); p != end; ++p)
      sum += double(*p) * *p;
  else
    for (const double v : c.to_vector()) sum += v * v;
  return std::sqrt(sum);
}

// Puts the layers' probe switches back as they were however the pass ends, and lets go of the
// activations the probes kept.
class ProbesRecording {
 public:
  explicit ProbesRecording(const std::vector<AttentionLayer>& layers) : layers_(layers) {
    for (const AttentionLayer& a : layers) {
      was_.push_back(a.layer->record_probe);
      a.layer->record_probe = true;
    }
  }
  ~ProbesRecording() {
    for (size_t i = 0; i < layers_.size(); ++i) {
      layers_[i].layer->record_probe = was_[i];
      layers_[i].layer->probe = {};
    }
  }
  ProbesRecording(const ProbesRecording&) = delete;
  ProbesRecording& operator=(const ProbesRecording&) = delete;

 private:
  const std::vector<AttentionLayer>& layers_;
  std::vector<bool> was_;
};

}  // namespace

std::vector<AttentionLayer> attention_layers_if_any(nn::Module& model) {
  const bool known = dynamic_cast<nn::EncoderDecoder*>(&model) != nullptr ||
                     dynamic_cast<nn::DecoderLM*>(&model) != nullptr ||
                     dynamic_cast<nn::EncoderClassifier*>(&model) != nullptr;
  return known ? attention_layers(model) : std::vector<AttentionLayer>{};
}

std::vector<double> weight_gradient_norms(const std::vector<AttentionLayer>& layers) {
  std::vector<double> out;
  for (const AttentionLayer& a : layers)
    for (const auto* proj : {&a.layer->q_proj, &a.layer->k_proj, &a.layer->v_proj})
      out.push_back(norm((*proj)->weight.grad()));
  return out;
}

void aside(const std::vector<std::pair<std::string, Generator*>>& generators,
           const std::function<void()>& pass) {
  std::vector<std::array<uint64_t, 4>> saved;
  for (const auto& [name, gen] : generators) saved.push_back(gen->state());
  struct Restore {
    const std::vector<std::pair<std::string, Generator*>>& generators;
    const std::vector<std::array<uint64_t, 4>>& saved;
    ~Restore() {
      for (size_t i = 0; i < generators.size(); ++i) generators[i].second->set_state(saved[i]);
    }
  } restore{generators, saved};
  pass();
}

std::vector<double> score_gradient_norms(
    const std::vector<AttentionLayer>& layers,
    const std::vector<std::pair<std::string, Generator*>>& generators, const Hooks& hooks,
    int64_t rows) {
  rows = std::max<int64_t>(rows, 1);
  std::vector<double> squares(layers.size(), 0.0);
  if (layers.empty()) return squares;
  aside(generators, [&] {
    LeafGrads thrown_away;  // the parameters' .grad stay as they are
    LeafGradSink sink(thrown_away);
    const PartLoss part_loss = hooks.batch();
    // A sequence at a time, so the composed attention's (1, H, T, S) tensors stay small: each
    // part's loss is its share of the batch's, so its rows of dL/dS are the batch's own, and
    // the squared norm adds up over the rows.
    for (int64_t row = 0; row < rows; ++row) {
      ProbesRecording recording(layers);
      Variable loss = part_loss(row, rows);
      if (!loss.requires_grad() || !std::isfinite(loss.item())) {
        squares.assign(layers.size(), kNaN);
        return;
      }
      for (const AttentionLayer& a : layers)
        if (a.layer->probe.logits.defined() && a.layer->probe.logits.requires_grad())
          a.layer->probe.logits.retain_grad();
      loss.backward();
      for (size_t i = 0; i < layers.size(); ++i) {
        const Variable& logits = layers[i].layer->probe.logits;
        const double n = logits.defined() ? norm(logits.grad()) : kNaN;
        squares[i] += n * n;
      }
    }
  });
  for (double& s : squares) s = std::isfinite(s) ? std::sqrt(s) : kNaN;
  return squares;
}

std::vector<GraphLevel> graph_levels(
    const nn::Module& model, const std::vector<std::pair<std::string, Generator*>>& generators,
    const Hooks& hooks, const std::string& title) {
  std::vector<GraphLevel> levels;
  aside(generators, [&] {
    LeafGrads thrown_away;
    LeafGradSink sink(thrown_away);
    GraphCapture capture;
    Variable loss = hooks.batch()(0, 1);
    if (loss.requires_grad()) loss.backward();
    const auto names = nn::graph_names(model);
    auto build = [&](int depth) {
      return build_graph(
          loss, {.capture = &capture, .names = names, .collapse_depth = depth, .title = title});
    };
    const Graph ops = build(0);
    std::vector<std::pair<int, Graph>> kept;
    size_t before = 0;
    for (int depth = 2; depth < 16; ++depth) {
      Graph g = build(depth);
      if (g.nodes.size() >= ops.nodes.size()) break;
      if (g.nodes.size() > before) {
        before = g.nodes.size();
        kept.emplace_back(depth, std::move(g));
      }
    }
    kept.emplace_back(0, ops);
    NormRange range = norm_range(ops);  // widened to every level's: folded edges add up
    for (const auto& [depth, g] : kept) {
      const NormRange r = norm_range(g);
      if (r.hi <= 0) continue;
      range.lo = range.hi > 0 ? std::min(range.lo, r.lo) : r.lo;
      range.hi = std::max(range.hi, r.hi);
    }
    for (const auto& [depth, g] : kept)
      levels.push_back({.depth = depth,
                        .boxes = g.nodes.size(),
                        .edges = g.edges.size(),
                        .svg = to_svg(g, title, range)});
  });
  return levels;
}

}  // namespace gradflow::training
