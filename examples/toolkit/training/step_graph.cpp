#include "examples/toolkit/training/step_graph.h"

#include <filesystem>
#include <fstream>

#include "autograd/graph.h"
#include "examples/toolkit/cli/args.h"
#include "examples/toolkit/training/page_probes.h"
#include "nn/io/atomic_file.h"

namespace gradflow::training {

namespace fs = std::filesystem;

void check_graph_request(const GraphRequest& request, int64_t steps, const std::string& maps_dir) {
  if (request.path.empty()) return;
  const fs::path path = request.path, parent = path.parent_path();
  const std::string flag = "--graph " + cli::quote(request.path) + ": ";
  std::error_code ec;
  if (!parent.empty() && !fs::is_directory(parent, ec))
    throw cli::UsageError(flag + "no folder " + cli::quote(parent.string()) + " to write it in");
  if (fs::is_directory(path, ec))
    throw cli::UsageError(flag + "is a folder; give a file name ending in .svg or .dot");
  // The name says it is a drawing, so no run file, log or input is taken for one.
  if (path.extension() != ".svg" && path.extension() != ".dot")
    throw cli::UsageError(flag + "give a file name ending in .svg or .dot");
  try {
    cli::require_writable_folder(parent.string());
  } catch (const cli::UsageError& e) {
    throw cli::UsageError(flag + e.what());
  }
  const fs::file_type type = fs::symlink_status(path, ec).type();
  if (type != fs::file_type::not_found && type != fs::file_type::regular)
    throw cli::UsageError(flag +
                          "is a symlink, a device or a FIFO, not a regular file; give a "
                          "new name");
  if (type == fs::file_type::regular) {  // replaced only if it is a drawing, as a rerun's
    std::string head(16, '\0');
    std::ifstream(path, std::ios::binary).read(head.data(), 16);
    if (head.rfind("<svg", 0) != 0 && head.rfind("digraph gradflow", 0) != 0)
      throw cli::UsageError(flag + "exists and is not a drawing of gradflow's; give a new name");
  }
  if (!maps_dir.empty() && fs::weakly_canonical(fs::absolute(parent), ec) ==
                               fs::weakly_canonical(fs::absolute(maps_dir), ec))
    throw cli::UsageError(flag + "is in the --attention-maps folder, whose maps may replace it");
  if (request.step > steps)
    throw cli::UsageError("--graph-step " + std::to_string(request.step) + ": the run has only " +
                          std::to_string(steps) + " steps");
}

std::string draw_step_graph(const GraphRequest& request, const nn::Module& model,
                            const std::vector<std::pair<std::string, Generator*>>& generators,
                            const Hooks& hooks, const std::string& title) {
  std::string text;
  Graph graph;
  aside(generators, [&] {   // the generators put back: the real step draws the same batch
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
  });
  const bool dot = fs::path(request.path).extension() == ".dot";
  text = dot ? to_dot(graph, title) : to_svg(graph, title);
  write_file_atomic(request.path, text);
  return "graph of step " + std::to_string(request.step) + " (" +
         std::to_string(graph.nodes.size()) + " boxes, " + std::to_string(graph.edges.size()) +
         " edges) in " + cli::quote(request.path);
}

}  // namespace gradflow::training
