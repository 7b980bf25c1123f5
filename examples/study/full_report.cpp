// report.md's sections for Parts C, E and F: the tables behind C8 to C12.
#include <cmath>
#include <sstream>

#include "examples/study/full_analysis.h"
#include "examples/study/report.h"
#include "examples/study/stats.h"
#include "examples/study/training_run.h"

namespace gradflow::study {

namespace {

std::string interval_text(const Interval& i, int digits) {
  return i.n == 0 ? "-" : format_interval(i, digits);
}

const char* word(Comparison c) {
  return c == Comparison::Better ? "**lower**" : c == Comparison::Worse ? "**higher**" : "no det.";
}

}  // namespace

std::string full_report_sections(const RunInfo& info, const FullResults& full) {
  std::ostringstream md;
  if (!full.sweep.empty()) {
    const LrSweepOptions& o = info.lr_sweep;
    md << "## Part C: learning-rate sensitivity\n\n"
       << "The `" << o.task.task << "` task, " << o.task.steps << " steps, every mode at d_k";
    for (int64_t d : o.d_ks) md << " " << d;
    md << ", learning rates";
    for (double lr : o.lrs) md << " " << significant(lr, 2);
    md << ", " << o.seeds
       << " seeds. LR sensitivity (Wortsman et al. 2023): per configuration and seed, the mean "
          "over the learning rates of the final loss (capped at the initial loss; a diverged "
          "run counts at its initial loss) minus the best of them; then over seeds, +- the 95% "
          "interval. `vs 1/sqrt(d_k)` is paired by seed (margin "
       << significant(kSensitivityMargin) << " nats).\n\n"
       << "| mode | d_k | sensitivity (nats) | vs 1/sqrt(d_k) | best lr | its loss |\n"
          "|---|---|---|---|---|---|\n";
    for (const Sensitivity& s : lr_sensitivity(full.sweep))
      md << "| " << s.mode << " | " << s.d_k << " | " << interval_text(s.sensitivity, 3) << " | "
         << (s.mode == kDefaultMode ? "(reference)"
                                    : interval_text(s.vs_default, 3) + " " + word(s.verdict))
         << " | " << significant(s.best_lr, 2) << " | " << significant(s.best_loss) << " |\n";
    md << "\n";
  }
  if (!full.width.empty()) {
    const WidthSweepOptions& o = info.width;
    md << "## Part E: width and muP\n\n"
       << "The reverse task at d_model";
    for (int64_t d : o.d_models) md << " " << d;
    md << " (2 heads of d_k = d_model / 2, d_ff = 2 d_model), " << o.steps << " steps, batch "
       << o.batch << ", learning rates";
    for (double lr : o.lrs) md << " " << significant(lr, 2);
    md << ", " << o.seeds
       << " seeds, under three parametrisations: the standard one with 1/sqrt(d_k), the "
          "standard one with 1/d_k, and muP (1/d_k; hidden and output matrices learn at lr x "
       << kMuPBaseWidth
       << " / d_model; the output layer starts at zero; docs/study.md). The best learning rate "
          "is the one with the lowest capped final loss averaged over seeds; the std of q.k "
          "is measured on a held-out batch at that learning rate.\n\n"
       << "| parametrisation | d_model | best lr | per seed | its loss | std q.k at init | "
          "trained |\n|---|---|---|---|---|---|---|\n";
    const std::vector<BestLr> best = best_lr_by_width(full.width);
    for (const BestLr& b : best) {
      std::string seeds;
      for (double lr : b.per_seed) seeds += (seeds.empty() ? "" : ", ") + significant(lr, 2);
      md << "| " << b.parametrization << " | " << b.d_model << " | " << significant(b.best_lr, 2)
         << " | " << seeds << " | " << significant(b.best_loss) << " | "
         << significant(b.qk_std_init) << " | " << significant(b.qk_std) << " |\n";
    }
    md << "\nSlopes of log std(q.k) against log d_k:";
    for (const std::string& p : parametrizations()) {
      std::vector<double> d_k, init, trained;
      for (const BestLr& b : best)
        if (b.parametrization == p)
          d_k.push_back(b.d_model / 2.0), init.push_back(b.qk_std_init),
              trained.push_back(b.qk_std);
      md << " " << p << " " << significant(log_log_slope(d_k, init), 2) << " at initialisation, "
         << significant(log_log_slope(d_k, trained), 2) << " trained;";
    }
    md << " (independent q and k give 1/2; q and k aligned by training give 1).\n\n";
  }
  if (!full.depth.runs.empty()) {
    const DepthTrainOptions& o = info.depth_training;
    md << "## Part F: depth in training\n\n"
       << "Encoder-decoders of " << o.layers << " layers per stack on the reverse task, " << o.steps
       << " steps at lr " << significant(o.lr, 2) << ", " << o.seeds
       << " seeds, pre-LN and post-LN, with a linear warm-up over 5% of the steps or none. "
          "depth_train.csv has every block's gradient norm at every evaluation. Gradient norm "
          "of the block nearest the output over the one nearest the input at the first step: "
          "pre-LN "
       << significant(output_to_input_gradient(full.depth, "pre_ln")) << ", post-LN "
       << significant(output_to_input_gradient(full.depth, "post_ln")) << ".\n\n"
       << "| placement | mode | final loss without warm-up minus with (nats) | verdict |\n"
          "|---|---|---|---|\n";
    for (const WarmupEffect& e : warmup_effects(full.depth))
      md << "| " << e.placement << " | " << e.mode << " | "
         << interval_text(e.no_warmup_minus_warmup, 3) << " | " << word(e.verdict) << " |\n";
    md << "\n";
  }
  return md.str();
}

}  // namespace gradflow::study
