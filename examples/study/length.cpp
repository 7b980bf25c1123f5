// The length part's options and its share of the report: the claims C16 to
// C19 with their findings, the tables, length_metrics.csv,
// length_train.csv, length_critical.csv and their figures.
#include "examples/study/length.h"

#include <map>
#include <sstream>

#include "examples/study/parts.h"
#include "nn/data/recall_task.h"

namespace gradflow::study {

LengthOptions length_options(const Settings& settings) {
  LengthOptions o;
  if (settings.seeds > 0) o.seeds = settings.seeds;
  if (settings.steps > 0) o.task.steps = settings.steps;
  return o;
}

namespace {

std::string verdict_word(const Verdict& v) {
  return v.verdict == "holds"           ? "holds"
         : v.verdict == "partly holds"  ? "holds in part"
         : v.verdict == "does not hold" ? "does not hold"
                                        : "is unclear";
}

// Accuracy and top-1 mass against the test length, one line per mode.
PlotFile length_train_plot(const std::vector<LengthTestRow>& rows, const LengthOptions& o) {
  std::vector<plot::Figure> panels;
  for (auto [field, label] :
       {std::pair{&LengthTestRow::accuracy, std::string("held-out accuracy")},
        std::pair{&LengthTestRow::top1_mass, std::string("answer layer's top-1 mass")}}) {
    plot::Figure f = figure(label,
                            "test length (positions; trained at " +
                                std::to_string(nn::recall_seq_len(o.task.recall)) + ")",
                            true, label, false);
    for (const std::string& mode : o.modes) {
      std::map<double, std::vector<double>> at;
      for (const LengthTestRow& r : rows)
        if (r.run.mode == mode && r.solved) at[static_cast<double>(r.test_len)].push_back(r.*field);
      f.series.push_back(mean_series(mode, at, mode == kDefaultMode));
    }
    panels.push_back(f);
  }
  return {"length_train.svg", plot::render_svg_grid(panels, 2, {.legend_once = true}),
          "The length part: recall trained at " + std::to_string(o.task.recall.pairs) +
              " pairs and tested at " + std::to_string(o.test_pairs.front()) + " to " +
              std::to_string(o.test_pairs.back()) +
              " (RoPE positions): held-out accuracy and the answer layer's top-1 attention "
              "mass against the test length, log x axis, mean over the seeds that solved the "
              "trained length with its 95% interval (C18)."};
}

}  // namespace

Section length_section(const LengthOptions& o, const LengthTrainResult& train) {
  Section sec{.part = "length"};
  if (train.rows.empty()) return sec;
  sec.claims = {extrapolation_claim(train.rows, o)};
  const Verdict& c18 = sec.claims.back();
  sec.findings.push_back({"Trained short and tested long, log-n scaling " + verdict_word(c18) +
                              " to extend further than 1/sqrt(d_k)",
                          "C18: " + c18.measured + ". " + c18.reason + ".", "length_train.svg"});
  std::ostringstream md;
  md << "## length: the scale and the number of keys\n\n"
     << "### Train short, test long\n\n"
     << "Recall with " << o.task.recall.n_keys << " keys and " << o.task.recall.n_values
     << " values, " << o.task.recall.queries << " queries, RoPE positions (a learned table has "
     << "no rows past the trained length), d_k " << o.d_k << ", trained at " << o.task.recall.pairs
     << " pairs for at most " << o.task.steps << " steps (stopping at 99% held out), " << o.seeds
     << " seeds; then evaluated on 256 fresh sequences at each length. Held-out accuracy, "
        "and the answer layer's top-1 attention mass (its largest weight at each answer's "
        "query), mean +- the 95% t-interval over the seeds that solved the trained length "
        "(99% of its 1024 held-out answers): ";
  std::map<std::string, std::pair<int, int>> solved;
  for (const LengthTestRow& r : train.rows)
    if (r.pairs == o.task.recall.pairs) {
      auto& [s, n] = solved[r.run.mode];
      ++n;
      s += r.solved;
    }
  for (const std::string& mode : o.modes)
    md << mode << " " << solved[mode].first << " of " << solved[mode].second
       << (mode == o.modes.back() ? ".\n\n" : ", ");
  md << "| mode | pairs | length | accuracy | top-1 mass |\n|---|---|---|---|---|\n";
  for (const std::string& mode : o.modes) {
    std::map<int64_t, std::pair<std::vector<double>, std::vector<double>>> at;
    std::map<int64_t, int64_t> len;
    for (const LengthTestRow& r : train.rows)
      if (r.run.mode == mode && r.solved) {
        at[r.pairs].first.push_back(r.accuracy), at[r.pairs].second.push_back(r.top1_mass);
        len[r.pairs] = r.test_len;
      }
    for (const auto& [pairs, values] : at)
      md << "| " << mode << " | " << pairs << (pairs == o.task.recall.pairs ? " (trained)" : "")
         << " | " << len[pairs] << " | " << interval_text(interval_of_finite(values.first), 3)
         << " | " << interval_text(interval_of_finite(values.second), 3) << " |\n";
  }
  md << "\n";
  sec.markdown = md.str();
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
