#include "examples/toolkit/training/step_graph.h"

#include <filesystem>

#include "autograd/graph.h"
#include "examples/toolkit/cli/args.h"
#include "nn/io/atomic_file.h"

namespace gradflow::training {

namespace fs = std::filesystem;

void check_graph_request(const GraphRequest& request, int64_t steps) {
  if (request.path.empty()) return;
  const fs::path parent = fs::path(request.path).parent_path();
  std::error_code ec;
  if (!parent.empty() && !fs::is_directory(parent, ec))
    throw cli::UsageError("--graph " + cli::quote(request.path) + ": no folder " +
                          cli::quote(parent.string()) + " to write it in");
  if (fs::is_directory(request.path, ec))
    throw cli::UsageError("--graph " + cli::quote(request.path) +
                          ": is a folder; give a file name ending in .svg or .dot");
  if (request.step > steps)
    throw cli::UsageError("--graph-step " + std::to_string(request.step) + ": the run has only " +
                          std::to_string(steps) + " steps");
}

std::string draw_step_graph(const GraphRequest& request, const nn::Module& model,
                            const std::vector<std::pair<std::string, Generator*>>& generators,
                            const Hooks& hooks, const std::string& title) {
  std::vector<std::array<uint64_t, 4>> saved;
  for (const auto& [name, gen] : generators) saved.push_back(gen->state());
  std::string text;
  Graph graph;
  {
    LeafGrads thrown_away;  // the real step computes the gradients again
    LeafGradSink sink(thrown_away);
    GraphCapture capture;
    Variable loss = hooks.batch()(0, 1);
    if (loss.requires_grad()) loss.backward();
    GraphOptions options{.capture = &capture,
                         .names = nn::graph_names(model),
                         .collapse_depth = request.depth,
                         .title = title};
    graph = build_graph(loss, options);
  }
  for (size_t i = 0; i < generators.size(); ++i) generators[i].second->set_state(saved[i]);
  const bool dot = fs::path(request.path).extension() == ".dot";
  text = dot ? to_dot(graph, title) : to_svg(graph, title);
  write_file_atomic(request.path, text);
  return "graph of step " + std::to_string(request.step) + " (" +
         std::to_string(graph.nodes.size()) + " boxes, " + std::to_string(graph.edges.size()) +
         " edges) in " + cli::quote(request.path);
}

}  // namespace gradflow::training
