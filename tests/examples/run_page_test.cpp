// A run's page (examples/toolkit/training/run_page.h) from the training loop: what it holds,
// attention_grads.csv, that measuring for it leaves the run as it was, and a resume.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "examples/toolkit/training/run_page.h"
#include "nn/io/atomic_file.h"
#include "tests/examples/html_check.h"
#include "tests/examples/tiny_run.h"

namespace gradflow::training {
namespace {

size_t count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// The tiny run's hooks with what the page draws: an example and a text with a user's <tag>.
Hooks page_hooks(TinyRun& run) {
  Hooks h = run.hooks();
  h.attention_example = [&run] {
    nn::Seq2SeqBatch b = nn::make_eval_set(run.task, 1, 1, 5).front();
    AttentionExample e{.title = "test <reverse>"};
    for (int64_t j = 0; j < b.src.shape()[1] && b.src.at({0, j}) != nn::kPadToken; ++j)
      e.encoder_tokens.push_back("<s" + std::to_string(j) + ">");
    for (int64_t j = 0; j < b.tgt_in.shape()[1] && b.tgt_in.at({0, j}) != nn::kPadToken; ++j)
      e.decoder_tokens.push_back("t" + std::to_string(j));
    e.forward = [&run, b] { run.model.forward(b.src, b.tgt_in, b.src_pad); };
    return e;
  };
  h.page_text = [] { return std::string("decoded <script>alert(1)</script>"); };
  return h;
}

LoopOptions page_options(TinyRun& run, const std::string& out, int64_t steps) {
  LoopOptions o = run.options(out, steps);
  o.page = {.write = true, .command = "test --out '<x>'"};
  return o;
}

TEST(RunPage, ShowsTheRunItsGradientsMapsGraphAndText) {
  TempDir dir("run_page");
  TinyRun run(3);
  const TrainResult r = run.train(page_options(run, dir.str(), 7), page_hooks(run));
  ASSERT_EQ(r.outcome, Outcome::kFinished);
  EXPECT_EQ(r.written,
            (std::vector<std::string>{"log.csv", "attention_grads.csv", "checkpoint.safetensors",
                                      "model.safetensors", "index.html"}));
  const std::string html = read_file(dir.str("index.html"), 1 << 26);
  const testing::HtmlCheck c = testing::check_html(html);
  EXPECT_TRUE(c.problems.empty()) << c.summary();
  EXPECT_EQ(c.elements.at("script"), 2);  // the page's and its data, none from the text
  EXPECT_EQ(html.find("http-equiv=\"refresh\""), std::string::npos);  // finished: no reload
  EXPECT_NE(html.find("Finished: step 7 of 7."), std::string::npos);
  EXPECT_NE(html.find("<code>test --out &#39;&lt;x&gt;&#39;</code>"), std::string::npos);
  EXPECT_NE(html.find("decoded &lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_EQ(html.find("<script>alert"), std::string::npos);
  // The curves, the gradients (3 attention layers), the maps at the evaluations (steps 3, 6, 7)
  // with the tokens escaped in the figure and the data, and the graph's levels down to ops.
  EXPECT_TRUE(c.ids.count("curves"));
  EXPECT_TRUE(c.ids.count("attention-gradients-figure"));
  EXPECT_NE(html.find("data-label=\"dL/dS (scores), at evaluations\""), std::string::npos);
  for (const char* id : {"map-0", "map-1", "map-2", "attention-step", "attention-data"})
    EXPECT_TRUE(c.ids.count(id)) << id;
  EXPECT_NE(html.find("{\"steps\": [3,6,7]"), std::string::npos);
  EXPECT_NE(html.find("&lt;s0&gt;"), std::string::npos);
  EXPECT_NE(html.find("\"\\u003cs0\\u003e\""), std::string::npos);
  EXPECT_GE(count(html, "<details class=\"level\""), 3u);
  EXPECT_NE(html.find("every op: "), std::string::npos);
  EXPECT_NE(html.find("the graph of a training step after step 7"), std::string::npos);
  EXPECT_EQ(count(html, "<h3>after step 7</h3>"), 1u);
}

TEST(RunPage, AttentionGradsCsvHasAStepPerRowAndScoresAtEvaluations) {
  TempDir dir("run_page_csv");
  TinyRun run(4);
  run.train(page_options(run, dir.str(), 4), page_hooks(run));
  const auto rows = read_csv(dir.str("attention_grads.csv"));
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[0], (std::vector<std::string>{
                         "step", "encoder.layers.0.self_attn.W_Q", "encoder.layers.0.self_attn.W_K",
                         "encoder.layers.0.self_attn.W_V", "encoder.layers.0.self_attn.scores",
                         "decoder.layers.0.self_attn.W_Q", "decoder.layers.0.self_attn.W_K",
                         "decoder.layers.0.self_attn.W_V", "decoder.layers.0.self_attn.scores",
                         "decoder.layers.0.cross_attn.W_Q", "decoder.layers.0.cross_attn.W_K",
                         "decoder.layers.0.cross_attn.W_V", "decoder.layers.0.cross_attn.scores"}));
  for (size_t i = 1; i <= 4; ++i) {
    ASSERT_EQ(rows[i].size(), 13u);
    EXPECT_EQ(rows[i][0], std::to_string(i));
    for (size_t k = 1; k < 13; ++k) {
      const bool scores = k % 4 == 0, evaluated = i == 3 || i == 4;  // eval_every 3, and the last
      if (scores && !evaluated) {
        EXPECT_EQ(rows[i][k], "") << i << " " << k;
      } else {
        EXPECT_GT(std::stod(rows[i][k]), 0) << i << " " << k;
      }
    }
  }
}

TEST(RunPage, MeasuringForThePageLeavesTheRunAsItWas) {
  TempDir with("run_page_with"), without("run_page_without");
  TinyRun a(5), b(5);
  a.train(page_options(a, with.str(), 7), page_hooks(a));
  b.train(b.options(without.str(), 7), page_hooks(b));
  EXPECT_EQ(read_csv(with.str("log.csv")), read_csv(without.str("log.csv")));
  EXPECT_EQ(weights(a.model), weights(b.model));
  EXPECT_FALSE(fs::exists(without.str("index.html")));
}

TEST(RunPage, AResumeKeepsTheGradientRowsUpToItsCheckpoint) {
  TempDir dir("run_page_resume");
  {
    TinyRun first(6);
    first.train(page_options(first, dir.str(), 5), page_hooks(first));
  }
  // A row past the checkpoint's step 5, as a run killed after it would leave: dropped.
  std::string grads = read_file(dir.str("attention_grads.csv"), 1 << 20);
  grads += "6";
  for (int k = 0; k < 12; ++k) grads += ",9";
  write_file_atomic(dir.str("attention_grads.csv"), grads + "\n");
  TinyRun second(6);
  LoopOptions o = page_options(second, dir.str(), 7);
  o.resume_dir = dir.str();
  second.train(o, page_hooks(second));
  const auto rows = read_csv(dir.str("attention_grads.csv"));
  ASSERT_EQ(rows.size(), 8u);
  for (size_t i = 1; i < rows.size(); ++i) EXPECT_EQ(rows[i][0], std::to_string(i));
  EXPECT_NE(rows[6][1], "9");
  const std::string html = read_file(dir.str("index.html"), 1 << 26);
  EXPECT_TRUE(testing::check_html(html).problems.empty());
  EXPECT_NE(html.find("{\"steps\": [6,7]"), std::string::npos);  // this session's evaluations
}

TEST(RunPage, CurvesFromTheLogSkipWhatIsNotThere) {
  EXPECT_EQ(log_curves_svg(""), "");
  EXPECT_EQ(log_curves_svg("step,loss,lr,grad_norm,skipped\n"), "");
  const std::string svg = log_curves_svg(
      "step,loss,lr,grad_norm,skipped,val_loss,accuracy\n1,2.5,0.001,1.5,false,,\n"
      "2,2.0,0.002,nan,false,1.9,0.25\n3,1.8,0.003");  // a torn last row
  EXPECT_NE(svg.find("data-label=\"training batch\" data-points=\"1,2.5 2,2\""), std::string::npos);
  EXPECT_NE(svg.find("data-label=\"val_loss\" data-points=\"2,1.9\""), std::string::npos);
  EXPECT_NE(svg.find("data-label=\"accuracy\" data-points=\"2,0.25\""), std::string::npos);
  EXPECT_NE(svg.find("data-label=\"grad_norm\" data-points=\"1,1.5\""), std::string::npos);
  EXPECT_EQ(attention_gradients_svg("step,loss\n1,2\n"), "");
}

}  // namespace
}  // namespace gradflow::training
