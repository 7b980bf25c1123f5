// The scaling study's parts run small: the init part's estimates against an
// independent estimate and the theory, the train part's pairing and
// determinism and its attention maps, the depth part, and the files
// write_report leaves.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "examples/study/parts.h"
#include "tensor/ops.h"
#include "tensor/parallel.h"

namespace gradflow::study {
namespace {

namespace fs = std::filesystem;

InitOptions small_init() {
  InitOptions o;
  o.d_ks = {4, 64};
  o.n_keys = {8, 64};
  o.draws = 64;
  o.layer_rows = 64;
  return o;
}

Settings with_threads(int threads) {
  Settings s;
  s.threads = threads;
  return s;
}

const InitRow& row_of(const std::vector<InitRow>& rows, const std::string& mode, int64_t d_k,
                      int64_t n_keys) {
  for (const InitRow& r : rows)
    if (r.mode == mode && r.d_k == d_k && r.n_keys == n_keys) return r;
  throw std::runtime_error("no row " + mode);
}

TEST(StudyPartA, EstimatesAgreeWithTheoryAndAnIndependentEstimate) {
  set_num_threads(1);
  std::vector<InitRow> rows = run_init(with_threads(2), small_init());
  ASSERT_EQ(rows.size(), study_modes().size() * 4);
  for (const InitRow& r : rows) {
    if (r.mode == kControl || r.mode == kReparam) {
      EXPECT_EQ(r.draws, 0);
      EXPECT_TRUE(std::isnan(r.entropy_norm.mean));
      continue;
    }
    // Fewer keys, more draws: 64 x 64 / 8 for 8 keys; then, for a variance
    // with a formula, as many more (up to 16 times) as the equivalence test
    // needs for a true identity to fail in under 1% of base seeds.
    const int64_t first = r.n_keys == 8 ? 512 : 64;
    if (std::isfinite(r.logit_var_theory)) {
      EXPECT_GE(r.draws, first) << r.mode;
      EXPECT_LE(r.draws, 16 * first) << r.mode;
    } else {
      EXPECT_EQ(r.draws, first) << r.mode;
    }
    if (std::isfinite(r.logit_var_theory)) {  // within 5 standard errors of d_k s^2
      EXPECT_NEAR(r.logit_var.mean, r.logit_var_theory, 5 * r.logit_var.se)
          << r.mode << " d_k " << r.d_k << " n " << r.n_keys;
    }
  }
  // An independent estimate of the unscaled softmax's shape (Box-Muller
  // normals, 4000 queries each against its own 64 keys, double precision):
  // the study's must agree within 0.01 (entropy) and 0.015 (max weight).
  for (int64_t d_k : {4, 64}) {
    Generator gen(12345 + d_k);
    Tensor q = randn({4000, 1, d_k}, gen, DType::Float64);
    Tensor k = randn({4000, 64, d_k}, gen, DType::Float64);
    Tensor logits = matmul(q, k.transpose(1, 2));  // (4000, 1, 64)
    AttentionStats want = attention_stats(softmax(logits, -1), logits, Tensor());
    const InitRow& got = row_of(rows, "none", d_k, 64);
    EXPECT_NEAR(got.entropy_norm.mean, want.entropy_norm, 0.01) << d_k;
    EXPECT_NEAR(got.max_weight.mean, want.max_weight, 0.015) << d_k;
  }
  // A layer draw is the same layer for every mode: the learned scale starts
  // as 1/sqrt(d_k) and so measures the same, and the control starts unsaturated.
  const InitRow& fixed = row_of(rows, "inv_sqrt_dk", 64, 64);
  const InitRow& learned = row_of(rows, "learned", 64, 64);
  EXPECT_NEAR(learned.layer_entropy_norm.mean, fixed.layer_entropy_norm.mean, 1e-5);
  EXPECT_NEAR(learned.grad_norm_wq.mean, fixed.grad_norm_wq.mean, 1e-4 * fixed.grad_norm_wq.mean);
  EXPECT_NEAR(row_of(rows, kControl, 64, 64).layer_entropy_norm.mean, fixed.layer_entropy_norm.mean,
              1e-5);
  EXPECT_LT(row_of(rows, "none", 64, 64).layer_entropy_norm.mean, 0.8);
}

TrainOptions tiny_train() {
  TrainOptions o;
  o.d_ks = {8};
  o.modes = {"none", "inv_sqrt_dk", "learned", kControl};
  o.seeds = 2;
  o.steps = 12;
  o.eval_every = 4;
  o.eval_examples = 16;
  o.batch = 8;
  return o;
}

TEST(StudyPartB, RunsArePairedAndDoNotDependOnTheThreadCount) {
  set_num_threads(1);
  TrainResult one = run_train(with_threads(1), tiny_train()),
              two = run_train(with_threads(2), tiny_train());
  ASSERT_EQ(one.finals.size(), 2u * 4 * 2);  // tasks x modes x seeds
  ASSERT_EQ(one.finals.size(), two.finals.size());
  for (size_t i = 0; i < one.finals.size(); ++i) {
    EXPECT_EQ(one.finals[i].run.mode, two.finals[i].run.mode);
    EXPECT_EQ(one.finals[i].final_loss, two.finals[i].final_loss);
    EXPECT_EQ(one.finals[i].loss_auc, two.finals[i].loss_auc);
  }
  // Evaluations at steps 0, 4, 8 and after the last update (12).
  size_t at_zero = 0;
  for (const CurveRow& c : one.curves) at_zero += c.step == 0;
  EXPECT_EQ(at_zero, one.finals.size());
  EXPECT_EQ(one.curves.size(), 4 * one.finals.size());
  // Paired: within a (task, seed) every mode starts from the same weights and
  // batches, so the learned scale (started at 1/sqrt(d_k)) has 1/sqrt(d_k)'s
  // first losses; another seed has other weights and data.
  auto first = [&one](const std::string& task, const std::string& mode, int64_t seed) {
    for (const CurveRow& c : one.curves)
      if (c.run.task == task && c.run.mode == mode && c.run.seed == seed && c.step == 0) return c;
    throw std::runtime_error("no curve");
  };
  for (const char* task : {"reverse", "recall"}) {
    EXPECT_NEAR(first(task, "learned", 0).train_loss, first(task, "inv_sqrt_dk", 0).train_loss,
                1e-5);
    EXPECT_NEAR(first(task, "learned", 1).eval_loss, first(task, "inv_sqrt_dk", 1).eval_loss, 1e-5);
    EXPECT_NE(first(task, "inv_sqrt_dk", 0).train_loss, first(task, "inv_sqrt_dk", 1).train_loss);
  }
  for (const LayerRow& l : one.layers) {
    EXPECT_EQ(l.layer_d_k, 8) << l.layer;  // every layer, cross-attention included
    EXPECT_GT(l.grad_norm_wv, 0) << l.layer;
  }
}

TEST(StudyTraining, UpdatesAreMeasuredBesideGradients) {
  set_num_threads(1);
  RunSpec spec;
  spec.key = {"reverse", "none", 8, 0};
  spec.task = reverse_setup();
  spec.task.steps = 6;
  spec.batch = 8, spec.eval_every = 3, spec.eval_examples = 8;
  RunOutput moved = train_one(spec);
  ASSERT_FALSE(moved.layers.empty());
  for (const LayerRow& r : moved.layers) {
    EXPECT_GT(r.update_wq, 0) << r.layer << " step " << r.step;
    EXPECT_GT(r.update_wv, 0) << r.layer;
    EXPECT_LT(r.update_wq, 1)
        << r.layer;  // a step of lr 3e-3 moves a weight by far less than itself
    EXPECT_GT(r.logit_change, 0) << r.layer;
  }
  // With a learning rate of 0 the update is 0 whatever the gradient, and the
  // second forward of the batch gives the same logits.
  spec.task.lr = 0;
  RunOutput still = train_one(spec);
  ASSERT_EQ(still.layers.size(), moved.layers.size());
  for (const LayerRow& r : still.layers) {
    EXPECT_GT(r.grad_norm_wq, 0) << r.layer;
    EXPECT_EQ(r.update_wq, 0) << r.layer;
    EXPECT_EQ(r.update_wk, 0) << r.layer;
    EXPECT_EQ(r.update_wv, 0) << r.layer;
    EXPECT_EQ(r.logit_change, 0) << r.layer;
  }
}

TEST(StudyTraining, TheReparametrisedArmFollowsOneOverSqrtDk) {
  // Unscaled, W_Q and W_K started d_k^(-1/4) smaller and learning d_k^(-1/4)
  // slower: under Adam, 1/sqrt(d_k) in other coordinates. The first step is
  // the same function (Adam's first step is lr times the gradient's sign,
  // which clipping does not change); later steps part only by clipping and
  // Adam's eps.
  set_num_threads(1);
  RunSpec spec;
  spec.task = reverse_setup();
  spec.task.steps = 20;
  spec.batch = 16, spec.eval_every = 1, spec.eval_examples = 16;
  spec.key = {"reverse", kDefaultMode, 64, 0};
  const RunOutput ref = train_one(spec);
  spec.key.mode = kReparam;
  const RunOutput reparam = train_one(spec);
  spec.key.mode = kControl;
  const RunOutput control = train_one(spec);
  EXPECT_NEAR(reparam.final.initial_loss, ref.final.initial_loss, 1e-5);
  ASSERT_EQ(reparam.layers.size(), ref.layers.size());
  for (size_t i = 0; i < ref.layers.size(); ++i) {
    if (ref.layers[i].step != 0) continue;
    // The same relative update of W_Q, and the same move of the logits, to
    // float32 rounding (the weights, their difference and its norm) and
    // Adam's eps, which weighs on the smallest gradient entries differently:
    // an entry of 1e-6 moves 0.1% less than its sign says, and the two arms'
    // entries differ by d_k^(1/4) and by the clip. So the logits' move is
    // held to a thousandth of the gap the control opens, the arm it must be
    // told apart from, rather than to a thousandth of its own size, which a
    // draw with more entries near 1e-6 exceeds (1.2e-3 on the seed stream of
    // 2026-12).
    EXPECT_NEAR(reparam.layers[i].update_wq, ref.layers[i].update_wq,
                1e-3 * ref.layers[i].update_wq);
    EXPECT_NEAR(reparam.layers[i].logit_change, ref.layers[i].logit_change,
                1e-3 * std::abs(control.layers[i].logit_change - ref.layers[i].logit_change));
    // The control moves W_Q as far as 1/sqrt(d_k) does in its own
    // coordinates, which is d_k^(1/4) = 2.83 times too far for the function.
    EXPECT_NEAR(control.layers[i].update_wq, ref.layers[i].update_wq * std::pow(64.0, 0.25),
                1e-3 * control.layers[i].update_wq);
  }
  for (size_t i = 0; i < ref.curves.size(); ++i)
    EXPECT_NEAR(reparam.curves[i].eval_loss, ref.curves[i].eval_loss,
                0.02 * ref.curves[i].eval_loss)
        << "step " << ref.curves[i].step;
}

// Each row of a map is a distribution over its keys (in a causal map a key
// after the query weighs exactly 0), and the map's entropy is the mean, over
// the rows with at least two visible keys, of H / log(visible keys): computed
// here again from the stored weights.
void expect_rows_are_distributions(const std::vector<float>& w, const AttentionMap& m, bool causal,
                                   double entropy, const std::string& what) {
  ASSERT_EQ(static_cast<int64_t>(w.size()), m.queries * m.keys) << what;
  double total_entropy = 0;
  int rows = 0;
  for (int64_t i = 0; i < m.queries; ++i) {
    double sum = 0, h = 0;
    for (int64_t j = 0; j < m.keys; ++j) {
      const double p = w[static_cast<size_t>(i * m.keys + j)];
      EXPECT_GE(p, 0) << what;
      if (causal && j > i) {
        EXPECT_EQ(p, 0) << what << ": query " << i << " sees key " << j;
      }
      sum += p;
      if (p > 0) h -= p * std::log(p);
    }
    EXPECT_NEAR(sum, 1, 1e-5) << what << ": row " << i;
    const int64_t visible = causal ? i + 1 : m.keys;
    if (visible >= 2) total_entropy += h / std::log(static_cast<double>(visible)), ++rows;
  }
  ASSERT_GT(rows, 0) << what;
  EXPECT_NEAR(entropy, total_entropy / rows, 1e-5) << what;
}

TEST(StudyTraining, AttentionMapsOfTheKeyLayerForTheFirstSeed) {
  set_num_threads(1);
  TrainOptions o;
  o.d_ks = {16};
  o.modes = {"none", "inv_sqrt_dk"};
  o.seeds = 2;
  o.steps = 4;
  o.eval_every = 2;
  o.eval_examples = 8;
  o.batch = 8;
  const TrainResult r = run_train(with_threads(2), o);
  ASSERT_EQ(r.maps.size(), 2u * 2);  // tasks x modes, the first seed only
  for (const auto& [run, m] : r.maps) {
    const std::string what = run.task + " " + run.mode;
    EXPECT_EQ(run.seed, 0) << what;
    EXPECT_EQ(m.layer, key_layer(run.task)) << what;
    if (run.task == "recall") {
      // Every position of the sequence, queries and keys alike.
      EXPECT_EQ(m.queries, nn::recall_seq_len(recall_setup().recall)) << what;
      EXPECT_EQ(m.keys, m.queries) << what;
    } else {
      // The target is the source reversed, each ending in EOS: as many real
      // queries as keys, 2 to 8 symbols and EOS.
      EXPECT_EQ(m.queries, m.keys) << what;
      EXPECT_GE(m.keys, 3) << what;
      EXPECT_LE(m.keys, 9) << what;
    }
    const bool causal = run.task == "recall";
    expect_rows_are_distributions(m.init, m, causal, m.entropy_init, what + " init");
    expect_rows_are_distributions(m.end, m, causal, m.entropy_end, what + " end");
    EXPECT_NE(m.init, m.end) << what << ": four updates moved nothing";
  }
  // Recording maps changes nothing else: the same run without them ends the same.
  RunSpec spec = train_runs(with_threads(1), o).front();
  ASSERT_TRUE(spec.record_maps);
  const RunOutput with_maps = train_one(spec);
  spec.record_maps = false;
  const RunOutput without = train_one(spec);
  EXPECT_TRUE(without.maps.empty());
  EXPECT_EQ(with_maps.final.final_loss, without.final.final_loss);
  EXPECT_EQ(with_maps.final.qk_std, without.final.qk_std);
  // The figure: one cell per weight, two rows (init, end) per task at d_k 16.
  const PlotFile figure = attention_maps_figure(r);
  EXPECT_EQ(figure.name, "attention_maps.svg");
  size_t cells = 0, want = 0;
  for (size_t at = figure.svg.find("class=\"cell\""); at != std::string::npos;
       at = figure.svg.find("class=\"cell\"", at + 1))
    ++cells;
  for (const auto& [run, m] : r.maps) want += 2 * static_cast<size_t>(m.queries * m.keys);
  EXPECT_EQ(cells, want);
  for (const char* text : {"reverse, dec0.cross, d_k = 16: at initialisation",
                           "reverse, dec0.cross, d_k = 16: after training (4 steps)",
                           "recall, dec1.self, d_k = 16: at the end (at most 4 steps; a run that "
                           "solves the task stops there)",
                           "||dL/dW_Q||"})
    EXPECT_NE(figure.svg.find(text), std::string::npos) << text;
}

TEST(StudyDepth, RowsPerLayerAndPlacement) {
  set_num_threads(1);
  DepthOptions o;
  o.depths = {1, 3};
  o.draws = 2;
  o.seq = 8;
  o.batch = 2;
  std::vector<DepthRow> rows = run_depth(with_threads(2), o);
  ASSERT_EQ(rows.size(), study_modes().size() * 2 * (1 + 3));
  for (const DepthRow& r : rows) {
    EXPECT_GT(r.grad_norm_wq.mean, 0);
    EXPECT_GT(r.grad_norm_ff.mean, 0);
    EXPECT_LE(std::abs(r.token_cosine.mean), 1.0);
    EXPECT_EQ(r.draws, 2);
  }
}

const CsvFile& csv_of(const Section& s, const std::string& name) {
  for (const CsvFile& f : s.csvs)
    if (f.name == name) return f;
  throw std::runtime_error(s.part + ": no " + name);
}

// A cell of a section's CSV file as the file holds it (text), by column name.
std::string cell(const CsvFile& f, const CsvRow& r, const std::string& column) {
  const auto at = std::find(f.columns.begin(), f.columns.end(), column);
  if (at == f.columns.end()) throw std::runtime_error(f.name + ": no column " + column);
  return r[static_cast<size_t>(at - f.columns.begin())].text();
}
double number(const CsvFile& f, const CsvRow& r, const std::string& column) {
  return std::stod(cell(f, r, column));
}

// The depth part's finding quotes the numbers of depth_metrics.csv, and the
// rise since layer 0, paired by draw, has the mean of a difference of means;
// and C15's criteria, which its finding quotes, read those rows.
TEST(StudyDepth, TheCriteriaQuoteTheCsvItWrites) {
  set_num_threads(1);
  DepthOptions o;
  o.depths = {1, 3};
  o.draws = 3;
  o.seq = 8;
  o.batch = 2;
  const Section s = depth_section(o, run_depth(with_threads(2), o));
  const CsvFile& csv = csv_of(s, "depth_metrics.csv");
  auto row = [&](const std::string& mode, const std::string& placement, int64_t layers,
                 int64_t layer) -> const CsvRow& {
    for (const CsvRow& r : csv.rows)
      if (cell(csv, r, "mode") == mode && cell(csv, r, "norm_placement") == placement &&
          cell(csv, r, "layers") == std::to_string(layers) &&
          cell(csv, r, "layer") == std::to_string(layer))
        return r;
    throw std::runtime_error("no row");
  };
  for (const CsvRow& r : csv.rows) {
    const CsvRow& first = row(cell(csv, r, "mode"), cell(csv, r, "norm_placement"),
                              std::stoll(cell(csv, r, "layers")), 0);
    EXPECT_NEAR(number(csv, r, "token_cosine_rise"),
                number(csv, r, "token_cosine") - number(csv, first, "token_cosine"), 1e-12);
  }
  EXPECT_EQ(number(csv, row(kDefaultMode, "pre_ln", 3, 0), "token_cosine_rise_se"), 0);
  // C15's criteria (its finding's numbers) read the deepest stacks' last layer.
  const Verdict& c15 = s.claims.back();
  ASSERT_EQ(c15.id, "C15");
  auto estimate = [&](const std::string& criterion, const std::string& setting) {
    for (const CriterionResult& r : c15.results)
      if (r.criterion == criterion && r.task.starts_with(setting)) return r.estimate.mean;
    ADD_FAILURE() << "no row " << criterion << " " << setting;
    return kNaN;
  };
  auto at = [&](const std::string& placement, int64_t layer, const std::string& column) {
    return number(csv, row(kDefaultMode, placement, 3, layer), column);
  };
  EXPECT_DOUBLE_EQ(estimate("a", "attention alone"), at("pre_ln", 2, "pure_attention_cosine"));
  EXPECT_DOUBLE_EQ(estimate("b", "pre-LN"), at("pre_ln", 2, "token_cosine"));
  EXPECT_DOUBLE_EQ(estimate("b", "post-LN"), at("post_ln", 2, "token_cosine"));
  EXPECT_DOUBLE_EQ(estimate("c", "pre-LN"), at("pre_ln", 2, "token_cosine_rise"));
  EXPECT_DOUBLE_EQ(estimate("c", "post-LN"), at("post_ln", 2, "token_cosine_rise"));
}

// A row's per-draw gradients at the scores are those its estimate averages,
// and C5's criteria, which its finding quotes, read init_metrics.csv.
TEST(StudyPartA, TheCriteriaQuoteTheCsvItWrites) {
  set_num_threads(1);
  const std::vector<InitRow> rows = run_init(with_threads(2), small_init());
  for (const InitRow& r : rows) {
    ASSERT_EQ(static_cast<int64_t>(r.grad_norm_scores_draws.size()), r.layer_draws) << r.mode;
    EXPECT_NEAR(stats::mean(r.grad_norm_scores_draws), r.grad_norm_scores.mean,
                1e-12 * r.grad_norm_scores.mean);
    EXPECT_GT(r.layer_jacobian_norm.mean, 0) << r.mode;
    EXPECT_LT(r.layer_jacobian_norm.mean, 1) << r.mode;
  }
  const Section s = init_section(small_init(), rows, {});
  const CsvFile& csv = csv_of(s, "init_metrics.csv");
  auto at = [&](const std::string& mode, int64_t d_k, const std::string& column) {
    for (const CsvRow& r : csv.rows)
      if (cell(csv, r, "mode") == mode && cell(csv, r, "d_k") == std::to_string(d_k) &&
          cell(csv, r, "n_keys") == "64")
        return number(csv, r, column);
    throw std::runtime_error("no row");
  };
  // C5's criteria (its finding's numbers) at the largest d_k, 64 keys.
  const Verdict* c5 = nullptr;
  for (const Verdict& v : s.claims)
    if (v.id == "C5") c5 = &v;
  ASSERT_NE(c5, nullptr);
  auto estimate = [&](const std::string& criterion) {
    for (const CriterionResult& r : c5->results)
      if (r.criterion == criterion) return r.estimate.mean;
    ADD_FAILURE() << "no row " << criterion;
    return kNaN;
  };
  EXPECT_DOUBLE_EQ(estimate("a"), at("none", 64, "entropy_norm"));
  EXPECT_NEAR(estimate("b"),
              at("none", 64, "jacobian_norm") / at(kDefaultMode, 64, "jacobian_norm"), 1e-12);
  EXPECT_NEAR(estimate("c"),
              at("none", 64, "grad_norm_scores") - at(kDefaultMode, 64, "grad_norm_scores"), 1e-9);
}

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

TEST(StudyReport, WritesEveryFileWithItsColumns) {
  set_num_threads(1);
  const fs::path dir = fs::temp_directory_path() / ("gradflow_study_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const InitOptions init_options = small_init();
  const TrainOptions train_options = tiny_train();
  DepthOptions depth_options;
  depth_options.depths = {1, 2};
  depth_options.draws = 2;
  const Settings settings = with_threads(2);
  std::vector<InitRow> init = run_init(settings, init_options);
  TrainResult training = run_train(settings, train_options);
  std::vector<DepthRow> depth = run_depth(settings, depth_options);
  const std::vector<SettingSummary> summary = summarise_training(training.finals);
  write_report(dir.string(), {.command = "scaling_study --test"},
               {init_section(init_options, init, summary),
                train_section(train_options, training, {}), depth_section(depth_options, depth)});
  EXPECT_EQ(
      first_line((dir / "final_metrics.csv").string()).rfind("task,d_k,mode,optimizer,seed,", 0),
      0u);
  EXPECT_EQ(first_line((dir / "depth_metrics.csv").string())
                .rfind("mode,norm_placement,layers,layer,grad_norm_wq,grad_norm_wv,grad_norm_ff,"
                       "token_cosine",
                       0),
            0u);
  const std::string init_header = first_line((dir / "init_metrics.csv").string());
  for (const char* column : {"draws", "entropy_norm_se", "max_weight_se", "grad_norm_scores",
                             "grad_ratio_qv", "layer_entropy_norm"})
    EXPECT_NE(init_header.find(column), std::string::npos) << column;
  EXPECT_NE(first_line((dir / "train_layers.csv").string()).find("layer_d_k"), std::string::npos);
  for (const char* file : {"report.md", "logit_std.svg", "softmax_shape.svg", "layer_gradients.svg",
                           "accuracy_curves.svg", "max_logit.svg", "grad_ratio.svg",
                           "depth_gradients.svg", "final_accuracy.svg", "attention_maps.svg"})
    EXPECT_TRUE(fs::is_regular_file(dir / file)) << file;
  // A new study can clear every file an old one wrote.
  for (const auto& entry : std::filesystem::directory_iterator(dir))
    EXPECT_NE(std::find(study_files().begin(), study_files().end(), entry.path().filename()),
              study_files().end())
        << entry.path();
  std::stringstream report;
  report << std::ifstream(dir / "report.md").rdbuf();
  for (const char* text : {"### C1", "### C7", "+-", "no det.", "## depth"})
    EXPECT_NE(report.str().find(text), std::string::npos) << text;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gradflow::study
