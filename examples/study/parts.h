// The study's parts, in the order a reader meets them. Each part has its
// options (its own defaults, larger with Settings::full), a run that returns
// its rows, and a section for the report made from those rows: its claims
// with their verdicts, tables, CSV files and figures. A claim is judged in
// the file that measures it; the claims that also read another part's rows
// take them as arguments and say so.
#pragma once

#include <array>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "examples/study/study.h"

namespace gradflow::study {

// ---- init: attention at initialisation (init_qk.cpp, init_layer.cpp, init.cpp) ------
struct InitOptions {
  std::vector<int64_t> d_ks = {4, 16, 64, 256, 1024};
  std::vector<int64_t> n_keys = {8, 64, 512};
  // Random q, k: max(draws, draws x 64 / n_keys) draws of `queries` x n_keys.
  int64_t draws = 256, queries = 16;
  // Layer draws: max(8, layer_rows / n_keys), each a new layer on n_keys tokens.
  int64_t layer_rows = 1024, d_model = 64;
};
InitOptions init_options(const Settings& settings);  // --full: 8192 layer rows

struct InitRow {
  std::string mode;
  int64_t d_k = 0, n_keys = 0;
  // Independent unit-variance q and k, the seeds' setting (C1 to C4, C6): a
  // draw is `queries` queries against n_keys keys, fresh for every mode.
  // Not measured for the control and none_reparam (q, k not unit-variance).
  int64_t draws = 0;
  double logit_var_theory = 0;  // d_k s^2; NaN where there is no closed form
  Interval logit_var, entropy_norm, max_weight, jacobian_norm;  // mean_and_se over draws
  // A freshly initialised attention layer (C5; d_model 64, one head of size
  // d_k, n_keys tokens of N(0, 1) input, loss <output, r> for a random r): a
  // layer draw is a new layer and a new input, the same for every mode.
  int64_t layer_draws = 0;
  Interval layer_logit_var, layer_entropy_norm, layer_max_weight, layer_jacobian_norm;
  Interval grad_norm_scores;  // ||dL/dS||_F at the softmax input S = s q.k
  // ||dL/dS||_F of each layer draw: draw i is the same layer and input for
  // every mode, so two modes are compared draw by draw (paired).
  std::vector<double> grad_norm_scores_draws;
  Interval grad_norm_wq, grad_norm_wk, grad_norm_wv, grad_ratio_qv;  // ratio ||W_Q|| / ||W_V||
};
std::vector<InitRow> run_init(const Settings& settings, const InitOptions& options);

struct SettingSummary;
struct TrainResult;
// C1 to C6. C3, C4, C5 also read the train part's summaries (empty: judged
// at initialisation alone), C3 also its layer rows (`train`, when it ran).
std::vector<Verdict> init_claims(const std::vector<InitRow>& init,
                                 const std::vector<SettingSummary>& training,
                                 const TrainResult* train = nullptr);
Section init_section(const InitOptions& options, const std::vector<InitRow>& init,
                     const std::vector<SettingSummary>& training,
                     const TrainResult* train = nullptr);

// The two experiments' pieces. init_qk.cpp: independent q and k, C1 to C4
// and C6 (in that order), their table and figures.
void measure_qk(InitRow& row, const std::string& mode, size_t mode_index, const Settings& settings,
                const InitOptions& options);
std::vector<Verdict> qk_claims(const std::vector<InitRow>& init,
                               const std::vector<SettingSummary>& training,
                               const TrainResult* train);
std::string qk_table(const InitOptions& options, const std::vector<InitRow>& init);
std::vector<PlotFile> qk_figures(const std::vector<InitRow>& init);
// init_layer.cpp: an initialised layer, C5, its table and figure.
void measure_layer(InitRow& row, const Settings& settings, const InitOptions& options);
Verdict saturation_claim(const std::vector<InitRow>& init,
                         const std::vector<SettingSummary>& training);
std::string layer_table(const InitOptions& options, const std::vector<InitRow>& init);
PlotFile layer_figure(const std::vector<InitRow>& init);
// C5's criteria, stated in advance (docs/study.md), which the part's finding
// (init.cpp) reads too. Saturated on random q and k: entropy_norm below
// kSaturatedEntropy and max_weight above kSaturatedMaxWeight, whole 95%
// intervals; layer_saturated, the same in the initialised layer, over its
// layer draws. scores_difference: ||dL/dS|| of a's initialised layers minus
// b's, draw by draw (draw i is the same layer and input for every mode): a
// t-interval, none without draws.
inline constexpr double kSaturatedEntropy = 0.2, kSaturatedMaxWeight = 0.8;
bool saturated_at_init(const InitRow& r);
bool layer_saturated(const InitRow& r);
Interval scores_difference(const InitRow& a, const InitRow& b);
// Shared by the two: a generator for one (experiment, mode, d_k, n_keys,
// draw), independent of the order in which threads reach it; the rows'
// look-ups; the 95% t quantile for a mean over `draws`; the modes the rows
// hold; a panel of one field per mode of `modes` against d_k with its 95%
// intervals (a mode's missing figures, the control's in the random-vector
// part, left as a series with no points); and one grey reference series of
// dashed lines c d_k^slope, each through its mode's first point (modes not
// in the panel skipped).
Generator init_generator(uint64_t seed, uint64_t part, uint64_t mode, int64_t d_k, int64_t n_keys,
                         int64_t draw = 0);
const InitRow* find_init(const std::vector<InitRow>& init, const std::string& mode, int64_t d_k,
                         int64_t n_keys);
std::vector<int64_t> values_of(const std::vector<InitRow>& init, int64_t InitRow::*field);
int64_t quoted_keys(const std::vector<InitRow>& init);  // the middle key count: 64 by default
double z_of(int64_t draws);
std::vector<std::string> init_modes(const std::vector<InitRow>& init);
plot::Figure init_panel(const std::vector<InitRow>& init, int64_t n_keys,
                        const std::vector<std::string>& modes, const std::string& title,
                        const std::string& y, bool log_y, Interval InitRow::*field,
                        double (*transform)(double) = nullptr);
plot::Series slope_lines(const plot::Figure& f,
                         const std::vector<std::pair<std::string, double>>& slopes,
                         const std::string& label);

// ---- train: small transformers trained per mode (train.cpp, summary.cpp, seed_series.cpp) ---
struct TrainOptions {
  std::vector<int64_t> d_ks = {16, 256};  // --full: 16, 64, 256
  std::vector<TaskSetup> tasks = {reverse_setup(), recall_setup()};
  std::vector<std::string> modes = default_modes();                     // --full: study_modes()
  int64_t seeds = 5, batch = 64, eval_every = 10, eval_examples = 128;  // --full: 10 seeds
  int64_t steps = 0;                                                    // 0: each task's own
  // Train the seeds the claims' criteria ask for beyond `seeds` (extra_seeds);
  // off when --seeds sets the seeds of every run.
  bool criteria_seeds = true;
};
TrainOptions train_options(const Settings& settings);

struct TrainResult {
  std::vector<CurveRow> curves;
  std::vector<LayerRow> layers;
  std::vector<FinalRow> finals;
  std::vector<std::pair<RunKey, AttentionMap>> maps;  // the first seed's runs
  // The first seed's runs of the anchor arms at the largest d_k (gradient_flow.cpp).
  std::vector<std::pair<RunKey, std::vector<FlowGraph>>> flows;
  int64_t seeds = 0;  // the part's own seeds, 0 .. seeds - 1 (0: whatever the rows hold)
  // The runs of the seeds a criterion needs beyond the part's own
  // (Criterion::seeds), of its arms only: read by evaluate and written to
  // the CSV files, but not summarised, tabled or drawn with the rest.
  std::vector<CurveRow> extra_curves;
  std::vector<LayerRow> extra_layers;
  std::vector<FinalRow> extra_finals;
};
// The seeds beyond the part's own that the claims' criteria need, per
// (task, arm): every criterion of the claims table whose measure the train
// part computes and whose `seeds` is larger than `own` asks that many for
// the arms of its contrast, at the d_k it reads (its settings among
// `options.d_ks`). Seeds own .. needed - 1 run for those arms only.
struct ExtraSeeds {
  std::string task, mode;
  int64_t d_k = 0, seeds = 0;  // seeds: how many in all, the part's own included
};
std::vector<ExtraSeeds> extra_seeds(const TrainOptions& options, int64_t own);
// The part's runs, as it trains them (also for the memory check before it does).
std::vector<RunSpec> train_runs(const Settings& settings, const TrainOptions& options);
TrainResult run_train(const Settings& settings, const TrainOptions& options);

// summary.cpp: runs summarised over seeds, each mode against 1/sqrt(d_k)
// seed by seed (same seed, same initial weights, same batches), with the
// test that fits the kind of outcome.
enum class MetricKind {
  Mean,      // a figure on a continuous scale: paired t-interval, the whole of it past the margin
  Censored,  // steps to a threshold within the budget: Kaplan-Meier median, paired censored test
  Solved,    // reached the threshold or not: count with an exact interval, Fisher's exact test
};
struct MetricSpec {
  std::string name;         // the final_metrics.csv column
  double FinalRow::*field;  // where a run keeps it (Solved: its steps; the count reads `reached`)
  bool higher_is_better;
  double margin;     // the smallest difference that counts, in the metric's own units
  double scale;      // shown multiplied by this (accuracy in points: 100)
  std::string unit;  // as shown
  int digits;        // decimals shown
  MetricKind kind = MetricKind::Mean;
  bool FinalRow::*reached = nullptr;  // Censored and Solved: whether the run got there
};
// reverse: accuracy (margin 1 point), loss_auc (0.05 nats), steps_to_90
// (censored, 20 steps). recall, whose runs either solve it or stay near
// chance: solved (reached 99%) and steps_to_99 (censored, 20 steps).
const std::vector<MetricSpec>& compared_metrics(const std::string& task);

struct SettingSummary {
  std::string task, mode;
  int64_t d_k = 0;
  int64_t runs = 0, reached_90 = 0, reached_99 = 0, diverged = 0;
  int64_t budget = 0;  // the runs' steps (a censored time's bound)
  // Per compared metric, in compared_metrics(task) order: Mean, the mean
  // and 95% t-interval over the runs where it is finite (a diverged run has
  // no loss); Censored, the Kaplan-Meier median with its 95% interval (mean
  // = median, +inf when not reached); Solved, the share solved with its
  // exact (Clopper-Pearson) interval.
  std::vector<Interval> metric;
  // mode - inv_sqrt_dk seed by seed: Mean, the paired t-interval; Censored,
  // the median of the paired censored differences (no interval); Solved, the
  // difference of the shares with Newcombe's interval. For inv_sqrt_dk
  // itself n = 0, p 1 and NoDetectableDifference.
  std::vector<Interval> vs_default;
  // The comparison's p-value (Mean: margin_p_value; Censored:
  // paired_censored_test, 1 when the median difference is within the
  // margin; Solved: fisher_exact_p) and, after Holm's correction over the
  // modes compared at the same (task, d_k, metric), its verdict.
  std::vector<double> p_value;
  std::vector<Comparison> verdict;
  Interval max_logit, seq_accuracy;    // seq_accuracy: reverse only (n = 0 otherwise)
  Interval log_grad_ratio;             // log10 of FinalRow::grad_ratio_qv: it spreads over decades
  Interval log_grad_ratio_vs_default;  // its paired difference from 1/sqrt(d_k)'s, seed by seed
};
// One summary per (task, d_k, mode), in the order the runs came.
std::vector<SettingSummary> summarise_training(const std::vector<FinalRow>& finals);
const SettingSummary* find_setting(const std::vector<SettingSummary>& summaries,
                                   const std::string& task, int64_t d_k, const std::string& mode);
// Every (task, d_k) summary of `mode`, in order.
std::vector<const SettingSummary*> settings_for(const std::vector<SettingSummary>& summaries,
                                                const std::string& mode);
// Holm's level: a comparison is a verdict when its Holm-adjusted p is below it.
inline constexpr double kFamilyLevel = 0.05;
// The mean and 95% t-interval of the finite values; n = 0 (and NaN) when none.
Interval interval_of_finite(const std::vector<double>& values);
// "0.912 +- 0.013" with `digits` decimals, times `scale`; "-" for n = 0.
std::string interval_text(const Interval& i, int digits, double scale = 1);
// A mode's difference from 1/sqrt(d_k) on compared metric m, as the tables
// and claims quote it: "-12.0 +- 3.1 points, p 0.004", "+150 (median) steps, p 0.06".
std::string comparison_text(const SettingSummary& s, size_t m);
// A lower-is-better comparison in a table: "**lower**", "**higher**", "no det.".
const char* lower_higher(Comparison c);
// mode a - mode b on (task, d_k), paired by seed over the seeds both have finite.
Interval paired_between(const std::vector<FinalRow>& finals, const std::string& task, int64_t d_k,
                        const std::string& a, const std::string& b, double FinalRow::*field);

// A mode's paired comparisons with 1/sqrt(d_k) over every trained setting:
// the settings where some metric is detectably worse, or better.
struct TrainingCount {
  int settings = 0, worse = 0, better = 0;
  std::string worse_list, better_list;
};
TrainingCount count_training(const std::vector<SettingSummary>& training, const std::string& mode);
std::string describe_training(const TrainingCount& count, int64_t seeds);
int64_t seeds_of(const std::vector<SettingSummary>& training);

// seed_series.cpp: the same runs drawn over seeds, for figures. A learning
// curve of (task, d_k, mode) over seeds, or of one layer of it:
// at each step the mean and 95% t-interval of the seeds with a finite value
// there, drawn as a band (an accuracy's cut at 0 and 1, which none passes).
void curve_band(plot::Series& s, const std::vector<CurveRow>& curves, const std::string& task,
                int64_t d_k, const std::string& mode, double CurveRow::*field, bool accuracy);
void layer_band(plot::Series& s, const std::vector<LayerRow>& layers, const std::string& task,
                int64_t d_k, const std::string& mode, const std::string& layer,
                double LayerRow::*field);
// The same curves seed by seed, every seed's path in the one series (a NaN
// between paths): for recall, whose runs either solve it or do not, a mean
// over seeds would draw a path no run followed.
void curve_paths(plot::Series& s, const std::vector<CurveRow>& curves, const std::string& task,
                 int64_t d_k, const std::string& mode, double CurveRow::*field);
void layer_paths(plot::Series& s, const std::vector<LayerRow>& layers, const std::string& task,
                 int64_t d_k, const std::string& mode, const std::string& layer,
                 double LayerRow::*field);
// Whether a task's outcome is two-valued (solved or not): plotted seed by seed.
inline bool two_valued(const std::string& task) { return task == "recall"; }
// `s` (say a mode_series) with the mean over seeds and its 95% t-interval as
// error bars, one point per x, and markers.
plot::Series mean_series(plot::Series s, const std::map<double, std::vector<double>>& at);

// train.cpp: C7, and C8, which also reads the lr part's runs (empty when it
// did not run).
std::vector<Verdict> train_claims(const std::vector<SettingSummary>& summary,
                                  const std::vector<FinalRow>& finals,
                                  const std::vector<FinalRow>& lr_sweep);
Section train_section(const TrainOptions& options, const TrainResult& result,
                      const std::vector<FinalRow>& lr_sweep);
// train_figures.cpp: the part's CSV files (train_metrics.csv,
// train_layers.csv, final_metrics.csv) and its figures.
std::vector<CsvFile> train_csvs(const TrainResult& result);
std::vector<PlotFile> train_figures(const TrainResult& result,
                                    const std::vector<SettingSummary>& summary);
// The (task, d_k) settings of a run of the part, in the order they came; and
// one panel of a figure of the layer where the task looks its answer up
// (key_layer) over training, one series per mode of `modes` (log y unless not).
std::vector<std::pair<std::string, int64_t>> settings_of(const TrainResult& result);
plot::Figure key_layer_panel(const TrainResult& result, const std::string& task, int64_t d_k,
                             const std::string& title, const std::string& y,
                             double LayerRow::*field, const std::vector<std::string>& modes,
                             bool log_y = true);
// train_update.cpp: the update beside the gradient (at W_Q and at the
// scores) for the layer where each task looks its answer up, unscaled over
// 1/sqrt(d_k); its table ("" without those arms) and figure.
std::string update_table(const TrainResult& result);
PlotFile update_figure(const TrainResult& result, const std::vector<std::string>& modes);
// attention_maps.cpp: the figure of the attention maps (AttentionMap) of
// the first seed at the smallest and largest d_k, per task and arm, at
// initialisation and at the end. REQUIRES: result.maps is not empty.
PlotFile attention_maps_figure(const TrainResult& result);

// The train part's criteria (train_criteria.cpp): each criterion of the
// claims table with a measure, computed from the part's runs on the settings
// it reads (criterion_settings: each task trained with every arm of the
// contrast, at its largest d_k or at each, or at the one it names), on its
// seeds (Criterion::seeds, else the part's own).
std::vector<std::pair<std::string, int64_t>> criterion_settings(const Measure& m,
                                                                const TrainResult& result);
std::vector<CriterionResult> evaluate(const std::string& claim_id, const Criterion& c,
                                      const TrainResult& result);
// A measure's estimate on each of its settings over seeds 0 .. seeds - 1
// (0: every seed the rows hold), at `confidence`: what evaluate judges, and
// what the factorial's table shows.
struct SettingEstimate {
  std::string task;
  int64_t d_k = 0;
  Interval estimate = no_interval();
};
std::vector<SettingEstimate> estimate_all(const Measure& m, const TrainResult& result,
                                          int64_t seeds, double confidence = 0.95);
// Every verdict's criteria, a row per (claim, criterion, task, d_k) or per
// part-measured outcome: criteria.csv.
CsvFile criteria_csv(const std::vector<Verdict>& verdicts);
// mechanism.cpp: a claim judged on these runs (every criterion with a
// measure evaluated, the others' outcomes given; a criterion whose arms were
// not trained is not tested), and every claim of claims_of_the_mechanism()
// this run trained the arms of.
Verdict judge_on_runs(const std::string& id, const TrainResult& result,
                      const std::vector<Outcome>& outcomes = {}, const std::string& measured = "");
std::vector<Verdict> mechanism_claims(const TrainResult& result);

// factorial.cpp: start (saturated, small) x W_Q and W_K's learning rate (at
// lr, at lr x d_k^(-1/4)), the four unscaled arms, per (task, d_k) and
// outcome (final accuracy, held-out loss over training, the key layer's
// entropy over steps 10 to 50, its logit change over steps 0 to 50): each
// cell's mean over seeds, the main effects, the interaction and each change
// alone, over seeds (a setting without all four arms has no row), and its table.
struct FactorialRow {
  std::string task;
  int64_t d_k = 0;
  std::string outcome;
  std::array<Interval, 4> cells{};  // none, none_slow_qk, the control, none_reparam
  // "start", "rate", "interaction", "start alone", "rate alone"
  std::map<std::string, Interval> effects{};
};
std::vector<FactorialRow> summarise_factorial(const TrainResult& result);
std::string factorial_table(const std::vector<FactorialRow>& rows);

// gradient_flow.cpp: the key layer's backward graph of the anchor arms at the
// largest d_k, at initialisation and at each run's last evaluation step
// (late_flow_step; -1 when the run drew none), one drawing under another on
// one scale of edge widths.
PlotFile gradient_flow_figure(const TrainResult& result);
int64_t late_flow_step(const TrainResult& result, const std::string& task, const std::string& mode);
// On one drawing: the norm of the gradient that reached the softmax's input
// (the logits) and of the one that came into the layer's output; NaN when
// that run drew no graph at that step.
struct FlowNorms {
  double logits = NAN, output = NAN, wq = NAN;  // wq: the gradient of W_Q (q_proj.weight)
};
CsvFile gradient_flow_csv(const TrainResult& result);  // its drawn edges, gradient_flow.csv
FlowNorms flow_norms(const TrainResult& result, const std::string& task, const std::string& mode,
                     int64_t step);

// ---- depth: gradient flow across depth at initialisation ---------------------------------
// (depth.cpp: the runs; depth_claims.cpp: C14, C15; depth_report.cpp: the section; depth.h)
struct DepthOptions {
  std::vector<int64_t> depths = {1, 2, 4, 8};
  int64_t d_model = 64, heads = 1, d_ff = 256, seq = 32, batch = 8, vocab = 32;
  int64_t draws = 8;  // --full: 32
};
DepthOptions depth_options(const Settings& settings);
struct DepthRow {
  std::string mode, norm_placement;  // "pre_ln" or "post_ln"
  int64_t layers = 0, layer = 0;     // layer counts from 0 at the input
  int64_t draws = 0;
  Interval grad_norm_wq, grad_norm_wv, grad_norm_ff, token_cosine;  // mean_and_se over draws
  // The same embeddings through the layers' self-attention alone (no
  // residual, LayerNorm or feed-forward), where rank collapse is predicted:
  // the token cosine after this layer.
  Interval pure_attention_cosine;
  // token_cosine minus that after layer 0 of the same stack, draw by draw
  // (paired_difference's t-interval): whether whole blocks still grow alike.
  Interval token_cosine_rise;
};
std::vector<DepthRow> run_depth(const Settings& settings, const DepthOptions& options);
Section depth_section(const DepthOptions& options, const std::vector<DepthRow>& depth);

// ---- lr (--full): learning-rate sensitivity per mode (lr.cpp) ------------------------------
// Wortsman et al. 2023: every mode at two d_k over a grid of learning rates.
struct LrOptions {
  TaskSetup task = reverse_setup();
  std::vector<int64_t> d_ks = {16, 256};
  std::vector<double> lrs = {1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1};
  std::vector<std::string> modes = default_modes();  // --full: study_modes()
  int64_t seeds = 3;
};
LrOptions lr_options(const Settings& settings);
// One FinalRow per (d_k, mode, lr, seed); FinalRow::lr says which.
std::vector<RunSpec> lr_runs(const Settings& settings, const LrOptions& options);
// The runs of a grid over d_k, mode, learning rate and seed, in that order,
// under one optimizer ("adamw" or "sgd"): the lr and sgd parts' runs.
std::vector<RunSpec> grid_runs(const Settings& settings, const TaskSetup& task,
                               const std::vector<int64_t>& d_ks,
                               const std::vector<std::string>& modes,
                               const std::vector<double>& lrs, int64_t seeds,
                               const std::string& optimizer);
std::vector<FinalRow> run_lr(const Settings& settings, const LrOptions& options);

// A run's final loss for comparisons across learning rates: the final
// held-out loss, capped at the run's initial loss; a diverged run counts at
// its initial loss (as Wortsman et al. do). The width and depth-train parts
// compare with it too.
double capped_loss(const FinalRow& run);
// The LR sensitivity of one configuration (mode, d_k) and seed: the mean over
// the learning rates of capped_loss - the best capped_loss of that
// configuration and seed. Then over seeds.
struct Sensitivity {
  std::string mode;
  int64_t d_k = 0;
  Interval sensitivity;  // over seeds
  Interval vs_default;   // mode - inv_sqrt_dk, paired by seed (n = 0 for the reference)
  Comparison verdict = Comparison::NoDetectableDifference;  // lower is better, margin below
  double best_lr = 0, best_loss = 0;                        // of the loss averaged over seeds
};
inline constexpr double kSensitivityMargin = 0.05;  // nats
std::vector<Sensitivity> lr_sensitivity(const std::vector<FinalRow>& sweep);
// C9 and C12.
std::vector<Verdict> lr_claims(const std::vector<FinalRow>& sweep);
Section lr_section(const LrOptions& options, const std::vector<FinalRow>& sweep);

// ---- sgd: the scale under plain SGD (sgd.cpp, sgd_claim.cpp, sgd_report.cpp; sgd.h) ----------
// Under SGD a step is as large as its gradient (up to clipping), so a
// vanishing W_Q gradient would be a vanishing step, which AdamW's normalised
// step hides. reverse_setup() with the part's own number of steps, 150
// (docs/study.md, "sgd: the scale under plain SGD", says how the steps and
// the grid were measured). Two stages, so that no seed both chooses a
// learning rate and judges it:
//   selection   every arm at both d_k over the grid of learning rates, on the
//               selection seeds (RunKey seeds from selection_first_seed on);
//               each (mode, d_k) takes the rate of the lowest mean capped loss
//   comparison  the compared arms at their chosen rates on the comparison
//               seeds (0 to seeds - 1), clipped; at d_k 256 also unclipped
//               (the no-clip variant) and at kSgdCommonLr
// Within a seed every run starts from the same weights and sees the same
// batches, so the comparisons are paired by seed.
TaskSetup sgd_task();
struct SgdOptions {
  TaskSetup task = sgd_task();
  std::vector<int64_t> d_ks = {16, 256};
  std::vector<double> lrs = {0.03, 0.1, 0.3};
  std::vector<std::string> modes = {"none", "inv_sqrt_dk", "inv_dk"};  // the grid's arms
  std::vector<std::string> compared = {"none", "inv_sqrt_dk"};         // --full: all three
  int64_t seeds = 5;            // comparison seeds, or the more C13's criteria need; --full: 10
  int64_t selection_seeds = 2;  // --full: 3
  // Far enough from the comparison seeds that the two sets never meet:
  // max(100, seeds).
  int64_t selection_first_seed = 100;
  double clip = 1.0;  // RunSpec::clip of every run but the no-clip variant's (clip 0)
};
// --seeds N sets the comparison seeds to N and the selection seeds to at
// most N; --steps replaces the steps; --modes does not apply (the arms are fixed).
SgdOptions sgd_options(const Settings& settings);

// Criterion (a) of C13 compares the W_Q/W_V gradient ratio at this learning
// rate too: a ratio depends on the learning rate, and each arm's own best
// puts them at different ones. 0.1 is the grid's middle, where both none
// and inv_sqrt_dk train at both d_k: in the default run at seed 0 before the
// selection seeds were split off (3 seeds over the grid), none reached 50%
// token accuracy there at d_k 256 and 83% at 16, inv_sqrt_dk 97% and 89%,
// and no run diverged; at 0.03 inv_sqrt_dk is far from its best, at 0.3
// none at d_k 256 is down to 31%.
inline constexpr double kSgdCommonLr = 0.1;
inline constexpr int64_t kSgdSmallDk = 16, kSgdLargeDk = 256;  // C13's two d_k

// One run of the part: its FinalRow and the stage and clip it ran under.
struct SgdRow {
  FinalRow final;
  bool selection = false;  // a selection seed's run, else a comparison seed's
  double clip = 1.0;       // RunSpec::clip; 0: not clipped
};
// The selection's runs: every (d_k, mode, lr, selection seed), in that order.
std::vector<RunSpec> sgd_selection_runs(const Settings& settings, const SgdOptions& options);
// Per (mode, d_k): the learning rate whose capped loss (capped_loss),
// averaged over the selection seeds' clipped runs, is lowest. Comparison
// seeds' runs are not read.
struct SgdBest {
  std::string mode;
  int64_t d_k = 0;
  double best_lr = 0, best_loss = 0;  // best_loss: that mean
  int64_t seeds = 0;                  // the selection seeds it averaged
};
std::vector<SgdBest> sgd_best(const std::vector<SgdRow>& rows);
// The comparison's runs, on the comparison seeds: each compared arm at its
// chosen rate in `best`, clipped; at d_k 256 also unclipped (clip 0) and at
// kSgdCommonLr where that is not the chosen one.
std::vector<RunSpec> sgd_comparison_runs(const Settings& settings, const SgdOptions& options,
                                         const std::vector<SgdBest>& best);
// Before the selection: its runs and the comparison's at their most (each
// chosen rate counted apart from the common one, and left NaN: not yet
// chosen), for the memory check and the estimate.
std::vector<RunSpec> sgd_runs(const Settings& settings, const SgdOptions& options);
// Both stages, the selection's rows first.
std::vector<SgdRow> run_sgd(const Settings& settings, const SgdOptions& options);

// C13: none against inv_sqrt_dk, paired by comparison seed, clipped runs.
Verdict sgd_claim(const std::vector<SgdRow>& rows);
Section sgd_section(const SgdOptions& options, const std::vector<SgdRow>& rows);

// ---- width (--full): the best learning rate across width, SP against muP (width.cpp) ---------
// Yang et al. 2022: two heads of d_k = d_model / 2 at each width, under three
// parametrisations, over a grid of learning rates.
struct WidthOptions {
  std::vector<int64_t> d_models = {32, 64, 128, 256};
  std::vector<double> lrs = {3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1};
  int64_t seeds = 2, steps = 200, batch = 32;
};
WidthOptions width_options(const Settings& settings);
struct WidthRow {
  std::string parametrization;  // "sp_inv_sqrt_dk", "sp_inv_dk" or "mup"
  int64_t d_model = 0;
  FinalRow run;
};
const std::vector<std::string>& parametrizations();
std::vector<RunSpec> width_runs(const Settings& settings, const WidthOptions& options);
std::vector<WidthRow> run_width(const Settings& settings, const WidthOptions& options);

// Per parametrisation and width: the learning rate whose capped loss,
// averaged over seeds, is lowest, and the best per seed.
struct BestLr {
  std::string parametrization;
  int64_t d_model = 0;
  double best_lr = 0, best_loss = 0;
  std::vector<double> per_seed;
  double qk_std_init = 0, qk_std = 0;  // at the best lr, averaged over seeds
};
std::vector<BestLr> best_lr_by_width(const std::vector<WidthRow>& rows);
// How many grid steps the best learning rate moves across widths.
int best_lr_spread(const std::vector<BestLr>& best, const std::string& parametrization,
                   const std::vector<double>& grid);
// The least-squares slope of log(y) against log(x).
double log_log_slope(const std::vector<double>& x, const std::vector<double>& y);
Verdict width_claim(const std::vector<WidthRow>& rows);  // C10
Section width_section(const WidthOptions& options, const std::vector<WidthRow>& rows);

// ---- depth-train (--full): depth in training, pre- against post-LN (depth_train.cpp) --------
// Xiong et al. 2020: 4 layers per stack, pre- and post-LN, with and without
// warm-up, for three modes; each block's gradient norm at every evaluation.
struct DepthTrainOptions {
  int64_t layers = 4, seeds = 3, steps = 250;
  double lr = 1e-2;
  std::vector<std::string> modes = {"inv_sqrt_dk", "none", "qk_norm"};
};
DepthTrainOptions depth_train_options(const Settings& settings);
struct DepthTrainRow {
  std::string norm_placement, mode;  // "pre_ln" / "post_ln"
  bool warmup = false;
  int64_t seed = 0, step = 0;
  double loss = 0;
  std::string layer;
  double grad_norm = 0;
};
struct DepthTrainRun {
  std::string norm_placement;
  bool warmup = false;
  FinalRow run;
};
struct DepthTrainResult {
  std::vector<DepthTrainRow> rows;
  std::vector<DepthTrainRun> runs;
};
std::vector<RunSpec> depth_train_runs(const Settings& settings, const DepthTrainOptions& options);
DepthTrainResult run_depth_train(const Settings& settings, const DepthTrainOptions& options);

// Final loss without warm-up minus with it, paired by seed, per norm
// placement and mode (higher is worse; margin kSensitivityMargin).
struct WarmupEffect {
  std::string placement, mode;
  Interval no_warmup_minus_warmup;
  Comparison verdict = Comparison::NoDetectableDifference;
};
std::vector<WarmupEffect> warmup_effects(const DepthTrainResult& depth);
// Per norm placement: the gradient norm of the block nearest the output over
// the one nearest the input, at the first step, averaged over runs.
double output_to_input_gradient(const DepthTrainResult& depth, const std::string& placement);
Verdict warmup_claim(const DepthTrainResult& depth);  // C11
Section depth_train_section(const DepthTrainOptions& options, const DepthTrainResult& depth);

}  // namespace gradflow::study
