// report.md: the claims first, each with its argument, this run's figures
// and a verdict computed from them; then the tables and plots of each part,
// the derivations behind the plotted slopes, and what the study cannot
// separate. docs/study.md explains the metrics and the literature.
#include "examples/study/report.h"
#include "examples/study/stats.h"

#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "examples/common/number_text.h"
#include "examples/study/full_analysis.h"
#include "examples/study/summary.h"
#include "examples/study/verdicts.h"
#include "nn/io/atomic_file.h"

namespace gradflow::study {

namespace {

// "0.912 +- 0.013" scaled, or "-".
std::string interval_text(const Interval& i, double scale, int digits) {
  if (i.n == 0) return "-";
  return format_interval(
      Interval{i.mean * scale, i.half_width * scale, i.lo * scale, i.hi * scale, i.n}, digits);
}

const char* comparison_word(Comparison c) {
  return c == Comparison::Better ? "**better**" : c == Comparison::Worse ? "**worse**" : "no det.";
}

void claims_section(std::ostringstream& md, const std::vector<Verdict>& verdicts) {
  md << "## The claims\n\n| id | claim | verdict |\n|---|---|---|\n";
  for (const Verdict& v : verdicts)
    md << "| " << v.id << " | " << v.claim << " | **" << v.verdict << "** |\n";
  md << "\n";
  for (const Verdict& v : verdicts)
    md << "### " << v.id << ": " << v.claim << "\n\n"
       << "- **Why it should hold.** " << v.why << "\n"
       << "- **Measured.** " << v.measured << "\n"
       << "- **Verdict: " << v.verdict << ".** " << v.reason << "\n\n";
}

void part_a_section(std::ostringstream& md, const RunInfo& info, const std::vector<InitRow>& init) {
  std::set<int64_t> keys;
  for (const InitRow& r : init) keys.insert(r.n_keys);
  const int64_t n = *std::next(keys.begin(), static_cast<long>(keys.size() / 2));
  md << "## Part A: attention at initialisation\n\n"
     << "Independent unit-variance q and k: for every mode, d_k and number of keys, "
     << info.part_a.draws << " independent draws of " << info.part_a.queries
     << " queries against the keys, fresh for every mode, so each mode's variance is measured "
        "from its own scaled products. Each figure is the mean over draws +- the half-width "
        "of its 95% interval (1.96 standard errors; the `_se` columns of init_metrics.csv hold "
        "the standard errors). Shown for "
     << n << " keys; init_metrics.csv has 8, 64 and 512.\n\n"
     << "| mode | d_k | logit_var | theory d_k s^2 | entropy_norm | max_weight | jacobian_norm "
        "|\n|---|---|---|---|---|---|---|\n";
  for (const InitRow& r : init) {
    if (r.n_keys != n || r.draws == 0) continue;
    md << "| " << r.mode << " | " << r.d_k << " | " << format_estimate(r.logit_var, 4) << " | "
       << significant(r.logit_var_theory, 4) << " | " << format_estimate(r.entropy_norm) << " | "
       << format_estimate(r.max_weight) << " | " << format_estimate(r.jacobian_norm) << " |\n";
  }
  md << "\nA freshly initialised attention layer (d_model " << info.part_a.d_model
     << ", one head of size d_k, " << n
     << " tokens of N(0, 1) input, loss <output, r> for a random r; the same layers and inputs "
        "for every mode). Its projections give q and k components of variance about 1/3, so q.k "
        "has variance d_k / 9 and every scaled mode starts near uniform; the unscaled one "
        "sharpens as d_k grows, and the control (none_small_init) starts like 1/sqrt(d_k).\n\n"
     << "| mode | d_k | layer entropy_norm | layer max_weight | "
        "\\|\\|dL/dS\\|\\| | \\|\\|dL/dW_Q\\|\\| | \\|\\|dL/dW_V\\|\\| | W_Q / W_V |\n"
        "|---|---|---|---|---|---|---|---|\n";
  for (const InitRow& r : init) {
    if (r.n_keys != n) continue;
    md << "| " << r.mode << " | " << r.d_k << " | " << format_estimate(r.layer_entropy_norm)
       << " | " << format_estimate(r.layer_max_weight) << " | "
       << format_estimate(r.grad_norm_scores) << " | " << format_estimate(r.grad_norm_wq) << " | "
       << format_estimate(r.grad_norm_wv) << " | " << format_estimate(r.grad_ratio_qv) << " |\n";
  }
  md << "\n### The slopes against d_k, and where they come from\n\n"
     << "In the layer, r W_O gives a gradient g at each attention output with d_k components "
        "of variance about d_model / (3 d_k), so g . v_j has a variance that does not depend on "
        "d_k. Through a near-uniform softmax, dL/dS_ij = p_ij (dL/dP_ij - sum_l p_il dL/dP_il) "
        "is 1/n times a centred copy of it: **||dL/dS|| has slope 0** in d_k. The gradient at "
        "the queries is dL/dQ = s (dL/dS) K, a sum over keys of d_k-dimensional k of variance "
        "1/3, so ||dL/dQ|| and **||dL/dW_Q|| grow like s sqrt(d_k)**: slope 0 for 1/sqrt(d_k), "
        "1/(2 sqrt(d_k)), the learned scale and QK-LayerNorm; -1/2 for 1/d_k; +1/2 for no "
        "scale until the softmax saturates and bends it down; +1/4 for the control, whose k is "
        "d_k^(-1/4) smaller. The value's gradient dL/dV = P^T g does not depend on s: **slope "
        "0** while attention stays spread, larger once P concentrates. The Q/V ratio's slope is "
        "the difference. For the logits themselves, std = s sqrt(d_k) for unit-variance q and "
        "k: slope 1/2 unscaled, 0 for 1/sqrt(d_k), -1/2 for 1/d_k.\n\n";
}

void part_b_section(std::ostringstream& md, const RunInfo& info,
                    const std::vector<SettingSummary>& summary) {
  md << "## Part B: in training\n\n";
  for (const TaskSetup& t : info.part_b.tasks) {
    md << "- `" << t.task << "`: " << (t.task == "reverse" ? "encoder-decoder" : "decoder-only")
       << ", " << t.layers << " layer(s) per stack, d_model " << t.d_model << ", d_ff " << t.d_ff
       << ", one head of size d_k, " << (info.part_b.steps > 0 ? info.part_b.steps : t.steps)
       << " steps, lr " << cli::number_text(t.lr);
    if (t.task == "recall")
      md << "; " << t.recall.pairs << " key-value pairs from " << t.recall.n_keys << " keys and "
         << t.recall.n_values << " values, then " << t.recall.queries << " queries";
    else
      md << "; 2 to 8 symbols from 8, reversed";
    md << ".\n";
  }
  md << "- AdamW (betas 0.9, 0.98; no weight decay), linear warm-up over 5% of the steps, "
        "gradient norm clipped at 1, batch "
     << info.part_b.batch << "; held-out evaluation every " << info.part_b.eval_every
     << " steps on " << info.part_b.eval_examples << " fixed examples. " << info.part_b.seeds
     << " seeds; within a seed every mode starts from the same weights and sees the same "
        "batches.\n"
     << "- Figures: mean over seeds +- the half-width of the 95% t-interval (n = seeds). "
        "`accuracy` averages the last 10% of evaluations; `steps to 90%` counts a run that "
        "never got there as its length (the `reached` column says how many did); `loss AUC` "
        "is the mean held-out loss over training (lower: learned sooner). `vs 1/sqrt(d_k)` is "
        "the paired difference seed by seed; it is called better or worse only when its 95% "
        "interval excludes 0 and it passes the margin stated in advance (1 point, 0.05 nats, "
        "20 steps); otherwise no detectable difference (no det.).\n\n";
  const std::vector<MetricSpec>& metrics = compared_metrics();
  md << "| task | d_k | mode | accuracy (points) | steps to 90% | reached | loss AUC | "
        "vs 1/sqrt(d_k): accuracy | loss AUC | steps to 90% | max logit |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const SettingSummary& s : summary) {
    md << "| " << s.task << " | " << s.d_k << " | " << s.mode << " | "
       << interval_text(s.metric[0], 100, 1) << " | " << interval_text(s.metric[2], 1, 0) << " | "
       << s.reached_90 << "/" << s.runs << " | " << interval_text(s.metric[1], 1, 2) << " | ";
    for (size_t m = 0; m < metrics.size(); ++m) {  // accuracy, loss AUC, steps to 90%
      if (s.mode == kDefaultMode) {
        md << "(reference) | ";
        continue;
      }
      md << interval_text(s.vs_default[m], metrics[m].scale, metrics[m].digits) << " "
         << comparison_word(s.verdict[m]) << " | ";
    }
    md << significant(s.max_logit.mean, 3) << " |\n";
  }
  md << "\n";
}

void part_d_section(std::ostringstream& md, const RunInfo& info,
                    const std::vector<DepthRow>& depth) {
  int64_t deepest = 0;
  for (const DepthRow& r : depth) deepest = std::max(deepest, r.layers);
  md << "## Part D: depth at initialisation\n\n"
     << "Encoders of 1, 2, 4 and 8 layers (d_model " << info.depth.d_model << ", one head of "
     << info.depth.d_model / info.depth.heads << ", d_ff " << info.depth.d_ff << ", "
     << info.depth.seq << " random tokens, batch " << info.depth.batch
     << ", cross-entropy against random targets), pre-LN and post-LN, " << info.depth.draws
     << " draws each (the same for every mode). For the " << deepest
     << "-layer stack: the gradient at W_Q of the last layer over the first's (post-LN grows "
        "toward the output, Xiong et al. 2020), and the token cosine after the last layer (toward "
        "1 is rank collapse, Noci et al. 2022); depth_metrics.csv has every layer and depth.\n\n"
     << "| mode | placement | W_Q grad, first layer | last layer | last / first | "
        "token cosine, last layer |\n|---|---|---|---|---|---|\n";
  for (const std::string& mode : study_modes())
    for (const char* placement : {"pre_ln", "post_ln"}) {
      const DepthRow *first = nullptr, *last = nullptr;
      for (const DepthRow& r : depth)
        if (r.mode == mode && r.norm_placement == placement && r.layers == deepest) {
          if (r.layer == 0) first = &r;
          if (r.layer == deepest - 1) last = &r;
        }
      if (!first || !last) continue;
      md << "| " << mode << " | " << placement << " | " << format_estimate(first->grad_norm_wq)
         << " | " << format_estimate(last->grad_norm_wq) << " | "
         << significant(last->grad_norm_wq.mean / first->grad_norm_wq.mean) << " | "
         << format_estimate(last->token_cosine) << " |\n";
    }
  md << "\n";
}

void confounds_section(std::ostringstream& md) {
  md << "## What this study cannot separate\n\n"
     << "- **d_k above d_model.** The width is fixed (d_model 32 in training, 64 at "
        "initialisation), so d_k = 256 adds parameters but no function class: a head's "
        "attention pattern has rank at most d_model either way.\n"
     << "- **Scale and learning rate.** Adam's step does not depend on the gradient's size, so "
        "multiplying the logits by s acts like changing the initialisation and the learning "
        "rate of W_Q and W_K. With one learning rate per task, a mode's result mixes the two; "
        "an LR sweep per mode would separate them (the `--full` extension's job). The control "
        "`none_small_init` removes only the difference at initialisation.\n"
     << "- **Small and few.** Toy tasks, one or two layers, one head, a few hundred steps: "
        "effects that need scale or long training do not show. With 3 seeds the t quantile is "
        "4.30, so only large differences are detected; `--full` runs 10.\n\n";
}

}  // namespace

