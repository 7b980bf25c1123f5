// The claims the --full parts add, C8 to C12, judged on their runs. Each
// names its criteria and their outcomes; docs/study.md explains them.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "examples/study/correlation.h"
#include "examples/study/full_analysis.h"
#include "examples/study/stats.h"
#include "examples/study/verdicts.h"

namespace gradflow::study {

namespace {

std::string with_interval(const Interval& i, int digits = 2) {
  return i.n == 0 ? "-"
                  : significant(i.mean, digits + 1) + " [" + significant(i.lo, digits + 1) + ", " +
                        significant(i.hi, digits + 1) + "] (n = " + std::to_string(i.n) + ")";
}

bool qk_normalised(const std::string& mode) { return mode == "qk_norm" || mode == "qk_l2norm"; }

// C8: across the runs of Parts B and C without QK normalisation, larger
// logits go with lower entropy and a smaller Q/V gradient ratio; with QK
// normalisation the largest logit stays below the unscaled mode's.
Verdict logit_growth(const std::vector<FinalRow>& runs) {
  Verdict v{"C8",
            "logit growth drives entropy collapse and vanishing Q/K gradients without QK "
            "normalisation"};
  v.why =
      "As q and k align in training, |q.k| grows; the softmax sharpens (entropy falls) and "
      "its Jacobian shrinks, which cuts the gradient to W_Q and W_K but not to W_V "
      "(Dehghani et al. 2023; Wortsman et al. 2023). Normalising q and k bounds the logits.";
  std::vector<double> logit, entropy, ratio;
  double normalised_max = 0, unscaled_max = 0;
  for (const FinalRow& r : runs) {
    if (r.run.mode == "none") unscaled_max = std::max(unscaled_max, r.max_logit);
    if (qk_normalised(r.run.mode)) {
      normalised_max = std::max(normalised_max, r.max_logit);
      continue;
    }
    // A run that diverged early has no figures to rank.
    if (!(r.max_logit > 0) || !std::isfinite(r.max_logit) || !std::isfinite(r.min_entropy) ||
        !(r.grad_ratio_qv > 0) || !std::isfinite(r.grad_ratio_qv))
      continue;
    logit.push_back(std::log(r.max_logit));
    entropy.push_back(r.min_entropy);
    ratio.push_back(std::log(r.grad_ratio_qv));
  }
  if (logit.size() < 8) {
    v.verdict = "unclear", v.reason = "too few runs", v.measured = "-";
    return v;
  }
  const Interval with_entropy = spearman_interval(logit, entropy, 2000, 8);
  const Interval with_ratio = spearman_interval(logit, ratio, 2000, 9);
  const bool collapses = with_entropy.hi < 0, vanishes = with_ratio.hi < 0;
  const bool bounded = normalised_max > 0 && normalised_max < unscaled_max;
  v.measured = "over " + std::to_string(logit.size()) +
               " runs without QK normalisation (Parts B and C): Spearman's rho of the largest "
               "logit with the lowest entropy " +
               with_interval(with_entropy) + ", with the final W_Q/W_V gradient ratio " +
               with_interval(with_ratio) + "; largest logit with QK normalisation " +
               significant(normalised_max) + " against " + significant(unscaled_max) + " unscaled";
  v.verdict = verdict_of(collapses + vanishes + bounded, 3);
  v.reason =
      std::string("larger logits, lower entropy (interval below 0): ") + yes_no(collapses) +
      "; larger logits, smaller Q/V gradient ratio (interval below 0): " + yes_no(vanishes) +
      "; QK normalisation keeps the largest logit below the unscaled mode's: " + yes_no(bounded) +
      " (95% bootstrap intervals over runs)";
  return v;
}

// C9: QK normalisation's LR sensitivity is detectably lower than 1/sqrt(d_k)'s.
Verdict sensitivity_claim(const std::vector<Sensitivity>& sens, int64_t seeds) {
  Verdict v{"C9", "QK normalisation lowers the sensitivity to the learning rate"};
  v.why =
      "Without it, high learning rates grow the logits until attention is one-hot and the "
      "loss rises or diverges; with q and k normalised the logits are bounded (Wortsman et "
      "al. 2023).";
  int lower = 0, compared = 0;
  for (const Sensitivity& s : sens) {
    if (!qk_normalised(s.mode) || s.vs_default.n == 0) continue;
    ++compared;
    lower += s.verdict == Comparison::Better;
    v.measured += (v.measured.empty() ? "" : "; ") + s.mode + " at d_k " + std::to_string(s.d_k) +
                  ": " + format_interval(s.sensitivity, 3) +
                  " nats against 1/sqrt(d_k)'s, difference " +
                  describe(s.vs_default, kSensitivityMargin, false, "nats", 3);
  }
  for (const Sensitivity& s : sens)
    if (s.mode == kDefaultMode)
      v.measured += "; 1/sqrt(d_k) at d_k " + std::to_string(s.d_k) + ": " +
                    format_interval(s.sensitivity, 3);
  v.verdict = compared == 0 ? "unclear" : verdict_of(lower, compared);
  v.reason = "detectably lower (paired over " + std::to_string(seeds) + " seeds, margin " +
             significant(kSensitivityMargin) + " nats) in " + std::to_string(lower) + " of " +
             std::to_string(compared) + " (mode, d_k) settings";
  return v;
}

// C10: the best LR moves with width under the standard parametrisation and
// stays (within one grid step) under muP.
Verdict width_claim(const std::vector<BestLr>& best, const std::vector<double>& grid) {
  Verdict v{"C10", "the best learning rate transfers across width only under muP"};
  v.why =
      "Under the standard parametrisation a wider model's updates change its outputs more, "
      "so its best learning rate falls with width; muP scales the hidden and output "
      "learning rates by 1/width and the attention by 1/d_k so that they do not (Yang et "
      "al. 2022).";
  for (const BestLr& b : best)
    v.measured += (v.measured.empty() ? "" : "; ") + b.parametrization + " d_model " +
                  std::to_string(b.d_model) + ": " + significant(b.best_lr, 2);
  const int mup = best_lr_spread(best, "mup", grid);
  const int sp = std::max(best_lr_spread(best, "sp_inv_sqrt_dk", grid),
                          best_lr_spread(best, "sp_inv_dk", grid));
  const bool mup_stays = mup <= 1, sp_moves = sp >= 2;
  v.verdict = mup_stays && sp_moves     ? "holds"
              : !mup_stays && mup >= sp ? "does not hold"
                                        : "unclear";
  v.reason = "the best learning rate (loss averaged over seeds) moves by " + std::to_string(mup) +
             " grid steps across widths under muP (transfers: at most 1) and by " +
             std::to_string(sp) +
             " under the standard parametrisations (moves: at least 2); "
             "a half decade per step";
  return v;
}

// C11: without warm-up post-LN ends detectably worse; pre-LN does not.
Verdict warmup_claim(const std::vector<WarmupEffect>& effects, double pre_ratio,
                     double post_ratio) {
  Verdict v{"C11", "post-LN needs learning-rate warm-up where pre-LN does not"};
  v.why =
      "In post-LN the gradients of the layers near the output are large at initialisation, "
      "so early full-size Adam steps can wreck them; pre-LN's gradients are even across "
      "depth (Xiong et al. 2020).";
  int post_worse = 0, post_total = 0, pre_worse = 0, pre_total = 0;
  for (const WarmupEffect& e : effects) {
    const bool worse = e.verdict == Comparison::Worse;
    (e.placement == "post_ln" ? post_total : pre_total) += 1;
    (e.placement == "post_ln" ? post_worse : pre_worse) += worse;
    v.measured += (v.measured.empty() ? "" : "; ") + e.placement + " " + e.mode +
                  ": loss without warm-up minus with " +
                  format_interval(e.no_warmup_minus_warmup, 3, true);
  }
  v.measured +=
      "; gradient norm of the block nearest the output over the one nearest the "
      "input at the first step: pre-LN " +
      significant(pre_ratio) + ", post-LN " + significant(post_ratio);
  const bool post_needs = post_total > 0 && post_worse * 2 > post_total;
  const bool pre_fine = pre_worse == 0;
  v.verdict = verdict_of(post_needs + pre_fine, 2);
  v.reason = "post-LN detectably worse without warm-up for " + std::to_string(post_worse) + " of " +
             std::to_string(post_total) + " modes (needs it: a majority); pre-LN for " +
             std::to_string(pre_worse) + " of " + std::to_string(pre_total) +
             " (does not: none); margin " + significant(kSensitivityMargin) + " nats";
  return v;
}

// C12: runs whose attention collapsed spike or diverge more often, and the
// collapse comes first.
Verdict collapse_claim(const std::vector<FinalRow>& runs, int64_t eval_every) {
  Verdict v{"C12", "loss spikes and divergence follow attention entropy collapse"};
  v.why =
      "When a head's entropy collapses its softmax passes almost no gradient and tiny "
      "changes in the logits swing its output, which shows as spikes in the loss (Zhai et "
      "al. 2023).";
  int64_t collapsed = 0, collapsed_bad = 0, spread = 0, spread_bad = 0, both = 0, first = 0;
  for (const FinalRow& r : runs) {
    const bool bad = r.spikes > 0 || r.diverged;
    if (r.collapse_step >= 0) {
      ++collapsed, collapsed_bad += bad;
      if (r.first_spike_step >= 0) {
        ++both;
        // Entropy is seen at evaluations only: collapse counts as first when
        // it shows by the first evaluation after the spike.
        first += r.collapse_step <= r.first_spike_step + eval_every;
      }
    } else {
      ++spread, spread_bad += bad;
    }
  }
  if (collapsed == 0 || spread == 0) {
    v.verdict = "unclear";
    v.measured =
        std::to_string(collapsed) + " runs collapsed, " + std::to_string(spread) + " did not";
    v.reason = "both kinds of run are needed";
    return v;
  }
  const Interval d = proportion_difference(collapsed_bad, collapsed, spread_bad, spread);
  const bool more = d.lo > 0, ordered = both > 0 && first * 2 > both;
  v.measured = "spikes or divergence in " + std::to_string(collapsed_bad) + " of " +
               std::to_string(collapsed) + " runs whose entropy fell below " +
               significant(kCollapsedEntropy) + ", against " + std::to_string(spread_bad) + " of " +
               std::to_string(spread) + " others: difference " + with_interval(d) +
               "; collapse first in " + std::to_string(first) + " of " + std::to_string(both) +
               " runs with both";
  v.verdict = verdict_of(more + ordered, 2);
  v.reason = std::string("more spikes after collapse (95% score interval above 0): ") +
             yes_no(more) +
             "; collapse before the first spike in most runs with both: " + yes_no(ordered);
  return v;
}

}  // namespace

std::vector<Verdict> judge_full_claims(const FullResults& full, const PartBResult& training) {
  std::vector<Verdict> out;
  std::vector<FinalRow> runs = training.finals;
  runs.insert(runs.end(), full.sweep.begin(), full.sweep.end());
  if (!runs.empty()) out.push_back(logit_growth(runs));
  if (!full.sweep.empty()) {
    int64_t seeds = 0;
    for (const FinalRow& r : full.sweep) seeds = std::max(seeds, r.run.seed + 1);
    out.push_back(sensitivity_claim(lr_sensitivity(full.sweep), seeds));
  }
  if (!full.width.empty()) {
    std::vector<double> grid;
    for (const WidthRow& w : full.width)
      if (std::find(grid.begin(), grid.end(), w.run.lr) == grid.end()) grid.push_back(w.run.lr);
    std::sort(grid.begin(), grid.end());
    out.push_back(width_claim(best_lr_by_width(full.width), grid));
  }
  if (!full.depth.runs.empty())
    out.push_back(warmup_claim(warmup_effects(full.depth),
                               output_to_input_gradient(full.depth, "pre_ln"),
                               output_to_input_gradient(full.depth, "post_ln")));
  if (!full.sweep.empty()) out.push_back(collapse_claim(full.sweep, 10));
  return out;
}

}  // namespace gradflow::study
