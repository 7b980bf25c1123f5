// How long the study will take on this machine, said before it starts.
//
// Every part states its cost in units of one fixed workload, a small
// training run (calibration_workload): the part table's `cost` gives each
// of a part's jobs in those units, in the order the part hands its jobs
// out (costliest first, as run_jobs' callers sort them). Before the study
// starts, calibrate() times that workload here for about half a second, and
// the estimate is the units times those seconds, spread over the threads.
// Units, not seconds, so the table holds for any machine: a machine twice
// as fast runs the workload and every part twice as fast.
//
// The units were fitted to default runs on a 2-core AMD EPYC (OpenBLAS
// 0.3.21, Cooperlake kernels), examples/study/README.md says how to refit
// them. A job's cost is a model (the steps and sizes of its run, or the
// draws of a measurement), not a measurement: a run that stops early, when
// solved, costs less than planned, so the overall progress corrects the
// estimate by the time the finished jobs took (overall_progress.h).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "examples/study/study.h"

namespace gradflow::study {

// One part's cost: what its jobs are called, each job's units in the order
// they run, and the units of any work it does before its first job (the
// length part's measurements at initialisation, which run outside the job
// runner). A part reports len(jobs) to its progress.
struct PartCost {
  std::string unit = "run";    // "run", "draw set", "stack": as its progress counts
  std::vector<double> jobs{};  // units per job, in the order they are handed out
  double before_jobs = 0;      // units of work before its first job
  double units() const;
};

// A training part's cost: one job per run, in train_all's order (the
// costliest first), each `factor` times its size (training_units); the
// factor is the part's own: its evaluations, probes and early stops differ.
PartCost training_cost(const std::vector<RunSpec>& runs, double factor);
// A run's size in model terms: steps x attention blocks x (2 d_model + d_k)
// x batch / 64, times 1e-5 (a default reverse run at d_k 16 is 0.48).
double training_units(const RunSpec& run);

// The fixed workload: a reverse run at d_k 16 for 10 steps, single-threaded.
RunSpec calibration_workload();
// Seconds one workload takes on this machine now: it runs the workload
// until `budget` seconds have passed (at least twice) and returns the mean
// of all but the first (which pays for first-touch allocations). Throws
// Interrupted (part "the calibration") after a stop signal.
double calibrate(double budget = 0.5);

// Wall seconds for `units` of work on `threads` jobs side by side, each
// unit taking `unit_seconds`: the work divided among the threads the
// machine can run at once.
double estimate_seconds(double units, double unit_seconds, int threads);

// The lines the study prints before it starts:
//   plan: init 150 draw sets, train 120 runs, sgd 54 runs, depth 80 stacks (404 jobs)
//   estimate: about 2m05s on 2 threads here (250 s of one thread at this
//   machine's speed now; the calibration run took 0.155 s)
// The speed is the calibration's wall time: on a machine other programs
// share, a thread gets less than a core, and the estimate counts that.
struct NamedCost {
  std::string part;
  PartCost cost;
};
std::string plan_line(const std::vector<NamedCost>& parts);
std::string estimate_line(const std::vector<NamedCost>& parts, double unit_seconds, int threads);

}  // namespace gradflow::study
