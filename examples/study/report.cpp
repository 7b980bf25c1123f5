// report.md and the files beside it, from the sections the parts return:
// the claims first (each with its argument, this run's figures and a verdict
// computed from them), then each part's tables in the order a reader meets
// them, what the study cannot separate, the plots, and where the time went.
// Every file is written atomically. Also the small pieces every part's
// tables and figures share.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "examples/study/claims.h"
#include "examples/study/part_table.h"
#include "examples/study/parts.h"
#include "examples/study/study.h"
#include "examples/toolkit/page/study_page.h"
#include "nn/io/atomic_file.h"
#include "tensor/kernels/blas_info.h"

namespace gradflow::study {

cli::CsvCell csv_number(double v) { return std::isfinite(v) ? cli::CsvCell(v) : cli::CsvCell(""); }

void add_estimate(CsvRow& row, const Interval& e) {
  row.push_back(csv_number(e.mean));
  row.push_back(csv_number(e.se));
}

plot::Figure figure(const std::string& title, const std::string& x, bool log_x,
                    const std::string& y, bool log_y) {
  plot::Figure f;
  f.title = title;
  f.x = {.label = x, .log = log_x};
  f.y = {.label = y, .log = log_y};
  f.height = 540;  // panels of a grid keep a readable aspect
  return f;
}

ModeLook mode_look(const std::string& mode) {
  const std::optional<Arm> a = find_arm(mode);
  return a ? a->look : ModeLook{};
}

plot::Series mode_series(const std::string& mode, bool markers) {
  const ModeLook look = mode_look(mode);
  return {.label = mode,
          .dashed = look.dashed,
          .markers = markers,
          .emphasis = is_reference(mode),
          .color = std::string(look.color)};
}

std::vector<std::vector<std::string>> mode_panels(const std::vector<std::string>& modes) {
  const auto clash = [](const std::vector<std::string>& panel, const std::string& mode) {
    const std::string_view colour = mode_look(mode).color;
    return std::any_of(panel.begin(), panel.end(), [&](const std::string& m) {
      return !colour.empty() && mode_look(m).color == colour;
    });
  };
  std::vector<std::string> anchors, rest;
  for (const std::string& m : modes)
    (find_arm(m).value_or(Arm{}).anchor ? anchors : rest).push_back(m);
  // The default arms first, so the first panel shows what the default run trains.
  std::stable_partition(rest.begin(), rest.end(), trained_by_default);
  std::vector<std::vector<std::string>> panels;
  for (const std::string& m : rest) {
    auto fits = [&](const std::vector<std::string>& p) {
      return p.size() < static_cast<size_t>(plot::kMaxSeries) && !clash(p, m);
    };
    auto it = std::find_if(panels.begin(), panels.end(), fits);
    if (it == panels.end()) it = panels.insert(panels.end(), anchors);
    it->push_back(m);
  }
  if (panels.empty()) panels.push_back(anchors);
  // Each panel in the order `modes` gives, as its legend and drawing follow it.
  for (std::vector<std::string>& p : panels)
    std::sort(p.begin(), p.end(), [&](const std::string& a, const std::string& b) {
      return std::find(modes.begin(), modes.end(), a) < std::find(modes.begin(), modes.end(), b);
    });
  return panels;
}

std::string panel_suffix(size_t index, size_t count) {
  if (count < 2) return "";
  if (index == 0) return ": main arms";
  if (count == 2) return ": more arms";
  // Three or more rows (--full's arms): each its own title.
  return ": more arms, " + std::to_string(index) + " of " + std::to_string(count - 1);
}

void add_point(plot::Series& s, double x, const Interval& i) {
  s.x.push_back(x);
  s.y.push_back(i.mean);
  s.lo.push_back(std::isfinite(i.lo) ? i.lo : i.mean);
  s.hi.push_back(std::isfinite(i.hi) ? i.hi : i.mean);
}

std::string key_layer(const std::string& task) {
  return task == "reverse" ? "dec0.cross" : "dec1.self";
}

namespace {

void write_csv(const std::string& dir, const CsvFile& file) {
  std::string out;
  for (size_t i = 0; i < file.columns.size(); ++i)
    out += (i ? "," : "") + cli::csv_field(file.columns[i]);
  out += "\n";
  for (const CsvRow& r : file.rows) {
    for (size_t i = 0; i < r.size(); ++i) out += (i ? "," : "") + r[i].text();
    out += "\n";
  }
  write_file_atomic(dir + "/" + file.name, out);
}

// What the run shows, in plain words: a finding per claim of the story
// (claims.h, story()), in its order, each from its verdict (finding_from).
void findings_section(std::ostringstream& md, const std::vector<Verdict>& verdicts) {
  std::vector<Finding> all;
  for (const std::string& id : story())
    for (const Verdict& v : verdicts)
      if (v.id == id && !v.identity) all.push_back(finding_from(v));
  if (all.empty()) return;
  md << "## What this run shows\n\n"
     << "Read this first. Each finding is one claim of docs/study.md, its test declared before "
        "the run: the title says the claim in plain words and whether it held (\"Partly\", "
        "\"Not shown\", \"Unclear\" when it did not, fully), and the text gives each "
        "criterion's estimate, a 95% interval over seeds in brackets (90% for an equivalence "
        "test), and whether it passed. Every number is a cell of criteria.csv.\n\n";
  int n = 0;
  for (const Finding& f : all) {
    md << ++n << ". **" << f.title << ".** (" << f.claim_id << ") " << f.text;
    if (!f.figure.empty()) md << " See [" << f.figure << "](" << f.figure << ").";
    md << "\n";
  }
  md << "\nFor the reviewer, the numbers behind each finding come next; then the identities "
        "and claims, each with its criteria, and the tables that hold every number.\n\n"
     << "## The numbers behind the findings\n\n";
  n = 0;
  for (const Finding& f : all) md << ++n << ". **" << f.title << ".** " << f.detail << "\n";
  md << "\n";
}

// The identities at initialisation first (equivalence tests on many random
// draws), then the claims about attention and training.
void claims_section(std::ostringstream& md, const std::vector<Verdict>& verdicts) {
  auto table = [&](bool identities) {
    md << "| id | " << (identities ? "identity" : "claim") << " | verdict |\n|---|---|---|\n";
    for (const Verdict& v : verdicts)
      if (v.identity == identities)
        md << "| " << v.id << " | " << v.claim << " | **" << v.verdict << "** |\n";
    md << "\n";
  };
  const bool any_identity =
      std::any_of(verdicts.begin(), verdicts.end(), [](const Verdict& v) { return v.identity; });
  if (any_identity) {
    md << "## Identities at initialisation\n\n"
          "Facts about random vectors that the seeds state, checked on many independent draws "
          "by an equivalence test: a measured variance must be shown within 5% of its formula, "
          "with draws enough that a true identity fails in fewer than 1% of base seeds. They "
          "are arithmetic, not findings about training; C3 and C4 each also make a claim "
          "below.\n\n";
    table(true);
  }
  md << "## The claims\n\n";
  table(false);
  for (const Verdict& v : verdicts)
    md << "### " << v.id << (v.identity ? " (identity)" : "") << ": " << v.claim << "\n\n"
       << "- **Why it should hold.** " << v.why << "\n"
       << "- **Measured.** " << v.measured << "\n"
       << "- **Verdict: " << v.verdict << ".** " << v.reason << "\n"
       << (v.checks.empty()
               ? ""
               : "- **Checks** (the arms as declared; not evidence). " + v.checks + "\n")
       << "\n";
}

// The study's list, for the parts that share its design (d_model 32, one learning rate,
// 5 seeds), and the bullets of each part with a design of its own.
void confounds_section(std::ostringstream& md, const std::vector<Section>& sections) {
  md << "## What this study cannot separate\n\n";
  for (const Section& s : sections)
    for (const std::string& bullet : s.cannot_separate) md << "- " << bullet << "\n";
  const bool shared = std::any_of(sections.begin(), sections.end(),
                                  [](const Section& s) { return s.cannot_separate.empty(); });
  if (!shared) {
    md << "\n";
    return;
  }
  md << "- **d_k above d_model.** The width is fixed (d_model 32 in training, 64 at "
        "initialisation), so d_k = 256 adds parameters but no function class: a head's "
        "attention pattern has rank at most d_model either way.\n"
     << "- **Scale and learning rate.** Adam's step does not depend on the gradient's size, so "
        "multiplying the logits by s acts like changing the initialisation and the learning "
        "rate of W_Q and W_K. With one learning rate per task, a mode's result mixes the two; "
        "an LR sweep per mode separates them (the lr part, with `--full`). The control "
        "`none_small_init` removes only the difference at initialisation. Under SGD (the sgd "
        "part) the step does follow the gradient's size, at three learning rates only.\n"
     << "- **Small and few.** Toy tasks, one or two layers, one head, a few hundred steps: "
        "effects that need scale or long training do not show. With 5 seeds the t quantile is "
        "2.78, and Holm's correction asks more of each comparison, so only large differences "
        "are detected; `--full` runs 10.\n\n";
}

}  // namespace

std::vector<Verdict> claims_in_order(const std::vector<Section>& sections) {
  std::vector<Verdict> out;
  for (const Section& s : sections) out.insert(out.end(), s.claims.begin(), s.claims.end());
  std::stable_sort(out.begin(), out.end(), [](const Verdict& a, const Verdict& b) {
    return std::stoi(a.id.substr(1)) < std::stoi(b.id.substr(1));
  });
  return out;
}

void write_report(const std::string& dir, const ReportInfo& info,
                  const std::vector<Section>& sections) {
  for (const Section& s : sections) check_section_files(s);  // before any file is written
  for (const Section& s : sections) {
    for (const CsvFile& csv : s.csvs) write_csv(dir, csv);
    for (const PlotFile& p : s.plots) write_file_atomic(dir + "/" + p.name, p.svg);
  }
  const std::vector<Verdict> verdicts = claims_in_order(sections);
  if (!verdicts.empty()) write_csv(dir, criteria_csv(verdicts));
  std::ostringstream md;
  md << "# Attention scaling study\n\n"
     << "Produced by `" << info.command << "` (seed " << info.seed << ", "
     << (info.training_seeds > 0 ? std::to_string(info.training_seeds) + " training seed" +
                                       (info.training_seeds > 1 ? "s, " : ", ")
                                 : "")
     << info.threads << " threads) in " << significant(info.seconds, 3)
     << " s, its matrix products run by " << blas_summary()
     << " (floats differ across CPUs' kernel paths in their last bits, and so may this "
        "run's figures). Every number below comes from this run; the CSV files beside this report "
        "hold all "
        "of them, and docs/study.md explains the claims, the metrics and the literature. "
        "Throughout, `a +- b` is a mean and the half-width of its 95% interval.\n\n";
  findings_section(md, verdicts);
  if (!verdicts.empty()) claims_section(md, verdicts);
  for (const Section& s : sections) md << s.markdown;
  confounds_section(md, sections);
  md << "## Plots\n\n";
  for (const Section& s : sections)
    for (const PlotFile& p : s.plots)
      md << "![" << p.name << "](" << p.name << ")\n\n" << p.caption << "\n\n";
  md << "## Where the time went\n\n";
  for (size_t i = 0; i < sections.size(); ++i)
    md << (i ? ", " : "") << sections[i].part << " " << significant(sections[i].seconds, 3) << " s";
  md << " on " << info.threads << " threads (one job per thread).";
  for (const Section& s : sections)
    if (!s.time_note.empty()) md << " " << s.time_note;
  md << "\n";
  write_file_atomic(dir + "/report.md", md.str());
  page::write_study_page(dir);  // index.html: the report with its figures, for a browser
}

}  // namespace gradflow::study
