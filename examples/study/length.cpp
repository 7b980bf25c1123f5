// The length part's options and its share of the report: the claims C16 to
// C19 with their findings, the tables, length_metrics.csv,
// length_train.csv, length_critical.csv and their figures.
#include "examples/study/length.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "examples/study/parts.h"
#include "nn/data/recall_task.h"

namespace gradflow::study {

LengthOptions length_options(const Settings& settings) {
  LengthOptions o;
  if (settings.seeds > 0) o.seeds = settings.seeds;
  // The measurements at initialisation draw random q and k for a scale mode
  // of the library: --modes adds those it names (an arm that only changes
  // how W_Q and W_K start has nothing to measure there).
  for (const std::string& m : settings.modes)
    if (arm(m).scale == m && arm(m).qk_init_power == 0 &&
        std::find(o.init.modes.begin(), o.init.modes.end(), m) == o.init.modes.end())
      o.init.modes.push_back(m);
  if (settings.steps > 0)
    for (TaskSetup& t : o.tasks) t.steps = settings.steps;
  return o;
}

namespace {

// Per task, accuracy and top-1 mass against the test length, one line per
// mode.
PlotFile length_train_plot(const std::vector<LengthTestRow>& rows, const LengthOptions& o) {
  std::vector<plot::Figure> panels;
  for (const TaskSetup& task : o.tasks)
    for (auto [field, label] :
         {std::pair{&LengthTestRow::accuracy, std::string("held-out accuracy")},
          std::pair{&LengthTestRow::top1_mass, std::string("answer layer's top-1 mass")}}) {
      plot::Figure f = figure(task.task + ": " + label,
                              "test length (positions; trained at " +
                                  std::to_string(nn::recall_seq_len(task.recall)) + ")",
                              true, label, false);
      for (const std::string& mode : o.modes) {
        std::map<double, std::vector<double>> at;
        for (const LengthTestRow& r : rows)
          if (r.run.task == task.task && r.run.mode == mode && r.solved)
            at[static_cast<double>(r.test_len)].push_back(r.*field);
        f.series.push_back(mean_series(mode_series(mode), at));
      }
      panels.push_back(f);
    }
  return {"length_train.svg", plot::render_svg_grid(panels, 2, {.legend_once = true}),
          "The length part: recall and lookup (each pair one token) trained at " +
              std::to_string(o.tasks.front().recall.pairs) + " pairs and tested at " +
              std::to_string(o.test_pairs.front()) + " to " + std::to_string(o.test_pairs.back()) +
              " (RoPE positions): held-out accuracy and the answer layer's top-1 attention "
              "mass against the test length, log x axis, mean over the seeds that learned the "
              "trained length with its 95% interval (C18)."};
}

// The three claims at initialisation, before training's.
void add_untrained(Section& sec, const LengthOptions& o, const LengthResult& r) {
  if (r.init.empty()) return;
  const Verdict c16 = dispersion_claim(r.init), c17 = log_n_claim(r.init, o.init.built_len);
  const std::vector<CriticalFit> fits =
      critical_fits(r.critical, o.critical.tokens, o.critical.dim);
  const Verdict c19 = critical_claim(fits);
  sec.claims.insert(sec.claims.end(), {c16, c17, c19});
  std::ostringstream md;
  md << "### Attention against the number of keys, at initialisation\n\n"
     << "One query and n keys in d_k = " << o.init.d_k << " dimensions, entries N(0, 1), "
     << o.init.draws
     << " draws per n shared by every mode; the planted case replaces key 0 by a copy of the "
        "query. ssmax is built for L = "
     << o.init.built_len << " (its s log L = 1/sqrt(d_k)). Mean +- standard error over draws.\n\n"
     << "| mode | n | top weight | entropy / log n | planted mass |\n|---|---|---|---|---|\n";
  for (const LengthInitRow& row : r.init)
    if (row.n == o.init.ns.front() || row.n == o.init.built_len || row.n == o.init.ns.back())
      md << "| " << row.mode << " | " << row.n << " | " << significant(row.max_weight.mean, 3)
         << " +- " << significant(row.max_weight.se, 2) << " | "
         << significant(row.entropy_norm.mean, 3) << " +- " << significant(row.entropy_norm.se, 2)
         << " | " << significant(row.planted_mass.mean, 3) << " +- "
         << significant(row.planted_mass.se, 2) << " |\n";
  md << "\nEvery n is in `length_metrics.csv`.\n\n### The critical factor\n\n"
     << "A pre-LN attention layer with identity projections on " << o.critical.tokens
     << " unit tokens of pairwise correlation rho in " << o.critical.dim
     << " dimensions, logits gamma log(n) <x_i, x_j>, " << o.critical.draws
     << " draws; gamma* is where the mean angle between input and output falls to half its "
        "gamma = 0 value (95% bootstrap interval over draws); `toy` is the same argument "
        "worked out at this n and dimension.\n\n"
     << "| rho | 1/(1 - rho) | measured gamma* | toy |\n|---|---|---|---|\n";
  for (const CriticalFit& f : fits)
    md << "| " << significant(f.rho, 2) << " | " << significant(f.predicted, 3) << " | "
       << significant(f.measured.mean, 3) << " [" << significant(f.measured.lo, 3) << ", "
       << significant(f.measured.hi, 3) << "] | " << significant(f.toy, 3) << " |\n";
  md << "\n";
  sec.markdown += md.str();
  sec.csvs.push_back(length_metrics_csv(r.init));
  sec.csvs.push_back(critical_csv(r.critical));
  sec.plots.push_back(length_init_plot(r.init));
  sec.plots.push_back(critical_plot(r.critical, fits));
}

}  // namespace

LengthResult run_length(const Settings& settings, const LengthOptions& o) {
  LengthResult r;
  r.init = measure_length_init(o.init, settings.seed);
  r.critical = measure_critical(o.critical, settings.seed);
  r.train = run_length_train(settings, o);
  return r;
}

Section length_section(const LengthOptions& o, const LengthResult& result) {
  Section sec{.part = "length"};
  sec.markdown = "## length: the scale and the number of keys\n\n";
  add_untrained(sec, o, result);
  const LengthTrainResult& train = result.train;
  if (train.rows.empty()) return sec;
  sec.claims.push_back(extrapolation_claim(train.rows, o));
  // What the log-n modes do to the trained answer's attention at the
  // longest test, beside what they do to its accuracy. Sharper: every
  // log-n mode's paired difference in top-1 mass above 0 on every task, its
  // whole 95% interval.
  std::ostringstream sharp;
  const int64_t longest = o.test_pairs.back();
  for (const TaskSetup& task : o.tasks)
    for (const std::string& mode : o.modes)
      if (!is_reference(mode)) {
        const Interval d = length_difference(train.rows, task.task, mode, kDefaultMode, longest,
                                             &LengthTestRow::top1_mass);
        sharp << " " << task.task << " at " << longest
              << " pairs, the answer layer's top-1 mass of " << mode
              << " minus 1/sqrt(d_k)'s, paired by seed: " << interval_text(d, 3) << ".";
      }
  sec.markdown +=
      "The answer's attention at the longest test, beside its accuracy (not a "
      "criterion of C18):" +
      sharp.str() + "\n\n";
  std::ostringstream md;
  const nn::RecallTaskConfig& first = o.tasks.front().recall;
  md << "### Train short, test long\n\n"
     << "Recall with " << first.n_keys << " keys and " << first.n_values << " values, "
     << first.queries
     << " queries, in two forms: `recall` (an induction circuit: the value is the token after the "
        "key) and `lookup` (each pair one token: one lookup of the token with the query's "
        "key), both two layers. RoPE positions (a learned table has no rows past the trained "
        "length), d_k "
     << o.d_k << ", trained at " << first.pairs << " pairs for at most " << o.tasks.front().steps
     << " (recall) and " << o.tasks.back().steps << " (lookup) steps, stopping at 99% held out, "
     << o.seeds
     << " seeds; then evaluated on 256 fresh sequences at each length. Accuracy at a longer "
        "length mixes two effects this part does not separate: attention dispersing over more "
        "keys, which log n addresses, and RoPE at distances training never saw. Held-out "
        "accuracy and the answer layer's top-1 attention mass (its largest weight at each "
        "answer's query), mean +- the 95% t-interval over the seeds that learned the trained "
        "length (97% of 1024 fresh answers there). Learned:";
  std::map<std::pair<std::string, std::string>, std::pair<int, int>> solved;
  for (const LengthTestRow& r : train.rows)
    if (r.test_len == r.train_len) {
      auto& [s, n] = solved[{r.run.task, r.run.mode}];
      ++n;
      s += r.solved;
    }
  for (const TaskSetup& task : o.tasks)
    for (const std::string& mode : o.modes) {
      const auto& [s, n] = solved[{task.task, mode}];
      md << " " << task.task << " " << mode << " " << s << " of " << n
         << (task.task == o.tasks.back().task && mode == o.modes.back() ? ".\n\n" : ",");
    }
  md << "| task | mode | pairs | length | accuracy | top-1 mass |\n|---|---|---|---|---|---|\n";
  for (const TaskSetup& task : o.tasks)
    for (const std::string& mode : o.modes) {
      std::map<int64_t, std::pair<std::vector<double>, std::vector<double>>> at;
      std::map<int64_t, int64_t> len;
      for (const LengthTestRow& r : train.rows)
        if (r.run.task == task.task && r.run.mode == mode && r.solved) {
          at[r.pairs].first.push_back(r.accuracy), at[r.pairs].second.push_back(r.top1_mass);
          len[r.pairs] = r.test_len;
        }
      for (const auto& [pairs, values] : at)
        md << "| " << task.task << " | " << mode << " | " << pairs
           << (pairs == task.recall.pairs ? " (trained)" : "") << " | " << len[pairs] << " | "
           << interval_text(interval_of_finite(values.first), 3) << " | "
           << interval_text(interval_of_finite(values.second), 3) << " |\n";
    }
  md << "\n";
  sec.markdown += md.str();
  std::vector<CsvRow> rows;
  for (const LengthTestRow& r : train.rows)
    rows.push_back({r.run.task, r.run.mode, r.run.seed, r.train_len, r.test_len,
                    csv_number(r.accuracy), csv_number(r.top1_mass), r.pairs, r.solved});
  sec.csvs.push_back({"length_train.csv",
                      {"task", "mode", "seed", "train_len", "test_len", "accuracy", "top1_mass",
                       "pairs", "solved"},
                      rows});
  sec.plots.push_back(length_train_plot(train.rows, o));
  return sec;
}

}  // namespace gradflow::study
