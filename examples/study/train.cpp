// The train part: small transformers trained under each mode, over several
// seeds. Within a seed every mode of a (task, d_k) starts from the same
// weights and sees the same batches and the same evaluation set, so modes
// are compared seed by seed (paired; summary.cpp). d_k is varied at a fixed
// model width: one head whose size d_k is set on its own (Q, K, V map
// d_model -> d_k), so the residual stream and the feed-forward layers are
// the same for every d_k. One run is training_run.cpp's train_one; the
// part's CSV files and figures are train_figures.cpp's.
//
// Claims judged here: C7 (the scale matters, 1/sqrt(d_k) is balanced) and
// C8 (larger logits, entropy collapse and the Q/K gradient), which also reads
// the lr part's runs when it ran; C20 and C21 in mechanism.cpp. C3 to C5's
// training criteria read this part's summaries from init_qk.cpp and
// init_layer.cpp.
#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "examples/study/claims.h"
#include "examples/study/parts.h"

namespace gradflow::study {

TrainOptions train_options(const Settings& settings) {
  TrainOptions o;
  o.seeds = settings.seeds > 0 ? settings.seeds : settings.full ? 10 : 5;
  o.criteria_seeds = settings.seeds == 0;
  o.steps = settings.steps;
  // The default run trains the two ends, d_k 16 and 256, to stay within
  // three minutes; --full adds 64 between them.
  if (settings.full) o.d_ks = {16, 64, 256};
  if (settings.full) o.modes = study_modes();
  if (!settings.modes.empty()) o.modes = settings.modes;
  return o;
}

std::vector<ExtraSeeds> extra_seeds(const TrainOptions& o, int64_t own) {
  std::vector<ExtraSeeds> out;
  if (o.d_ks.empty()) return out;
  const int64_t largest = *std::max_element(o.d_ks.begin(), o.d_ks.end());
  for (const Claim& c : claims())
    for (const Criterion& k : c.criteria) {
      if (k.measure.file.empty() || k.seeds <= own) continue;
      for (const TaskSetup& task : o.tasks) {
        if (!k.measure.task.empty() && k.measure.task != task.task) continue;
        // Every arm of the contrast must be trained, or the criterion is not tested.
        bool all = true;
        for (const Term& t : k.measure.contrast)
          all = all && std::find(o.modes.begin(), o.modes.end(), t.arm) != o.modes.end();
        if (!all) continue;
        for (int64_t d_k : o.d_ks) {
          if (k.measure.d_k > 0 ? d_k != k.measure.d_k : k.measure.largest && d_k != largest)
            continue;
          for (const Term& t : k.measure.contrast) {
            auto it = std::find_if(out.begin(), out.end(), [&](const ExtraSeeds& e) {
              return e.task == task.task && e.mode == t.arm && e.d_k == d_k;
            });
            if (it == out.end()) it = out.insert(out.end(), {task.task, t.arm, d_k, 0});
            it->seeds = std::max(it->seeds, k.seeds);
          }
        }
      }
    }
  return out;
}

std::vector<RunSpec> train_runs(const Settings& settings, const TrainOptions& o) {
  if (o.eval_every < 1) fail("scaling_study: eval_every must be at least 1");
  const std::vector<ExtraSeeds> extra =
      o.criteria_seeds ? extra_seeds(o, o.seeds) : std::vector<ExtraSeeds>{};
  std::vector<RunSpec> runs;
  for (const TaskSetup& task : o.tasks)
    for (int64_t d_k : o.d_ks)
      for (const std::string& mode : o.modes) {
        int64_t seeds = o.seeds;
        for (const ExtraSeeds& e : extra)
          if (e.task == task.task && e.mode == mode && e.d_k == d_k) seeds = e.seeds;
        for (int64_t seed = 0; seed < seeds; ++seed) {
          RunSpec spec;
          spec.key = {task.task, mode, d_k, seed};
          spec.task = task;
          if (o.steps > 0) spec.task.steps = o.steps;
          spec.batch = o.batch, spec.eval_every = o.eval_every;
          spec.eval_examples = o.eval_examples;
          spec.seed = settings.seed;
          // Entropy collapse and the gradient at the softmax move within the
          // first tens of steps: probe the layers every 2 steps until 50.
          spec.probe_densely_until = 50;
          spec.record_maps = seed == 0;  // attention_maps.svg shows the first seed
          // gradient_flow.svg: unscaled against the reference, where they differ most.
          spec.record_flow = seed == 0 && arm(mode).anchor &&
                             d_k == *std::max_element(o.d_ks.begin(), o.d_ks.end());
          runs.push_back(spec);
        }
      }
  return runs;
}

TrainResult run_train(const Settings& settings, const TrainOptions& o) {
  std::vector<RunOutput> outputs = train_all("train", train_runs(settings, o), settings,
                                             settings.progress_for("train: in training", "run"));
  TrainResult result;
  result.seeds = o.seeds;
  for (RunOutput& r : outputs) {
    if (r.final.run.seed >= o.seeds) {  // a criterion's extra seeds: evaluated, not summarised
      result.extra_curves.insert(result.extra_curves.end(), r.curves.begin(), r.curves.end());
      result.extra_layers.insert(result.extra_layers.end(), r.layers.begin(), r.layers.end());
      result.extra_finals.push_back(r.final);
      continue;
    }
    result.curves.insert(result.curves.end(), r.curves.begin(), r.curves.end());
    result.layers.insert(result.layers.end(), r.layers.begin(), r.layers.end());
    result.finals.push_back(r.final);
    for (AttentionMap& m : r.maps) result.maps.emplace_back(r.final.run, std::move(m));
    if (!r.flows.empty()) result.flows.emplace_back(r.final.run, std::move(r.flows));
  }
  return result;
}

namespace {

// C7: the scale matters in training, and 1/sqrt(d_k) is never beaten.
Verdict balance_claim(const std::vector<SettingSummary>& training) {
  const int64_t seeds = seeds_of(training);
  int worse_settings = 0, better_settings = 0, modes = 0;
  std::string better_list;
  std::vector<std::string> trained;  // every arm trained, as figures list them
  for (const SettingSummary& s : training) trained.push_back(s.mode);
  for (const std::string& mode : in_drawing_order(trained)) {
    if (is_reference(mode)) continue;
    TrainingCount t = count_training(training, mode);
    if (t.settings == 0) continue;
    ++modes;
    worse_settings += t.worse;
    better_settings += t.better;
    if (!t.better_list.empty())
      better_list += (better_list.empty() ? "" : "; ") + mode + " on " + t.better_list;
  }
  if (modes == 0) return judge("C7", {}, {}, "no training in this run", false, {"a", "b"});
  const double differ = worse_settings + better_settings, better = better_settings;
  return judge(
      "C7",
      {{.criterion = "a",
        .passed = differ > criterion("C7", "a").margin,
        .estimate = {differ, kNaN, kNaN, kNaN, 0}},
       {.criterion = "b",
        .passed = better < criterion("C7", "b").margin,
        .estimate = {better, kNaN, kNaN, kNaN, 0}}},
      {},
      "paired over " + std::to_string(seeds) +
          " seeds against 1/sqrt(d_k): " + std::to_string(worse_settings) +
          " (mode, setting) pairs detectably worse, " + std::to_string(better_settings) +
          " detectably better" + (better_list.empty() ? "" : " (" + better_list + ")") +
          " (a difference counts when the whole 95% interval is past its margin, 1 accuracy "
          "point, 0.05 nats of loss AUC, 20 steps, or a solve count differs by Fisher's exact "
          "test, after Holm's correction over the modes at each task, d_k and metric; the "
          "loss-spike counts in final_metrics.csv are not judged)");
}

// C8, within each mode without QK normalisation (a comparison across modes
// would only say that some modes have larger logits than others), and within
// each setting (task, d_k, optimiser, lr): each figure minus its setting's
// mean over the mode's runs, since pooling settings would correlate the
// settings' means (Simpson's paradox). Over the mode's runs of the train and
// lr parts, larger logits go with lower entropy and a smaller Q/V gradient
// ratio. Runs of one seed share data and initial weights, so the intervals
// resample seeds, not runs. With QK normalisation the largest logit stays
// below the unscaled mode's.
Verdict logit_growth(const std::vector<FinalRow>& runs) {
  struct ModeRuns {
    std::vector<double> logit, entropy, ratio;
    std::vector<int64_t> seed;
    std::vector<std::string> setting;
  };
  std::map<std::string, ModeRuns> by_mode;
  double normalised_max = 0;
  std::map<std::string, double> largest;  // each mode's largest logit
  for (const FinalRow& r : runs) {
    largest[r.run.mode] = std::max(largest[r.run.mode], r.max_logit);
    if (qk_normalised(r.run.mode)) {
      normalised_max = std::max(normalised_max, r.max_logit);
      continue;
    }
    // A run that diverged early has no figures to rank.
    if (!(r.max_logit > 0) || !std::isfinite(r.max_logit) || !std::isfinite(r.min_entropy) ||
        !(r.grad_ratio_qv > 0) || !std::isfinite(r.grad_ratio_qv))
      continue;
    ModeRuns& m = by_mode[r.run.mode];
    m.logit.push_back(std::log(r.max_logit));
    m.entropy.push_back(r.min_entropy);
    m.ratio.push_back(std::log(r.grad_ratio_qv));
    m.seed.push_back(r.run.seed);
    m.setting.push_back(r.run.task + " " + std::to_string(r.run.d_k) + " " + r.optimizer + " " +
                        significant(r.lr, 6));
  }
  for (auto& [mode, m] : by_mode)
    for (std::vector<double>* figure : {&m.logit, &m.entropy, &m.ratio}) {
      std::map<std::string, std::pair<double, int>> sums;
      for (size_t i = 0; i < figure->size(); ++i) {
        auto& [total, n] = sums[m.setting[i]];
        total += (*figure)[i], ++n;
      }
      for (size_t i = 0; i < figure->size(); ++i) {
        const auto& [total, n] = sums[m.setting[i]];
        (*figure)[i] -= total / n;
      }
    }
  int modes = 0;
  std::string figures;
  // One row for each of (a) and (b), as declared: each needs every mode. The
  // row's setting lists each mode's own outcome, then the row's comes after it.
  std::vector<Outcome> entropy = {{.criterion = "a", .passed = true}},
                       ratio = {{.criterion = "b", .passed = true}};
  auto bounds = [](const BootstrapInterval& b) {
    return significant(b.estimate, 2) + " [" + significant(b.lo, 2) + ", " + significant(b.hi, 2) +
           "]";
  };
  std::vector<std::string> trained;  // every arm trained, as figures list them
  for (const FinalRow& r : runs) trained.push_back(r.run.mode);
  for (const std::string& mode : in_drawing_order(trained)) {
    auto it = by_mode.find(mode);
    if (it == by_mode.end() || it->second.logit.size() < 8) continue;
    const ModeRuns& m = it->second;
    const BootstrapInterval e = seed_bootstrap_spearman(m.logit, m.entropy, m.seed, 2000, 8);
    const BootstrapInterval g = seed_bootstrap_spearman(m.logit, m.ratio, m.seed, 2000, 9);
    ++modes;
    entropy.front().passed = entropy.front().passed && e.hi < criterion("C8", "a").margin;
    ratio.front().passed = ratio.front().passed && g.hi < criterion("C8", "b").margin;
    entropy.front().setting += (entropy.front().setting.empty() ? "" : ", ") + mode + " " +
                               yes_no(e.hi < criterion("C8", "a").margin);
    ratio.front().setting += (ratio.front().setting.empty() ? "" : ", ") + mode + " " +
                             yes_no(g.hi < criterion("C8", "b").margin);
    figures += (figures.empty() ? "" : "; ") + mode + " (" + std::to_string(m.logit.size()) +
               " runs, " + std::to_string(e.clusters) + " seeds): entropy " + bounds(e) +
               ", ratio " + bounds(g);
  }
  const double unscaled_max = largest["none"];
  const std::string measured =
      "Spearman's rho within each mode and setting (each figure minus its setting's mean), "
      "over its runs of the train and lr parts, of the largest logit with the lowest entropy "
      "and with the final W_Q/W_V gradient ratio, 95% intervals resampling seeds: " +
      (figures.empty() ? std::string("-") : figures) + "; largest logit with QK normalisation " +
      significant(normalised_max) + " against " + significant(unscaled_max) + " unscaled";
  std::vector<Outcome> outcomes;
  std::vector<std::string> untested;
  if (normalised_max > 0)  // QK normalisation was trained: the check can be made
    outcomes.push_back({.criterion = "c",
                        .passed = normalised_max < unscaled_max * criterion("C8", "c").margin,
                        .estimate = {normalised_max / unscaled_max, kNaN, kNaN, kNaN, 0}});
  else
    untested.push_back("c");
  for (Outcome* o : {&entropy.front(), &ratio.front()})
    o->setting = "every mode (" + o->setting + "), in all";
  if (modes > 0)
    outcomes.insert(outcomes.end(), {entropy.front(), ratio.front()});
  else
    untested.insert(untested.end(), {"a", "b"});
  return judge("C8", outcomes, {},
               measured + (modes > 0 ? "" : "; too few runs per mode (8 or more needed)"), false,
               untested);
}

const char* comparison_word(Comparison c) {
  return c == Comparison::Better ? "**better**" : c == Comparison::Worse ? "**worse**" : "no det.";
}

std::string metric_cell(const SettingSummary& s, size_t m) {
  const MetricSpec& spec = compared_metrics(s.task)[m];
  const Interval& i = s.metric[m];
  if (i.n == 0) return "-";
  if (spec.kind == MetricKind::Mean) return interval_text(i, spec.digits, spec.scale);
  if (spec.kind == MetricKind::Solved)
    return std::to_string(s.reached_99) + "/" + std::to_string(s.runs) + " [" +
           significant(i.lo, 2) + ", " + significant(i.hi, 2) + "]";
  // A Kaplan-Meier median and its interval; ">" when fewer than half got there.
  auto at = [&](double v) {
    return std::isfinite(v) ? significant(v, 3) : ">" + std::to_string(s.budget);
  };
  return at(i.mean) + " [" + at(i.lo) + ", " + at(i.hi) + "]";
}

std::string train_table(const TrainOptions& o, const std::vector<SettingSummary>& summary) {
  std::ostringstream md;
  md << "## train: in training\n\n";
  for (const TaskSetup& t : o.tasks) {
    md << "- `" << t.task << "`: " << (t.task == "reverse" ? "encoder-decoder" : "decoder-only")
       << ", " << t.model.layers << " layer(s) per stack, d_model " << t.model.d_model << ", d_ff "
       << t.model.d_ff << ", one head of size d_k, " << (o.steps > 0 ? o.steps : t.steps)
       << " steps"
       << (t.stop_at > 0 ? " at most (a run stops at its first evaluation with " +
                               significant(100 * t.stop_at) + "% held-out accuracy: solved)"
                         : "")
       << ", lr " << significant(t.lr);
    if (t.task == "recall")
      md << "; " << t.recall.pairs << " key-value pairs from " << t.recall.n_keys << " keys and "
         << t.recall.n_values << " values, then " << t.recall.queries << " queries";
    else
      md << "; 2 to 8 symbols from 8, reversed";
    md << ".\n";
  }
  md << "- AdamW (betas 0.9, 0.98; no weight decay), linear warm-up over 5% of the steps, "
        "gradient norm clipped at 1, batch "
     << o.batch << "; held-out evaluation every " << o.eval_every << " steps on " << o.eval_examples
     << " fixed examples. " << o.seeds
     << " seeds; within a seed every mode starts from the same weights and sees the same "
        "batches, so each mode is compared with 1/sqrt(d_k) seed by seed.\n"
        "- `reverse`: mean over seeds +- the half-width of the 95% t-interval. `accuracy` "
        "averages the last 10% of evaluations; `loss AUC` is the mean held-out loss over "
        "training (lower: learned sooner); `steps to 90%` is a Kaplan-Meier median with its 95% "
        "interval, since a run that never gets there is censored at the budget (\">200\": fewer "
        "than half got there).\n"
        "- `recall`: a run solves the task or stays near chance, so its outcome is a count, "
        "`solved` (with its exact 95% Clopper-Pearson interval on the share), and the time to "
        "solve, `steps to 99%` (a Kaplan-Meier median, censored at the budget). Compared with "
        "Fisher's exact test and the paired censored test (a sign-flip permutation test on "
        "differences bounded where a run was censored).\n"
        "- `vs 1/sqrt(d_k)`: the mode's difference seed by seed, and its p-value: for a "
        "mean, of \"not past the margin\" (1 point, 0.05 nats, 20 steps), so p < 0.05 is the "
        "whole 95% interval past it. **better** or **worse** after Holm's correction over the "
        "modes compared at the same task, d_k and metric; else no det. (no detectable "
        "difference). With 5 seeds a permutation test's smallest p is 1/16: the censored "
        "comparison can only describe.\n"
        "- `max logit` is the largest |scaled logit| of any layer over the run. `qk_norm`'s "
        "has a ceiling: LayerNorm gives q and k the norm sqrt(d_k) times its gains, so "
        "|q.k| / sqrt(d_k) <= sqrt(d_k) |g_q| |g_k| (4 at d_k 16 while the gains are 1); its "
        "largest logits sit near that ceiling, and their growth with d_k is the ceiling's, not "
        "a sharper attention's.\n\n";
  for (const TaskSetup& t : o.tasks) {
    const std::vector<MetricSpec>& metrics = compared_metrics(t.task);
    md << "| task | d_k | mode |";
    for (const MetricSpec& m : metrics) md << " " << m.name << " |";
    md << " vs 1/sqrt(d_k): ";
    for (size_t m = 0; m < metrics.size(); ++m) md << (m ? " | " : "") << metrics[m].name;
    md << " | max logit |\n|";
    for (size_t c = 0; c < 5 + 2 * metrics.size(); ++c) md << "---|";
    md << "\n";
    for (const SettingSummary& s : summary) {
      if (s.task != t.task) continue;
      md << "| " << s.task << " | " << s.d_k << " | " << s.mode << " | ";
      for (size_t m = 0; m < metrics.size(); ++m) md << metric_cell(s, m) << " | ";
      for (size_t m = 0; m < metrics.size(); ++m)
        md << (is_reference(s.mode) ? "(reference)"
                                    : comparison_text(s, m) + " " + comparison_word(s.verdict[m]))
           << " | ";
      md << significant(s.max_logit.mean, 3) << " |\n";
    }
    md << "\n";
  }
  return md.str();
}

}  // namespace

std::vector<Verdict> train_claims(const std::vector<SettingSummary>& summary,
                                  const std::vector<FinalRow>& finals,
                                  const std::vector<FinalRow>& lr_sweep) {
  std::vector<Verdict> out = {balance_claim(summary)};
  std::vector<FinalRow> runs = finals;
  runs.insert(runs.end(), lr_sweep.begin(), lr_sweep.end());
  if (!runs.empty()) out.push_back(logit_growth(runs));
  return out;
}

Section train_section(const TrainOptions& options, const TrainResult& result,
                      const std::vector<FinalRow>& lr_sweep) {
  Section s{.part = "train"};
  if (result.finals.empty()) return s;
  const std::vector<SettingSummary> summary = summarise_training(result.finals);
  s.claims = train_claims(summary, result.finals, lr_sweep);
  for (Verdict& v : mechanism_claims(result)) s.claims.push_back(std::move(v));
  s.markdown = train_table(options, summary) + factorial_table(summarise_factorial(result)) +
               update_table(result);
  s.csvs = train_csvs(result);
  s.plots = train_figures(result, summary);
  s.plots.push_back(update_figure(result, options.modes));
  if (!result.maps.empty()) s.plots.push_back(attention_maps_figure(result));
  if (!result.flows.empty()) s.plots.push_back(gradient_flow_figure(result));
  std::map<std::pair<std::string, int64_t>, std::pair<double, int>> per;
  for (const FinalRow& f : result.finals) {
    auto& [seconds, runs] = per[{f.run.task, f.run.d_k}];
    seconds += f.seconds, ++runs;
  }
  s.time_note = "Seconds per training run:";
  for (const auto& [key, value] : per)
    s.time_note += " " + key.first + " d_k " + std::to_string(key.second) + ": " +
                   significant(value.first / value.second, 3) + ";";
  return s;
}

}  // namespace gradflow::study
