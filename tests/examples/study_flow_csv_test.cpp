// The gradient-flow graph's numbers, recomputed from the files a small
// scaling_study run writes: train_layers.csv's gradients at q and k (and at
// the scores) against the drawn graph's edges in gradient_flow.csv.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "autograd/graph.h"
#include "tests/examples/run_program.h"
#include "tests/examples/study_csv.h"

namespace gradflow::testing {
namespace {

using StudyFlowCsv = ProgramTest;

// The train part with the anchor arms only, one seed at d_k 8, 20 steps:
// each (task, arm) drawn at step 0 and at its last evaluation.
const std::vector<std::string> kTrainRun = {
    "--parts",          "train",   "--d-ks", "8",       "--modes",
    "none,inv_sqrt_dk", "--seeds", "1",      "--steps", "20"};

struct Edge {
  size_t from_node = 0, to_node = 0;
  std::string from, to;
  double norm = NAN;
};
// (task, mode, step) -> its graph's edges in the file's order, and the key layer.
struct Drawings {
  std::map<std::tuple<std::string, std::string, int64_t>, std::vector<Edge>> graphs;
  std::map<std::string, std::string> layer;  // task -> the layer drawn
  std::vector<std::string> tasks;            // in the order of the file
};

Drawings read_drawings(const std::string& path) {
  const CsvColumns c = read_csv_columns(path);
  Drawings d;
  for (size_t i = 0; i < c.at("task").size(); ++i) {
    const std::string& task = c.at("task")[i];
    d.graphs[{task, c.at("mode")[i], std::stoll(c.at("step")[i])}].push_back(
        {std::stoul(c.at("from_node")[i]), std::stoul(c.at("to_node")[i]), c.at("from")[i],
         c.at("to")[i], csv_value(c.at("grad_norm")[i])});
    d.layer[task] = c.at("layer")[i];
    if (std::find(d.tasks.begin(), d.tasks.end(), task) == d.tasks.end()) d.tasks.push_back(task);
  }
  return d;
}

// The n-th edge (in the order the op lists its inputs) into `node`.
const Edge& into(const std::vector<Edge>& g, size_t node, int n = 0) {
  for (const Edge& e : g)
    if (e.to_node == node && n-- == 0) return e;
  static const Edge none;
  ADD_FAILURE() << "no edge " << n << " into node " << node;
  return none;
}

// The last edge into the softmax.
double at_logits(const std::vector<Edge>& g) {
  double out = NAN;
  for (const Edge& e : g)
    if (e.to == "softmax") out = e.norm;
  return out;
}
// dL/dq and dL/dk, train_layers.csv's grad_norm_q and grad_norm_k, are the
// edges into q k^T: back from the softmax through the mask (recall's) to the
// scale's mul, whose input is the product; its first input is q, its second
// k's transpose, whose input is k.
TEST_F(StudyFlowCsv, TheGradientsAtQAndKAreTheDrawnGraphsEdges) {
  const std::string out = path("study");
  Result r = run(kScalingStudy, kTrainRun, {"--out", out});
  ASSERT_EQ(r.code, 0) << r.err;
  const Drawings d = read_drawings(out + "/gradient_flow.csv");
  const CsvColumns layers = read_csv_columns(out + "/train_layers.csv");
  ASSERT_EQ(d.graphs.size(), 2u * 2 * 2);  // tasks x arms x (step 0, the last evaluation)
  int compared = 0;
  for (const auto& [key, g] : d.graphs) {
    const auto& [task, mode, step] = key;
    const std::string what = task + " " + mode + " step " + std::to_string(step);
    size_t node = 0;  // the softmax, then (recall) the mask's masked_fill
    for (const Edge& e : g)
      if (e.to == "softmax") node = e.to_node;
    for (int hops = 0; hops < 3 && into(g, node).from != "mul"; ++hops)
      node = into(g, node).from_node;
    ASSERT_EQ(into(g, node).from, "mul") << what;
    const Edge& product = into(g, into(g, node).from_node);
    ASSERT_EQ(product.from, "matmul") << what;
    const Edge& q = into(g, product.from_node, 0);
    const Edge& k_t = into(g, product.from_node, 1);
    ASSERT_EQ(k_t.from, "transpose") << what;
    const Edge& k = into(g, k_t.from_node);
    for (size_t i = 0; i < layers.at("task").size(); ++i) {
      if (layers.at("task")[i] != task || layers.at("mode")[i] != mode ||
          layers.at("seed")[i] != "0" || layers.at("layer")[i] != d.layer.at(task) ||
          std::stoll(layers.at("step")[i]) != step)
        continue;
      const double grad_q = std::stod(layers.at("grad_norm_q")[i]),
                   grad_k = std::stod(layers.at("grad_norm_k")[i]),
                   grad_s = std::stod(layers.at("grad_norm_logits")[i]);
      EXPECT_GT(grad_q, 0) << what;
      EXPECT_GT(grad_k, 0) << what;
      EXPECT_NEAR(grad_q, q.norm, 1e-5 * q.norm) << what;
      EXPECT_NEAR(grad_k, k.norm, 1e-5 * k.norm) << what;
      EXPECT_NEAR(grad_s, at_logits(g), 1e-5 * grad_s) << what;
      ++compared;
    }
  }
  EXPECT_EQ(compared, 2 * 2 * 2);
}

}  // namespace
}  // namespace gradflow::testing
