// A model's graph drawn with nn's names: every parameter a leaf by its dotted
// name, and the model's modules as boxes when folded.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "autograd/graph.h"
#include "nn/data/toy_tasks.h"
#include "nn/loss.h"
#include "nn/models.h"

namespace gradflow::nn {
namespace {

struct Step {
  Variable loss;
  std::unordered_map<const void*, std::string> names;
};

// One forward and backward of a reverse batch, under the caller's capture.
Step one_step(EncoderDecoder& model) {
  Generator gen(1);
  const ToyTaskConfig task{.task = "reverse", .max_len = 4};
  Seq2SeqBatch batch = make_batch(task, 4, gen);
  Variable loss = cross_entropy(model.forward(batch.src, batch.tgt_in, batch.src_pad),
                                batch.tgt_out, kPadToken);
  loss.backward();
  return {loss, graph_names(model)};
}

ModelConfig tiny() {
  ModelConfig c;
  c.vocab = 13, c.d_model = 16, c.heads = 2, c.layers = 2, c.d_ff = 32, c.max_len = 8;
  return c;
}

TEST(GraphNames, EveryParameterIsALeafByItsDottedName) {
  Generator gen(0);
  EncoderDecoder model(tiny(), gen);
  GraphCapture capture;
  Step step = one_step(model);
  const Graph g = build_graph(step.loss, {.capture = &capture, .names = step.names});
  std::set<std::string> leaves;
  for (const GraphNode& n : g.nodes)
    if (n.kind == GraphNodeKind::kLeaf) leaves.insert(n.label);
  std::set<std::string> params;
  for (const auto& [name, p] : model.named_parameters()) params.insert(name);
  EXPECT_EQ(leaves, params);
  // Every edge carries the gradient's norm, and every norm is finite.
  for (const GraphEdge& e : g.edges) EXPECT_TRUE(std::isfinite(e.grad_norm));
}

TEST(GraphNames, ModulesFoldLevelByLevel) {
  Generator gen(0);
  EncoderDecoder model(tiny(), gen);
  GraphCapture capture;
  Step step = one_step(model);
  auto labels_at = [&](int depth) {
    std::vector<std::string> out;
    for (const GraphNode& n :
         build_graph(step.loss, {.capture = &capture, .names = step.names, .collapse_depth = depth})
             .nodes)
      out.push_back(n.label);
    return out;
  };
  // Level 1: the model is one box with every parameter in it; the loss is not.
  EXPECT_EQ(labels_at(1), (std::vector<std::string>{"model", "cross_entropy"}));
  // Level 2: its parts. The embedding runs twice (source, then target).
  const std::vector<std::string> parts = labels_at(2);
  for (const char* part : {"encoder", "decoder", "embed #1", "embed #2", "lm_head"})
    EXPECT_NE(std::find(parts.begin(), parts.end(), part), parts.end()) << part;
  // Level 3: each layer.
  const std::vector<std::string> layers = labels_at(3);
  for (const char* layer :
       {"encoder.layers.0", "encoder.layers.1", "decoder.layers.0", "decoder.layers.1"})
    EXPECT_NE(std::find(layers.begin(), layers.end(), layer), layers.end()) << layer;
}

TEST(GraphNames, NamedModulesInRegistrationOrder) {
  Generator gen(0);
  EncoderDecoder model(tiny(), gen);
  const auto modules = model.named_modules();
  ASSERT_FALSE(modules.empty());
  EXPECT_EQ(modules[0].first, "");
  EXPECT_EQ(modules[0].second, &model);
  std::set<std::string> names;
  for (const auto& [name, m] : modules) names.insert(name);
  EXPECT_EQ(names.size(), modules.size());
  EXPECT_TRUE(names.count("decoder.layers.1.cross_attn.q_proj"));
}

}  // namespace
}  // namespace gradflow::nn
