// The train part's 2 x 2: why unscaled attention falls behind 1/sqrt(d_k).
//
// Under Adam, 1/sqrt(d_k) is unscaled attention whose W_Q and W_K start
// d_k^(-1/4) times smaller and learn d_k^(-1/4) times slower (docs/study.md,
// "Scale versus learning rate"). So the gap between `none` and 1/sqrt(d_k)
// has two possible causes, the saturated start and the fast step in logit
// space, and four arms cross them:
//
//                        W_Q, W_K learn at lr    at lr x d_k^(-1/4)
//   saturated start      none                    none_slow_qk
//   small start          none_small_init         none_reparam
//
// Splitting the gap along one path through the cells (none -> control ->
// reparam, or none -> slow -> reparam) gives each factor a share that depends
// on the path when the factors interact. So each seed's four runs give the
// main effects, each factor's change averaged over the other's two levels,
// and the interaction, the rate's change when started small minus when
// started saturated; a t-interval over seeds for each.
#include <array>
#include <cmath>
#include <map>
#include <sstream>

#include "examples/study/parts.h"

namespace gradflow::study {

namespace {

// The cells in the order of the table above, row by row.
const std::array<const char*, 4>& cells() {
  static const std::array<const char*, 4> names = {"none", kSlowQk, kControl, kReparam};
  return names;
}

std::string effect_text(const Interval& i) {
  return i.n == 0 ? std::string("-") : interval_text(i, 1, 100);
}

}  // namespace

std::vector<FactorialRow> summarise_factorial(const TrainResult& b) {
  std::vector<FactorialRow> out;
  for (const auto& [task, d_k] : settings_of(b)) {
    // seed -> each cell's final accuracy (NaN: not trained)
    std::map<int64_t, std::array<double, 4>> at;
    FactorialRow row{.task = task, .d_k = d_k};
    for (const FinalRow& f : b.finals) {
      if (f.run.task != task || f.run.d_k != d_k) continue;
      for (size_t c = 0; c < 4; ++c)
        if (f.run.mode == cells()[c]) {
          auto [it, added] = at.try_emplace(f.run.seed);
          if (added) it->second.fill(kNaN);
          it->second[c] = f.final_accuracy;
          row.accuracy[c] += f.final_accuracy;
          ++row.runs[c];
          row.solved[c] += f.reached_99;
        }
    }
    std::vector<double> start, rate, interaction, via_control, via_slow;
    for (const auto& [seed, y] : at) {
      const double none = y[0], slow = y[1], control = y[2], reparam = y[3];
      if (!(std::isfinite(none) && std::isfinite(slow) && std::isfinite(control) &&
            std::isfinite(reparam)))
        continue;
      start.push_back((control + reparam - none - slow) / 2);
      rate.push_back((slow + reparam - none - control) / 2);
      interaction.push_back((reparam - control) - (slow - none));
      via_control.push_back(control - none);  // the start's share along none -> control
      via_slow.push_back(reparam - slow);     // ... along none -> none_slow_qk
    }
    for (size_t c = 0; c < 4; ++c)
      row.accuracy[c] = row.runs[c] > 0 ? row.accuracy[c] / static_cast<double>(row.runs[c]) : kNaN;
    if (start.empty()) continue;
    row.start = t_interval(start), row.rate = t_interval(rate);
    row.interaction = t_interval(interaction);
    row.start_via_control = t_interval(via_control);
    row.start_via_slow = t_interval(via_slow);
    out.push_back(row);
  }
  return out;
}

std::string factorial_table(const std::vector<FactorialRow>& rows) {
  if (rows.empty()) return "";
  std::ostringstream md;
  md << "### Start and learning rate, crossed\n\n"
     << "Four unscaled arms cross how W_Q and W_K start (saturated as `none`, or d_k^(-1/4) "
        "smaller) with how fast they learn (at lr, or at lr x d_k^(-1/4)): `none`, "
        "`none_slow_qk`, `none_small_init` (the control) and `none_reparam`. Per seed, the "
        "start's main effect is the mean of the two small-start cells minus the mean of the two "
        "saturated ones, the rate's the mean of the two slow cells minus the two at lr, and the "
        "interaction the rate's effect when started small minus when started saturated; final "
        "held-out accuracy in points, mean over seeds and the half-width of its 95% "
        "t-interval. The last two columns split the gap along the two paths through the cells: "
        "the start's share is control - none along one, none_reparam - none_slow_qk along the "
        "other; when they differ, only the main effects say how much each factor costs.\n\n"
     << "| task | d_k | accuracy: none, slow, control, reparam | start | rate | "
        "interaction | start via control | start via slow |\n|---|---|---|---|---|---|---|---|\n";
  for (const FactorialRow& r : rows) {
    md << "| " << r.task << " | " << r.d_k << " | ";
    for (size_t c = 0; c < 4; ++c) {
      md << (c ? ", " : "") << significant(100 * r.accuracy[c], 3) << "%";
      if (two_valued(r.task)) md << " (" << r.solved[c] << "/" << r.runs[c] << " solved)";
    }
    md << " | " << effect_text(r.start) << " | " << effect_text(r.rate) << " | "
       << effect_text(r.interaction) << " | " << effect_text(r.start_via_control) << " | "
       << effect_text(r.start_via_slow) << " |\n";
  }
  md << "\n";
  return md.str();
}

Finding factorial_finding(const std::vector<FactorialRow>& rows) {
  // Each task at its largest d_k.
  std::map<std::string, const FactorialRow*> largest;
  std::vector<std::string> tasks;
  for (const FactorialRow& r : rows) {
    if (!largest.count(r.task)) tasks.push_back(r.task), largest[r.task] = &r;
    if (r.d_k > largest[r.task]->d_k) largest[r.task] = &r;
  }
  if (tasks.empty()) return {};
  bool start_costs = true, rate_costs = true, judged = true;
  Finding f{.figure = "final_accuracy.svg"};
  f.text =
      "Under Adam, 1/sqrt(d_k) equals unscaled attention whose W_Q and W_K start d_k^(-1/4) "
      "smaller and learn d_k^(-1/4) slower. So four unscaled arms cross the two differences: a "
      "saturated or a small start, and the usual or the slower learning rate.";
  for (const std::string& task : tasks) {
    const FactorialRow& r = *largest[task];
    judged = judged && has_interval(r.start) && has_interval(r.rate);
    start_costs = start_costs && has_interval(r.start) && r.start.lo > 0;
    rate_costs = rate_costs && has_interval(r.rate) && r.rate.lo > 0;
    f.text += " On `" + task + "` at d_k " + std::to_string(r.d_k) +
              ", averaged over the other difference, the small start gains " +
              significant(100 * r.start.mean, 2) + " points of accuracy and the slower rate " +
              significant(100 * r.rate.mean, 2) + ".";
    if (two_valued(task)) {
      f.text += " The arms solve " + std::to_string(r.solved[0]) + ", " +
                std::to_string(r.solved[1]) + ", " + std::to_string(r.solved[2]) + " and " +
                std::to_string(r.solved[3]) + " of " + std::to_string(r.runs[0]) +
                " runs (neither change, only the slower rate, only the small start, both)";
      f.text += r.solved[1] == 0 && r.solved[2] == 0 && r.solved[3] == r.runs[3]
                    ? ": it takes both; either one alone still fails."
                    : ".";
    }
    f.detail += std::string(f.detail.empty() ? "" : "; ") + task + " d_k " + std::to_string(r.d_k) +
                ", final accuracy in points, per seed then over " + std::to_string(r.start.n) +
                " seeds: start (small - saturated) " + effect_text(r.start) +
                ", rate (slower - usual) " + effect_text(r.rate) + ", interaction " +
                effect_text(r.interaction) + "; the start's share along none -> control " +
                effect_text(r.start_via_control) + ", along none_slow_qk -> none_reparam " +
                effect_text(r.start_via_slow);
  }
  f.detail += " (table \"Start and learning rate, crossed\").";
  f.title = !judged ? "Start and learning rate, crossed"
            : start_costs && rate_costs
                ? "Both the saturated start and the fast learning rate of W_Q and W_K cost "
                  "unscaled attention accuracy"
            : start_costs ? "The saturated start costs unscaled attention accuracy on every task"
            : rate_costs  ? "The fast learning rate of W_Q and W_K costs unscaled attention "
                            "accuracy on every task"
                          : "Neither the start nor the learning rate alone costs accuracy on "
                            "every task";
  return f;
}

}  // namespace gradflow::study
