// What a run's page (run_page.h) measures of the gradient, without changing the run.
//
// The weights' gradients: after each step's backward, before clipping and the update, the norm
// of every attention layer's dL/dW_Q, dL/dW_K and dL/dW_V (the whole batch's, all parts added).
// Reading them changes nothing.
//
// The scores' gradient ||dL/dS||, S = scale * q k^T, the logits before the mask and the softmax
// (nn/attention.h's probe): recording it needs each layer's probe on, which runs attention
// composed rather than fused and so would change the run's numbers in their last bits. It is
// measured aside instead, as step_graph.h draws a step: the generators are saved, the batch the
// next step will draw is drawn and run forward and backward as one part, the gradients are
// thrown away, and the generators are restored, so the run goes on bit for bit as without it.
// The graph of a step at every level of folding comes from a pass of the same kind.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "examples/toolkit/training/attention_maps.h"
#include "examples/toolkit/training/training.h"
#include "tensor/random.h"

namespace gradflow::training {

// The attention layers of a model run_page can read (attention_maps.h), or none for another
// kind of module (a test's own model): then the page shows no attention.
std::vector<AttentionLayer> attention_layers_if_any(nn::Module& model);

// The norms of each layer's W_Q, W_K and W_V gradient now, three per layer in that order; NaN
// for a parameter with no gradient (a skipped part, a frozen weight).
std::vector<double> weight_gradient_norms(const std::vector<AttentionLayer>& layers);

// Runs `pass` on this thread, then puts every generator back where it was: the pass may draw
// the next batch, and the run still draws the same one after it.
void aside(const std::vector<std::pair<std::string, Generator*>>& generators,
           const std::function<void()>& pass);

// ||dL/dS|| of each layer on the batch hooks.batch() draws next, measured aside as above, in
// the order of `layers`; NaN where the loss or the gradient is not finite. The batch's `rows`
// sequences run one at a time (its parts, training.h's PartLoss), so the probes' (1, H, T, S)
// tensors take what a step of one sequence takes (memory_estimate.h's page term); 0 or 1: the
// batch at once.
std::vector<double> score_gradient_norms(
    const std::vector<AttentionLayer>& layers,
    const std::vector<std::pair<std::string, Generator*>>& generators, const Hooks& hooks,
    int64_t rows);

// One drawing of a step's graph: the ops that ran inside a module `depth` levels deep folded
// into one box (GraphOptions::collapse_depth), or every op at depth 0.
struct GraphLevel {
  int depth = 0;
  size_t boxes = 0, edges = 0;
  std::string svg;
};

// The graph of the step on the batch hooks.batch() draws next, measured aside, drawn at every
// level from the model's parts (depth 2) down to its single ops (depth 0, last): a level is
// kept when it has more boxes than the one before, and the deepest folded level stops where it
// would show as many boxes as every op does. All on one scale of edge widths, so one width
// means one norm on every level. `title` heads each drawing.
std::vector<GraphLevel> graph_levels(
    const nn::Module& model, const std::vector<std::pair<std::string, Generator*>>& generators,
    const Hooks& hooks, const std::string& title);

}  // namespace gradflow::training
