// The gradient-flow graph's numbers, recomputed from the files a small
// scaling_study run writes: train_layers.csv's gradients at q and k (and at
// the scores) against the drawn graph's edges in gradient_flow.csv, and every
// number the gradient-flow finding quotes, from gradient_flow.csv, in
// report.md.
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

// The last edge into the softmax, and the last out of W_Q (as the finding reads them).
double at_logits(const std::vector<Edge>& g) {
  double out = NAN;
  for (const Edge& e : g)
    if (e.to == "softmax") out = e.norm;
  return out;
}
double at_wq(const std::vector<Edge>& g) {
  double out = NAN;
  for (const Edge& e : g)
    if (e.from == "q_proj.weight") out = e.norm;
  return out;
}

int64_t last_step(const Drawings& d, const std::string& task, const std::string& mode) {
  int64_t last = -1;
  for (const auto& [key, edges] : d.graphs)
    if (std::get<0>(key) == task && std::get<1>(key) == mode)
      last = std::max(last, std::get<2>(key));
  return last;
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

// Every number gradient_flow_finding quotes, from gradient_flow.csv: per task
// the norms at the softmax's input and at W_Q, none and 1/sqrt(d_k), at step
// 0 and at each arm's last drawn step; its text tells the task where none's
// late norm at the softmax is smallest.
TEST_F(StudyFlowCsv, TheFindingsNumbersComeFromGradientFlowCsv) {
  const std::string out = path("study");
  Result r = run(kScalingStudy, kTrainRun, {"--out", out});
  ASSERT_EQ(r.code, 0) << r.err;
  const Drawings d = read_drawings(out + "/gradient_flow.csv");
  const std::string report = read(out + "/report.md");
  ASSERT_EQ(d.tasks.size(), 2u);
  auto graph = [&](const std::string& task, const std::string& mode, int64_t step) {
    return d.graphs.at({task, mode, step});
  };
  std::string shown;
  double smallest = INFINITY;
  for (const std::string& task : d.tasks) {
    const int64_t n_late = last_step(d, task, "none"), r_late = last_step(d, task, "inv_sqrt_dk");
    ASSERT_GT(n_late, 0) << task;
    ASSERT_GT(r_late, 0) << task;
    const auto n0 = graph(task, "none", 0), r0 = graph(task, "inv_sqrt_dk", 0),
               n1 = graph(task, "none", n_late), r1 = graph(task, "inv_sqrt_dk", r_late);
    const std::string detail =
        task + " (" + d.layer.at(task) +
        "), the gradient's norm at the logits, none and 1/sqrt(d_k): at step 0 " +
        format_norm(at_logits(n0)) + " and " + format_norm(at_logits(r0)) + " (at W_Q " +
        format_norm(at_wq(n0)) + " and " + format_norm(at_wq(r0)) +
        "); at each run's last evaluation, step " + std::to_string(n_late) + " " +
        format_norm(at_logits(n1)) + " and step " + std::to_string(r_late) + " " +
        format_norm(at_logits(r1)) + " (at W_Q " + format_norm(at_wq(n1)) + " and " +
        format_norm(at_wq(r1)) + ")";
    EXPECT_NE(report.find(detail), std::string::npos) << detail;
    if (!(at_logits(n1) < smallest)) continue;
    smallest = at_logits(n1);
    shown = "On `" + task +
            "`, one training step's gradient reaches the unscaled layer's softmax input with "
            "norm " +
            format_norm(at_logits(n0)) + " at the first step, as with 1/sqrt(d_k) (" +
            format_norm(at_logits(r0)) + "). At step " + std::to_string(n_late) + " it is " +
            format_norm(at_logits(n1)) +
            ": the gradient comes into the layer and stops at the softmax, and W_Q and W_K, which "
            "it must pass to reach, learn nothing more. With 1/sqrt(d_k) it is still " +
            format_norm(at_logits(r1)) + " at step " + std::to_string(r_late) + ".";
  }
  EXPECT_NE(report.find(shown), std::string::npos) << shown;
}

}  // namespace
}  // namespace gradflow::testing