void write_report(const std::string& dir, const RunInfo& info, const std::vector<InitRow>& init,
                  const PartBResult& training, const std::vector<DepthRow>& depth,
                  const FullResults& full) {
  write_csvs(dir, init, training, depth);
  write_full_csvs(dir, full);
  std::vector<PlotFile> plots = write_plots(dir, init, training, depth);
  for (PlotFile& p : write_full_plots(dir, full)) plots.push_back(p);
  const std::vector<SettingSummary> summary = summarise_training(training.finals);
  std::ostringstream md;
  md << "# Attention scaling study\n\n"
     << "Produced by `" << info.command << "` (seed " << info.seed << ", " << info.part_b.seeds
     << " training seeds, " << info.threads << " threads) in " << significant(info.seconds, 3)
     << " s. Every number below comes from this run; the CSV files beside this report hold all "
        "of them, and docs/study.md explains the claims, the metrics and the literature. "
        "Throughout, `a +- b` is a mean and the half-width of its 95% interval.\n\n";
  std::vector<Verdict> verdicts;
  if (!init.empty()) verdicts = judge_claims(init, summary);
  for (Verdict& v : judge_full_claims(full, training)) verdicts.push_back(v);
  if (!verdicts.empty()) claims_section(md, verdicts);
  if (!init.empty()) part_a_section(md, info, init);
  if (!training.finals.empty()) part_b_section(md, info, summary);
  if (!depth.empty()) part_d_section(md, info, depth);
  md << full_report_sections(info, full);
  confounds_section(md);
  md << "## Plots\n\n";
  for (const PlotFile& p : plots)
    md << "![" << p.file << "](" << p.file << ")\n\n" << p.caption << "\n\n";
  md << "## Where the time went\n\n"
     << "Part A " << significant(info.seconds_a, 3) << " s, Part B "
     << significant(info.seconds_b, 3) << " s, Part C " << significant(info.seconds_c, 3)
     << " s, Part D " << significant(info.seconds_d, 3) << " s, Part E "
     << significant(info.seconds_e, 3) << " s, Part F " << significant(info.seconds_f, 3)
     << " s, on " << info.threads << " threads (one job per thread).";
  std::map<std::pair<std::string, int64_t>, std::pair<double, int>> per;
  for (const FinalRow& f : training.finals) {
    auto& [seconds, runs] = per[{f.run.task, f.run.d_k}];
    seconds += f.seconds, ++runs;
  }
  if (!per.empty()) md << " Seconds per training run:";
  for (const auto& [key, value] : per)
    md << " " << key.first << " d_k " << key.second << ": "
       << significant(value.first / value.second, 3) << ";";
  md << "\n";
  write_file_atomic(dir + "/report.md", md.str());
}

}  // namespace gradflow::study
