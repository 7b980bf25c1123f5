// --graph: a picture of one training step's graph, with the norm of the
// gradient that flowed back along every edge (autograd/graph.h).
//
// The step is drawn from a pass of its own, just before the step runs: the
// generators are saved, the step's batch is drawn and run forward and
// backward as one part on this thread, its gradients are thrown away, and
// the generators are restored, so the real step then draws the same batch
// and the run goes on bit for bit as without --graph. The norms are the
// step's own (the whole batch's; the real step's parts add up to the same up
// to rounding), taken before its update.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "examples/toolkit/training/training.h"
#include "tensor/random.h"

namespace gradflow::training {

// Refuses a request that cannot be met, before any training: a folder that
// does not exist or cannot be written, a name that does not end in .svg or
// .dot (a log, a checkpoint, an input), a path that is not a regular file (a
// symlink, /dev/null, a FIFO) or is one but not a drawing of ours, a path in
// `maps_dir` (--attention-maps, whose maps could replace it), a step beyond
// `steps`. Throws cli::UsageError.
void check_graph_request(const GraphRequest& request, int64_t steps,
                         const std::string& maps_dir = "");

// Draws step `request.step` of model's training as described above, writes
// it atomically to request.path, and returns what to tell the user ("graph
// of step 1 (412 boxes, 530 edges) in "g.svg""). `title` heads the drawing.
std::string draw_step_graph(const GraphRequest& request, const nn::Module& model,
                            const std::vector<std::pair<std::string, Generator*>>& generators,
                            const Hooks& hooks, const std::string& title);

}  // namespace gradflow::training
