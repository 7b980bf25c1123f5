// The study's CSV files: every number the report uses, one row per
// measurement, columns named as in docs/study.md.
#include <cmath>

#include "examples/common/csv_log.h"
#include "examples/study/report.h"
#include "nn/io/atomic_file.h"

namespace gradflow::study {

void write_csv(const std::string& path, const std::vector<std::string>& columns,
               const std::vector<CsvRow>& rows) {
  std::string out;
  for (size_t i = 0; i < columns.size(); ++i) out += (i ? "," : "") + cli::csv_field(columns[i]);
  out += "\n";
  for (const CsvRow& r : rows) {
    for (size_t i = 0; i < r.size(); ++i) out += (i ? "," : "") + r[i].text();
    out += "\n";
  }
  write_file_atomic(path, out);
}

cli::CsvCell csv_number(double v) { return std::isfinite(v) ? cli::CsvCell(v) : cli::CsvCell(""); }

namespace {

// "name" and "name_se" columns for each estimate.
void add_estimate_columns(std::vector<std::string>& columns, const std::string& name) {
  columns.push_back(name);
  columns.push_back(name + "_se");
}
void add_estimate(CsvRow& row, const Estimate& e) {
  row.push_back(csv_number(e.mean));
  row.push_back(csv_number(e.se));
}

std::vector<std::string> run_columns() { return {"task", "d_k", "mode", "seed"}; }
void add_run(CsvRow& row, const RunKey& k) {
  row.insert(row.end(), {k.task, k.d_k, k.mode, k.seed});
}

}  // namespace

void write_csvs(const std::string& dir, const std::vector<InitRow>& init,
                const PartBResult& training, const std::vector<DepthRow>& depth) {
  {
    std::vector<std::string> columns = {"mode", "d_k", "n_keys", "draws"};
    for (const char* name : {"logit_var"}) add_estimate_columns(columns, name);
    columns.push_back("logit_var_theory");
    for (const char* name : {"entropy_norm", "max_weight", "jacobian_norm"})
      add_estimate_columns(columns, name);
    columns.push_back("layer_draws");
    for (const char* name :
         {"layer_logit_var", "layer_entropy_norm", "layer_max_weight", "grad_norm_scores",
          "grad_norm_wq", "grad_norm_wk", "grad_norm_wv", "grad_ratio_qv"})
      add_estimate_columns(columns, name);
    std::vector<CsvRow> rows;
    for (const InitRow& r : init) {
      CsvRow row = {r.mode, r.d_k, r.n_keys, r.draws};
      add_estimate(row, r.logit_var);
      row.push_back(csv_number(r.logit_var_theory));
      for (const Estimate* e : {&r.entropy_norm, &r.max_weight, &r.jacobian_norm})
        add_estimate(row, *e);
      row.push_back(r.layer_draws);
      for (const Estimate* e :
           {&r.layer_logit_var, &r.layer_entropy_norm, &r.layer_max_weight, &r.grad_norm_scores,
            &r.grad_norm_wq, &r.grad_norm_wk, &r.grad_norm_wv, &r.grad_ratio_qv})
        add_estimate(row, *e);
      rows.push_back(row);
    }
    write_csv(dir + "/init_metrics.csv", columns, rows);
  }
  if (!depth.empty()) {
    // The estimates first, then their standard errors and the draws.
    const std::vector<Estimate DepthRow::*> fields = {
        &DepthRow::grad_norm_wq, &DepthRow::grad_norm_wv, &DepthRow::grad_norm_ff,
        &DepthRow::token_cosine};
    std::vector<std::string> columns = {"mode",         "norm_placement", "layers",
                                        "layer",        "grad_norm_wq",   "grad_norm_wv",
                                        "grad_norm_ff", "token_cosine"};
    for (size_t i = 4; i < 8; ++i) columns.push_back(columns[i] + "_se");
    columns.push_back("draws");
    std::vector<CsvRow> rows;
    for (const DepthRow& r : depth) {
      CsvRow row = {r.mode, r.norm_placement, r.layers, r.layer};
      for (auto field : fields) row.push_back(csv_number((r.*field).mean));
      for (auto field : fields) row.push_back(csv_number((r.*field).se));
      row.push_back(r.draws);
      rows.push_back(row);
    }
    write_csv(dir + "/depth_metrics.csv", columns, rows);
  }
  if (training.finals.empty()) return;
  {
    std::vector<std::string> columns = run_columns();
    for (const char* c : {"step", "train_loss", "eval_loss", "accuracy", "spike"})
      columns.push_back(c);
    std::vector<CsvRow> rows;
    for (const CurveRow& r : training.curves) {
      CsvRow row;
      add_run(row, r.run);
      row.insert(row.end(), {r.step, csv_number(r.train_loss), csv_number(r.eval_loss),
                             csv_number(r.eval_accuracy), r.spike});
      rows.push_back(row);
    }
    write_csv(dir + "/train_metrics.csv", columns, rows);
  }
  {
    std::vector<std::string> columns = run_columns();
    for (const char* c : {"step", "layer", "layer_d_k", "max_logit", "entropy_norm", "grad_norm_wq",
                          "grad_norm_wk", "grad_norm_wv", "grad_ratio_qv"})
      columns.push_back(c);
    std::vector<CsvRow> rows;
    for (const LayerRow& r : training.layers) {
      CsvRow row;
      add_run(row, r.run);
      row.insert(row.end(),
                 {r.step, r.layer, r.layer_d_k, csv_number(r.max_logit), csv_number(r.entropy_norm),
                  csv_number(r.grad_norm_wq), csv_number(r.grad_norm_wk),
                  csv_number(r.grad_norm_wv), csv_number(r.grad_ratio_qv)});
      rows.push_back(row);
    }
    write_csv(dir + "/train_layers.csv", columns, rows);
  }
  {
    std::vector<std::string> columns = run_columns();
    for (const char* c : {"lr", "steps", "accuracy", "final_loss", "steps_to_90", "reached_90",
                          "steps_to_99", "reached_99", "loss_auc", "seq_accuracy", "spikes",
                          "max_logit", "grad_ratio_qv", "diverged"})
      columns.push_back(c);
    std::vector<CsvRow> rows;
    for (const FinalRow& f : training.finals) {
      CsvRow row;
      add_run(row, f.run);
      row.insert(row.end(),
                 {f.lr, f.steps, csv_number(f.final_accuracy), csv_number(f.final_loss),
                  f.steps_to_90, f.reached_90, f.steps_to_99, f.reached_99, csv_number(f.loss_auc),
                  f.seq_accuracy >= 0 ? csv_number(f.seq_accuracy) : "", f.spikes,
                  csv_number(f.max_logit), csv_number(f.grad_ratio_qv), f.diverged});
      rows.push_back(row);
    }
    write_csv(dir + "/final_metrics.csv", columns, rows);
  }
}

}  // namespace gradflow::study
