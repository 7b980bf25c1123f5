// gradient_flow.svg: the key layer's backward graph in the train part, which
// runs record it, what the graph holds, that its W_Q edge is the gradient the
// layer rows log, that recording it changes nothing, and the figure itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "examples/study/parts.h"
#include "tensor/parallel.h"

namespace gradflow::study {
namespace {

Settings with_threads(int threads) {
  Settings s;
  s.threads = threads;
  return s;
}

TrainOptions tiny() {
  TrainOptions o;
  o.d_ks = {8, 4};  // the largest first: the figure takes the largest, not the last
  o.modes = {"none", "inv_sqrt_dk", "inv_dk"};
  o.seeds = 2;
  o.steps = 4;
  o.eval_every = 2;
  o.eval_examples = 8;
  o.batch = 8;
  return o;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The anchor arms (none and 1/sqrt(d_k)), the first seed, the largest d_k:
// one graph per evaluation step with a backward (steps 0 and 2 of 4).
TEST(StudyFlow, TheAnchorArmsDrawTheKeyLayerAtEveryEvaluation) {
  set_num_threads(1);
  const TrainOptions o = tiny();
  for (const RunSpec& spec : train_runs(with_threads(1), o))
    EXPECT_EQ(spec.record_flow, spec.key.seed == 0 && spec.key.d_k == 8 &&
                                    (spec.key.mode == "none" || spec.key.mode == "inv_sqrt_dk"))
        << spec.key.task << " " << spec.key.mode << " " << spec.key.d_k << " " << spec.key.seed;
  const TrainResult r = run_train(with_threads(2), o);
  ASSERT_EQ(r.flows.size(), 2u * 2);  // tasks x anchor arms
  for (const auto& [run, flows] : r.flows) {
    const std::string what = run.task + " " + run.mode;
    ASSERT_EQ(flows.size(), 2u) << what;
    EXPECT_EQ(flows[0].step, 0) << what;
    EXPECT_EQ(flows[1].step, 2) << what;
    const Graph& g = flows[0].graph;
    int softmax = 0, wq = 0;
    for (const GraphNode& n : g.nodes)
      softmax += n.label == "softmax", wq += n.label == "q_proj.weight";
    EXPECT_EQ(softmax, 1) << what;
    EXPECT_EQ(wq, 1) << what;
    for (const GraphEdge& e : g.edges) EXPECT_TRUE(std::isfinite(e.grad_norm)) << what;
    // W_Q's edge carries dL/dW_Q: the norm the layer rows log at that step.
    for (const LayerRow& l : r.layers) {
      if (l.run.task != run.task || l.run.mode != run.mode || l.run.seed != 0 || l.run.d_k != 8 ||
          l.layer != key_layer(run.task) || l.step != 0)
        continue;
      EXPECT_NEAR(flow_norms(r, run.task, run.mode, 0).wq, l.grad_norm_wq, 1e-6 * l.grad_norm_wq)
          << what;
      // And the edge into the softmax the gradient at the logits they log.
      EXPECT_NEAR(flow_norms(r, run.task, run.mode, 0).logits, l.grad_norm_logits,
                  1e-5 * l.grad_norm_logits)
          << what;
      EXPECT_GT(l.grad_norm_logits, 0) << what;
    }
    const FlowNorms n = flow_norms(r, run.task, run.mode, 2);
    EXPECT_GT(n.logits, 0) << what;
    EXPECT_GT(n.output, 0) << what;
  }
  EXPECT_EQ(late_flow_step(r, "recall", "none"), 2);
  EXPECT_EQ(late_flow_step(r, "recall", "inv_dk"), -1);                // not drawn
  EXPECT_TRUE(std::isnan(flow_norms(r, "recall", "none", 4).logits));  // no backward at the end

  // The figure: a drawing per task, step and arm, one under another.
  const PlotFile figure = gradient_flow_figure(r);
  EXPECT_EQ(figure.name, "gradient_flow.svg");
  EXPECT_EQ(count(figure.svg, "<svg "), 1u + 2 * 2 * 2);
  for (const char* text : {"recall, dec1.self, none, d_k = 8, at initialisation",
                           "reverse, dec0.cross, inv_sqrt_dk, d_k = 8, step 2"})
    EXPECT_NE(figure.svg.find(text), std::string::npos) << text;
}

// entropy_and_logit_gradient.svg: a row per task at its largest d_k and
// group of arms (those of the story, then the others beside the anchors),
// accuracy, the key layer's entropy and the gradient at its logits.
TEST(StudyFlow, TheMechanismFigureHasARowPerSetting) {
  set_num_threads(1);
  const TrainResult r = run_train(with_threads(2), tiny());
  const std::vector<PlotFile> figures = train_figures(r, summarise_training(r.finals));
  const auto f = std::find_if(figures.begin(), figures.end(), [](const PlotFile& p) {
    return p.name == "entropy_and_logit_gradient.svg";
  });
  ASSERT_NE(f, figures.end());
  EXPECT_EQ(count(f->svg, ">held-out accuracy<"), 2u * 2);  // tasks x groups of arms
  EXPECT_EQ(count(f->svg, "d_k = 4"), 0u);                  // the largest d_k only
  EXPECT_EQ(count(f->svg, ">dec1.self entropy<"), 2u);
  EXPECT_EQ(count(f->svg, ">dec0.cross entropy<"), 2u);
  for (const char* panel :
       {">at the softmax&apos;s input<", ">softmax passes on<", ">on the right key<"})
    EXPECT_EQ(count(f->svg, panel), 2u * 2) << panel;
  for (const LayerRow& l : r.layers) EXPECT_GT(l.grad_norm_logits, 0) << l.layer << " " << l.step;
}

// Drawing the graph reads the gradients and changes none: the same run
// without it has the same curves, layer rows and final figures.
TEST(StudyFlow, RecordingTheGraphChangesNothing) {
  set_num_threads(1);
  for (RunSpec spec : train_runs(with_threads(1), tiny())) {
    if (!spec.record_flow) continue;
    const RunOutput with = train_one(spec);
    spec.record_flow = false;
    const RunOutput without = train_one(spec);
    EXPECT_TRUE(without.flows.empty());
    ASSERT_EQ(with.curves.size(), without.curves.size());
    for (size_t i = 0; i < with.curves.size(); ++i)
      EXPECT_EQ(with.curves[i].eval_loss, without.curves[i].eval_loss);
    ASSERT_EQ(with.layers.size(), without.layers.size());
    for (size_t i = 0; i < with.layers.size(); ++i) {
      EXPECT_EQ(with.layers[i].grad_norm_wq, without.layers[i].grad_norm_wq);
      EXPECT_EQ(with.layers[i].update_wq, without.layers[i].update_wq);
    }
    EXPECT_EQ(with.final.final_loss, without.final.final_loss);
  }
}

// Without the anchor arms there is nothing to draw.
TEST(StudyFlow, NoAnchorArmsNoFigure) {
  set_num_threads(1);
  TrainOptions o = tiny();
  o.modes = {"inv_dk"};
  o.tasks = {reverse_setup()};
  const TrainResult r = run_train(with_threads(1), o);
  EXPECT_TRUE(r.flows.empty());
}

}  // namespace
}  // namespace gradflow::study
