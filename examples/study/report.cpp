// CSV files, plots and report.md from the study's rows.
#include "examples/study/report.h"

#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "examples/common/csv_log.h"
#include "examples/common/svg_plot.h"
#include "nn/atomic_file.h"

namespace gradflow::study {

namespace {

using Row = std::vector<cli::CsvCell>;

// A CSV document in memory; written in one atomic step at the end.
std::string csv(const std::vector<std::string>& columns, const std::vector<Row>& rows) {
  std::string out;
  for (size_t i = 0; i < columns.size(); ++i) out += (i ? "," : "") + cli::csv_field(columns[i]);
  out += "\n";
  for (const Row& r : rows) {
    for (size_t i = 0; i < r.size(); ++i) out += (i ? "," : "") + r[i].text();
    out += "\n";
  }
  return out;
}

cli::CsvCell number_or_empty(double v) {
  return std::isfinite(v) ? cli::CsvCell(v) : cli::CsvCell("");
}

std::string fmt(double v, int digits = 4) {
  std::ostringstream out;
  out.precision(digits);
  out << v;
  return out.str();
}

plot::Series series(const std::string& label, bool dashed = false) {
  plot::Series s;
  s.label = label;
  s.dashed = dashed;
  s.markers = true;
  return s;
}

// One line per mode of an InitRow field against d_k.
std::vector<plot::Series> by_mode(const std::vector<InitRow>& rows,
                                  double (*field)(const InitRow&)) {
  std::vector<plot::Series> out;
  for (const std::string& mode : study_modes()) {
    plot::Series s = series(mode);
    for (const InitRow& r : rows)
      if (r.mode == mode) s.x.push_back(double(r.d_k)), s.y.push_back(field(r));
    out.push_back(s);
  }
  return out;
}

plot::Figure figure(const std::string& title, const std::string& x, bool log_x,
                    const std::string& y, bool log_y) {
  plot::Figure f;
  f.title = title;
  f.x.label = x;
  f.x.log = log_x;
  f.y.label = y;
  f.y.log = log_y;
  return f;
}

void write(const std::string& dir, const std::string& name, const std::string& text) {
  write_file_atomic(dir + "/" + name, text);
}

void write_csvs(const std::string& dir, const std::vector<InitRow>& init, const PartBResult& b,
                const PartBResult& sweep) {
  std::vector<Row> rows;
  for (const InitRow& r : init)
    rows.push_back({r.mode, r.d_k, r.n_keys, r.logit_var, number_or_empty(r.logit_var_theory),
                    r.entropy_norm, r.max_weight, r.jacobian_norm, r.grad_norm_wq, r.grad_norm_wk,
                    r.layer_logit_var, r.layer_entropy_norm, r.layer_max_weight});
  write(dir, "init_metrics.csv",
        csv({"mode", "d_k", "n_keys", "logit_var", "logit_var_theory", "entropy_norm", "max_weight",
             "jacobian_norm", "grad_norm_wq", "grad_norm_wk", "layer_logit_var",
             "layer_entropy_norm", "layer_max_weight"},
            rows));
  rows.clear();
  for (const TrainRow& r : b.rows)
    rows.push_back({r.mode, r.d_k, r.task, r.step, r.lr, r.loss, r.accuracy, r.grad_norm_wq,
                    r.grad_norm_wk, r.grad_norm_wv, r.entropy_norm, r.max_logit});
  write(dir, "train_metrics.csv",
        csv({"mode", "d_k", "task", "step", "lr", "loss", "accuracy", "grad_norm_wq",
             "grad_norm_wk", "grad_norm_wv", "entropy_norm", "max_logit"},
            rows));
  rows.clear();
  for (const LayerRow& r : b.layers)
    rows.push_back({r.mode, r.d_k, r.task, r.step, r.layer, r.grad_norm_wq, r.grad_norm_wk,
                    r.grad_norm_wv, r.entropy_norm, r.max_logit});
  write(dir, "train_layers.csv",
        csv({"mode", "d_k", "task", "step", "layer", "grad_norm_wq", "grad_norm_wk", "grad_norm_wv",
             "entropy_norm", "max_logit"},
            rows));
  for (const auto& [name, result] :
       {std::pair{"final_metrics.csv", &b}, std::pair{"lr_sweep.csv", &sweep}}) {
    if (result->finals.empty()) continue;
    rows.clear();
    for (const FinalRow& f : result->finals)
      rows.push_back({f.mode, f.d_k, f.task, f.lr, number_or_empty(f.final_loss), f.final_accuracy,
                      f.seq_accuracy, f.diverged});
    write(dir, name,
          csv({"mode", "d_k", "task", "lr", "final_loss", "accuracy", "seq_accuracy", "diverged"},
              rows));
  }
}

// The plots; returns (file, caption) pairs for the report.
std::vector<std::pair<std::string, std::string>> write_plots(const std::string& dir,
                                                             const RunInfo& info,
                                                             const std::vector<InitRow>& init,
                                                             const PartBResult& b,
                                                             const PartBResult& sweep) {
  std::vector<std::pair<std::string, std::string>> out;
  {
    plot::Figure f = figure("Logit std at initialisation (independent unit-variance q, k)", "d_k",
                            true, "std of s (q . k)", true);
    f.series = by_mode(init, [](const InitRow& r) { return std::sqrt(r.logit_var); });
    for (auto [label, power] :
         {std::pair{"theory sqrt(d_k)", 0.5}, std::pair{"theory 1", 0.0},
          std::pair{"theory 1/sqrt(d_k)", -0.5}, std::pair{"theory 1/2", 9.0}}) {
      plot::Series t = series(label, true);
      t.markers = false;
      for (int64_t d : info.part_a.d_ks)
        t.x.push_back(double(d)), t.y.push_back(power == 9.0 ? 0.5 : std::pow(double(d), power));
      f.series.push_back(t);
    }
    write(dir, "logit_std.svg", plot::render_svg(f));
    out.emplace_back("logit_std.svg",
                     "Logit standard deviation against d_k (log axes), measured (solid) and theory "
                     "d_k s^2 (dashed).");
  }
  {
    plot::Figure e = figure("Softmax entropy (normalised)", "d_k", true, "H(p) / log n", false);
    e.series = by_mode(init, [](const InitRow& r) { return r.entropy_norm; });
    plot::Figure m = figure("Largest attention weight", "d_k", true, "max_j p_j", false);
    m.series = by_mode(init, [](const InitRow& r) { return r.max_weight; });
    plot::Figure j = figure("Softmax Jacobian norm", "d_k", true, "||diag(p) - pp^T||_F", false);
    j.series = by_mode(init, [](const InitRow& r) { return r.jacobian_norm; });
    write(dir, "softmax_shape.svg", plot::render_svg_grid({e, m, j}, 3));
    out.emplace_back(
        "softmax_shape.svg",
        "Entropy, largest weight and softmax-Jacobian norm at initialisation against d_k.");
  }
  {
    plot::Figure g =
        figure("Gradient at W_Q of an initialised layer", "d_k", true, "||dL/dW_Q||_F", true);
    g.series = by_mode(init, [](const InitRow& r) { return r.grad_norm_wq; });
    write(dir, "grad_wq.svg", plot::render_svg(g));
    out.emplace_back(
        "grad_wq.svg",
        "Gradient norm reaching W_Q in a freshly initialised attention layer, against d_k.");
  }
  std::set<std::pair<std::string, int64_t>> settings;
  for (const TrainRow& r : b.rows) settings.insert({r.task, r.d_k});
  if (!settings.empty()) {
    std::vector<plot::Figure> panels;
    for (const auto& [task, d_k] : settings) {
      plot::Figure f =
          figure(task + ", d_k = " + std::to_string(d_k), "step", false, "training loss", true);
      for (const std::string& mode : study_modes()) {
        plot::Series s = series(mode);
        s.markers = false;
        for (const TrainRow& r : b.rows)
          if (r.task == task && r.d_k == d_k && r.mode == mode)
            s.x.push_back(double(r.step)), s.y.push_back(r.loss);
        f.series.push_back(s);
      }
      panels.push_back(f);
    }
    write(dir, "loss_curves.svg", plot::render_svg_grid(panels, 3));
    out.emplace_back("loss_curves.svg",
                     "Training loss per mode, one panel per task and d_k (same seed and batches "
                     "for every mode).");
    // Per-layer gradient flow at the largest d_k of the seq2seq task.
    const auto [task, d_k] = *settings.rbegin();
    std::vector<plot::Figure> layer_panels;
    for (const std::string& mode : study_modes()) {
      plot::Figure f = figure(mode, "step", false, "||dL/dW_Q||_F", true);
      std::map<std::string, plot::Series> lines;
      for (const LayerRow& r : b.layers) {
        if (r.task != task || r.d_k != d_k || r.mode != mode) continue;
        plot::Series& s = lines.try_emplace(r.layer, series(r.layer)).first->second;
        s.markers = false;
        s.x.push_back(double(r.step));
        s.y.push_back(r.grad_norm_wq);
      }
      for (auto& [name, s] : lines) f.series.push_back(s);
      layer_panels.push_back(f);
    }
    write(dir, "grad_flow.svg", plot::render_svg_grid(layer_panels, 3));
    out.emplace_back("grad_flow.svg",
                     "Gradient norm at W_Q of each attention layer over training (" + task +
                         ", d_k = " + std::to_string(d_k) + "), one panel per mode.");
  }
  if (!sweep.finals.empty()) {
    std::vector<plot::Figure> panels;
    std::set<int64_t> d_ks;
    for (const FinalRow& f : sweep.finals) d_ks.insert(f.d_k);
    for (int64_t d_k : d_ks) {
      plot::Figure f = figure("LR sweep, d_k = " + std::to_string(d_k), "learning rate", true,
                              "final loss", true);
      for (const std::string& mode : study_modes()) {
        plot::Series s = series(mode);
        for (const FinalRow& r : sweep.finals)
          if (r.d_k == d_k && r.mode == mode) s.x.push_back(r.lr), s.y.push_back(r.final_loss);
        f.series.push_back(s);
      }
      panels.push_back(f);
    }
    write(dir, "lr_sensitivity.svg", plot::render_svg_grid(panels, 3));
    out.emplace_back("lr_sensitivity.svg",
                     "Final held-out loss against learning rate per mode (Part C).");
  }
  return out;
}

}  // namespace

void write_report(const std::string& dir, const RunInfo& info, const std::vector<InitRow>& init,
                  const PartBResult& b, const PartBResult& sweep) {
  write_csvs(dir, init, b, sweep);
  auto plots = write_plots(dir, info, init, b, sweep);
  std::ostringstream md;
  md << "# Attention scaling study\n\n"
     << "Produced by `" << info.command << "` (seed " << info.seed << ", " << info.threads
     << " threads, " << (info.full ? "full" : "default") << " run) in " << fmt(info.seconds, 3)
     << " s. "
     << "Every number below comes from this run; the CSV files beside this report hold all of "
        "them.\n\n"
     << "## Setup\n\n"
     << "- Part A (initialisation): q, k ~ N(0, 1) independent; variance of s (q . k) over "
     << info.part_a.pairs << " pairs per d_k; softmax statistics over " << info.part_a.n_queries
     << " queries x " << info.part_a.n_keys
     << " keys; an initialised attention layer (d_model 64, one head of size d_k) on N(0, 1) input "
        "for the gradient "
        "reaching W_Q and W_K (loss = <output, r> for a fixed random r).\n"
     << "- Part B (training): d_k varied at a fixed width (d_model " << info.part_b.d_model << ", "
     << info.part_b.heads << " head whose size d_k is set on its own; Q, K, V map d_model -> d_k), "
     << info.part_b.layers << " layer(s) per stack, d_ff " << info.part_b.d_ff << ", AdamW lr "
     << info.part_b.lr << " (linear warm-up over the first 5%), "
     << "batch " << info.part_b.batch << ", " << info.part_b.steps
     << " steps, gradients clipped at 1. Every mode of a "
        "(task, d_k) starts from the same initial weights and sees the same batches. Tasks: "
        "`reverse` (encoder-decoder; "
        "accuracy is greedy-decoded held-out token accuracy) and `decoder_copy` (decoder-only, x "
        "SEP x with |x| = 8; "
        "teacher-forced accuracy on the copied half).\n";
  if (!info.sweep_lrs.empty()) {
    md << "- Part C (learning-rate sweep, after Wortsman et al. 2023): lrs";
    for (double lr : info.sweep_lrs) md << " " << lr;
    md << " on `reverse`; sensitivity = mean over lrs of (min(final loss, initial loss) - the best "
          "final loss at that d_k), "
          "so a diverged run counts at its initial loss.\n";
  }
  md << "\n## Claims\n\n| id | claim | measured | verdict | why |\n|---|---|---|---|---|\n";
  for (const Verdict& v : judge_claims(init, b))
    md << "| " << v.id << " | " << v.claim << " | " << v.figures << " | **" << v.verdict << "** | "
       << v.why << " |\n";
  md << "\n## Part A: at initialisation\n\n| mode | d_k | logit_var | theory | entropy_norm | "
        "max_weight | "
        "jacobian_norm | grad_norm_wq |\n|---|---|---|---|---|---|---|---|\n";
  for (const InitRow& r : init)
    md << "| " << r.mode << " | " << r.d_k << " | " << fmt(r.logit_var) << " | "
       << (std::isfinite(r.logit_var_theory) ? fmt(r.logit_var_theory) : "-") << " | "
       << fmt(r.entropy_norm, 3) << " | " << fmt(r.max_weight, 3) << " | "
       << fmt(r.jacobian_norm, 3) << " | " << fmt(r.grad_norm_wq, 3) << " |\n";
  if (!b.finals.empty()) {
    md << "\n## Part B: after training\n\n| task | d_k | mode | held-out loss | accuracy | "
          "sequence accuracy |\n"
          "|---|---|---|---|---|---|\n";
    for (const FinalRow& f : b.finals)
      md << "| " << f.task << " | " << f.d_k << " | " << f.mode << " | "
         << (f.diverged ? "diverged" : fmt(f.final_loss)) << " | " << fmt(f.final_accuracy) << " | "
         << (f.task == "reverse" ? fmt(f.seq_accuracy) : "-") << " |\n";
  }
  if (!sweep.finals.empty()) {
    md << "\n## Part C: learning-rate sensitivity\n\n| d_k | mode | best lr | best final loss | "
          "sensitivity |\n"
          "|---|---|---|---|---|\n";
    // Wortsman et al.'s measure: mean over lrs of min(final, initial) - the
    // best final loss at that d_k; a diverged run counts at its initial loss.
    auto capped = [](const FinalRow* f) {
      return (f->diverged || !std::isfinite(f->final_loss))
                 ? f->initial_loss
                 : std::min(f->final_loss, f->initial_loss);
    };
    std::map<std::pair<int64_t, std::string>, std::vector<const FinalRow*>> groups;
    std::map<int64_t, double> best_of_dk;
    for (const FinalRow& f : sweep.finals) {
      groups[{f.d_k, f.mode}].push_back(&f);
      auto [it, fresh] = best_of_dk.try_emplace(f.d_k, capped(&f));
      if (!fresh) it->second = std::min(it->second, capped(&f));
    }
    for (auto& [key, rows] : groups) {
      const FinalRow* best = rows.front();
      double sens = 0;
      for (const FinalRow* f : rows) {
        if (capped(f) < capped(best)) best = f;
        sens += capped(f) - best_of_dk[key.first];
      }
      md << "| " << key.first << " | " << key.second << " | " << fmt(best->lr) << " | "
         << fmt(capped(best)) << " | " << fmt(sens / double(rows.size())) << " |\n";
    }
  }
  md << "\n## Plots\n\n";
  for (const auto& [file, caption] : plots)
    md << "![" << caption << "](" << file << ")\n\n" << caption << "\n\n";
  write(dir, "report.md", md.str());
}

}  // namespace gradflow::study
