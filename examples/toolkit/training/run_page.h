// index.html in every training program's run folder: the run on one page (page/html.h), written
// atomically at the start, at each evaluation and at the end, so a page opened during training
// shows the run so far; while the run is live it reloads itself every kRefreshSeconds.
//
// What it shows, top to bottom:
//   - what ran: the status, the command, the kernels (blas_info.h), the machine, the time, and
//     the run's configuration (its checkpoint's metadata);
//   - the curves of log.csv: the training loss per step and the held-out metrics, the learning
//     rate, the gradient's norm;
//   - the attention layers' gradients over the steps, from attention_grads.csv (written here):
//     ||dL/dW_Q||, ||dL/dW_K||, ||dL/dW_V|| every step and ||dL/dS|| at each evaluation
//     (page_probes.h says how each is measured without changing the run);
//   - the attention maps of every layer and head on one held-out example (attention_maps.h) at
//     every evaluation of this session, with a slider over them and the tokens on the axes;
//   - the graph of a training step at the latest evaluation, level by level from the model's
//     parts down to single ops, the gradient's norm on each edge (page_probes.h);
//   - the program's decodes or samples at each evaluation.
//
// attention_grads.csv has a row per step: step, then for each attention layer L the columns
// L.W_Q, L.W_K, L.W_V (this step's gradient norms, before clipping) and L.scores (||dL/dS||,
// only at an evaluation: measured after that step's update, on the batch the next step draws).
// A resumed run keeps its rows up to the checkpoint's step, as log.csv's. The maps are kept in
// memory only: a resumed run's page shows those of its own session's evaluations.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "examples/toolkit/cli/csv_log.h"
#include "examples/toolkit/training/attention_maps.h"
#include "examples/toolkit/training/page_probes.h"
#include "examples/toolkit/training/training.h"

namespace gradflow::training {

inline constexpr int kRefreshSeconds = 15;
inline constexpr size_t kMostMapCells = size_t{1} << 20;  // a few characters each in the page

class RunPage {
 public:
  // For the run in options.out_dir, continuing from step `resumed_step` (0 for a fresh run) of
  // options.resume_dir's attention_grads.csv. Throws what CsvLog throws.
  RunPage(const LoopOptions& options, nn::Module& model, int64_t resumed_step);
  RunPage(const RunPage&) = delete;
  RunPage& operator=(const RunPage&) = delete;

  // After a step's backward, before its update: the attention weights' gradient norms.
  void after_backward();
  // After an evaluation at `step`: the scores' gradients, the maps, the graph and the text,
  // measured aside (page_probes.h); the model is in training mode, as the loop leaves it.
  void after_evaluation(int64_t step, const std::vector<std::pair<std::string, Generator*>>& gen,
                        const Hooks& hooks);
  // The step's row of attention_grads.csv, once the step (and its evaluation) is done.
  void log_row(int64_t step);
  // Writes index.html: `live` while training goes on (the page reloads itself), `status` what
  // the run is doing or how it ended. A page that cannot be written is said once on `err`; the
  // run goes on.
  void write(int64_t step, const std::string& status, bool live);
  // Whether the model has attention layers, whose gradients go to attention_grads.csv.
  bool logs_gradients() const { return grads_log_.has_value(); }

 private:
  struct Evaluated {  // one evaluation's maps, per layer: the cells in thousandths, the notes
    int64_t step = 0;
    std::vector<std::vector<int>> cells{};
    std::vector<std::vector<std::string>> notes{};
  };

  // Past kMostMapCells of map data every other evaluation goes, the first and the latest
  // kept, so a long run's page stays a few megabytes and its slider still spans the run.
  void thin_evaluations();
  std::string body(int64_t step, const std::string& status, bool live) const;
  std::string what_ran(int64_t step, const std::string& status, bool live) const;
  std::string attention_section() const;
  std::string graph_section() const;
  std::string text_section() const;

  LoopOptions options_;
  nn::Module& model_;
  std::vector<AttentionLayer> layers_;
  std::optional<cli::CsvLog> grads_log_;
  std::vector<double> weight_norms_, score_norms_;  // this step's, for its row
  std::vector<AttentionMapFile> maps_;              // the latest evaluation's figures
  std::vector<Evaluated> evaluations_;
  std::vector<GraphLevel> graph_;
  int64_t graph_step_ = 0;
  std::vector<std::pair<int64_t, std::string>> texts_;
  std::string started_;
  double start_seconds_ = 0;
  bool warned_ = false;
};

// The page's figures from the text of log.csv and of attention_grads.csv, as svg_plot.h draws
// them (run_page_curves.cpp); "" while there is nothing to draw.
std::string log_curves_svg(std::string_view log_csv);
std::string attention_gradients_svg(std::string_view grads_csv);

// "2024-06-01 12:00:03 UTC": now, for a page.
std::string utc_now();

// "AMD EPYC 7B13, 2 cores, Linux 6.1 x86_64": what this machine is, as /proc/cpuinfo and
// uname(2) say.
std::string machine_text();

}  // namespace gradflow::training
