// How long the study will take (study_time.h).
#include "examples/study/study_time.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <thread>

#include "examples/toolkit/cli/progress.h"
#include "examples/toolkit/cli/signals.h"

namespace gradflow::study {

double PartCost::units() const {
  return before_jobs + std::accumulate(jobs.begin(), jobs.end(), 0.0);
}

double training_units(const RunSpec& run) {
  const RunShape shape = run_shape(run);
  // Attention blocks: an encoder-decoder layer has self-attention in the
  // encoder and self- and cross-attention in the decoder.
  const double blocks =
      static_cast<double>(run.task.model.layers) * (shape.encoder_decoder ? 3.0 : 1.0);
  const double width =
      2.0 * static_cast<double>(run.task.model.d_model) + static_cast<double>(run.key.d_k);
  return 1e-5 * static_cast<double>(run.task.steps) * blocks * width *
         static_cast<double>(run.batch) / 64.0;
}

PartCost training_cost(const std::vector<RunSpec>& runs, double factor) {
  // train_all hands the runs out by this size, largest first (a stable sort).
  auto order_size = [](const RunSpec& r) {
    return static_cast<double>(r.task.steps * r.task.model.layers) *
           static_cast<double>(r.task.model.d_model) *
           static_cast<double>(r.key.d_k + r.task.model.d_model);
  };
  std::vector<size_t> order(runs.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return order_size(runs[a]) > order_size(runs[b]); });
  PartCost cost{.unit = "run"};
  for (size_t i : order) cost.jobs.push_back(factor * training_units(runs[i]));
  return cost;
}

RunSpec calibration_workload() {
  RunSpec spec;
  spec.task = reverse_setup();
  // Small, so that even a sanitizer build measures it in well under a
  // second: a run stopped by a signal soon after it starts should be
  // stopped in the study, not here.
  spec.task.steps = 10;
  spec.key = {spec.task.task, "inv_sqrt_dk", 16, 0};
  spec.batch = 64, spec.eval_every = 10, spec.eval_examples = 64;
  return spec;
}

double calibrate(double budget) {
  using Clock = std::chrono::steady_clock;
  const RunSpec spec = calibration_workload();
  const auto start = Clock::now();
  auto since = [](Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  };
  double timed = 0;
  int runs = 0;
  for (int i = 0; i < 2 || since(start) < budget; ++i) {
    const auto t = Clock::now();
    try {
      (void)train_one(spec);
    } catch (const std::exception&) {
      if (cli::stop_signal() == 0) throw;
    }
    if (const int signal = cli::stop_signal(); signal != 0)
      throw Interrupted(signal, "the calibration", 0, 1);
    if (i > 0) timed += since(t), ++runs;
  }
  return timed / runs;
}

double estimate_seconds(double units, double unit_seconds, int threads) {
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const double side_by_side = std::min<double>(std::max(1, threads), cores);
  return units * unit_seconds / side_by_side;
}

std::string plan_line(const std::vector<NamedCost>& parts) {
  std::string out = "plan:";
  size_t jobs = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const PartCost& c = parts[i].cost;
    const size_t n = c.jobs.size();
    out += (i == 0 ? " " : ", ") + parts[i].part + " " + std::to_string(n) + " " + c.unit +
           (n == 1 ? "" : "s");
    jobs += n;
  }
  return out + " (" + std::to_string(jobs) + " jobs)";
}

std::string estimate_line(const std::vector<NamedCost>& parts, double unit_seconds, int threads) {
  double units = 0;
  for (const NamedCost& p : parts) units += p.cost.units();
  char cpu[64], unit[64];
  std::snprintf(cpu, sizeof cpu, "%.0f", units * unit_seconds);
  std::snprintf(unit, sizeof unit, "%.3f", unit_seconds);
  return "estimate: about " + cli::format_duration(estimate_seconds(units, unit_seconds, threads)) +
         " on " + std::to_string(threads) + (threads == 1 ? " thread" : " threads") + " here (" +
         cpu + " s of one thread at this machine's speed now; the calibration run took " + unit +
         " s)";
}

}  // namespace gradflow::study
