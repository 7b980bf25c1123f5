// scaling_study: how the attention scale (1/sqrt(d_k), none, 1/d_k, ...)
// affects attention and gradient flow: at initialisation (Part A), in
// training over several seeds (Part B) and across depth (Part D). Writes CSV
// files, SVG plots and report.md, whose verdicts are computed from this
// run's numbers; docs/study.md explains the claims and the metrics.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <set>

#include "autograd/reference.h"
#include "examples/common/args.h"
#include "examples/common/progress.h"
#include "examples/common/run_lock.h"
#include "examples/common/signals.h"
#include "examples/study/full_analysis.h"
#include "examples/study/report.h"
#include "examples/study/study.h"
#include "examples/study/summary.h"
#include "examples/study/verdicts.h"
#include "tensor/parallel.h"

using namespace gradflow;

namespace {

std::string command_line(int argc, char** argv) {
  std::string out = "scaling_study";
  for (int i = 1; i < argc; ++i) out += std::string(" ") + argv[i];
  return out;
}

std::vector<std::string> split_list(const std::string& text, const std::string& flag) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    if (end == start) throw cli::UsageError(flag + ": an empty item in '" + text + "'");
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// A progress display per part, named, counting the part's own units, its
// clock started when the part starts (run_jobs reports 0 done first).
study::ProgressFn progress_for(std::unique_ptr<cli::Progress>& bar, std::string label,
                               std::string unit) {
  return [&bar, label, unit](size_t done, size_t total) {
    if (done == 0) {
      bar = std::make_unique<cli::Progress>(static_cast<int64_t>(total), std::cerr,
                                            cli::ProgressOptions{.unit = unit});
      return;
    }
    bar->update(static_cast<int64_t>(done), label);
    if (done == total) {
      bar->finish(label + ": done");
      bar.reset();
    }
  };
}

int run(int argc, char** argv) {
  cli::ArgParser args(
      "scaling_study",
      "Measures how the attention scale affects attention and gradient flow. Part A: at "
      "initialisation, over many random draws, for d_k in {4, 16, 64, 256, 1024} and 8, 64, "
      "512 keys. Part B: trains an encoder-decoder on reverse and a two-layer decoder on "
      "associative recall under each mode for d_k in {16, 64, 256}, over several seeds. Part D: "
      "gradient norms and token similarity across 1 to 8 layers at initialisation. Writes "
      "report.md, CSV files and SVG plots to --out.");
  std::string out = "runs/scaling_study";
  args.add("--out", &out, "output directory");
  int64_t seed = 0;
  args.add("--seed", &seed, "base random seed (seed i of Part B is derived from it)").min(0);
  int threads = 2;
  args.add("--threads", &threads, "jobs run side by side (each single-threaded)").min(1).max(64);
  bool full = false;
  args.add_flag("--full", &full,
                "10 seeds instead of 3, more draws, and Parts C (learning rates), E (width and "
                "muP) and F (depth in training); about 35 minutes on 2 cores");
  int64_t seeds = 0;
  args.add("--seeds", &seeds, "training seeds per setting (0: 3, or 10 with --full)").min(0);
  int64_t steps = 0;
  args.add("--steps", &steps, "training steps per run (0: each task's own)").min(0);
  std::string tasks = "reverse,recall", d_ks = "16,64,256", modes;
  args.add("--tasks", &tasks, "Part B's tasks, comma-separated: reverse, recall");
  args.add("--d-ks", &d_ks, "Part B's head sizes d_k, comma-separated");
  args.add("--modes", &modes,
           "Part B's and C's modes, comma-separated (empty: the seven arms, all nine with --full)");
  int64_t recall_pairs = 0, recall_keys = 0;
  args.add("--recall-pairs", &recall_pairs,
           "recall: key-value pairs per example, each asked for once (0: the task's own)")
      .min(0)
      .max(512);
  args.add("--recall-keys", &recall_keys, "recall: keys and values to draw from (0: 32)")
      .min(0)
      .max(4096);
  bool reference = false;
  args.add_flag("--reference", &reference,
                "run every fused op as its composed reference (autograd/reference.h): slower, "
                "the same results up to rounding");
  std::string parts;
  args.add("--parts", &parts,
           "which parts to run, comma-separated from A to F (empty: A,B,D, or all with --full)");
  args.parse(argc, argv);

  std::set<std::string> run;
  for (const std::string& p :
       split_list(parts.empty() ? (full ? "A,B,C,D,E,F" : "A,B,D") : parts, "--parts")) {
    if (p.size() != 1 || p[0] < 'A' || p[0] > 'F')
      throw cli::UsageError("--parts: unknown part '" + p + "' (expected A to F)");
    run.insert(p);
  }
  const auto start = std::chrono::steady_clock::now();
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (!std::filesystem::is_directory(out))
    throw cli::UsageError("--out " + out + ": cannot create the directory" +
                          (ec ? ": " + ec.message() : ""));
  study::RunInfo info;
  info.command = command_line(argc, argv);
  info.seed = static_cast<uint64_t>(seed);
  info.threads = threads;
  info.full = full;
  info.part_a.seed = info.part_b.seed = info.depth.seed = info.seed;
  info.part_a.threads = info.part_b.threads = info.depth.threads = threads;
  info.part_b.seeds = seeds > 0 ? seeds : full ? 10 : 3;
  info.part_b.steps = steps;
  info.part_b.tasks.clear();
  for (const std::string& t : split_list(tasks, "--tasks")) {
    if (t == "reverse")
      info.part_b.tasks.push_back(study::reverse_setup());
    else if (t == "recall") {
      study::TaskSetup recall = study::recall_setup();
      if (recall_keys > 0) recall.recall.n_keys = recall.recall.n_values = recall_keys;
      if (recall_pairs > 0) recall.recall.pairs = recall.recall.queries = recall_pairs;
      if (recall.recall.pairs > recall.recall.n_keys)
        throw cli::UsageError("--recall-pairs " + std::to_string(recall.recall.pairs) +
                              " exceeds the " + std::to_string(recall.recall.n_keys) + " keys");
      info.part_b.tasks.push_back(recall);
    } else
      throw cli::UsageError("--tasks: unknown task '" + t + "' (expected reverse or recall)");
  }
  info.part_b.d_ks.clear();
  for (const std::string& d : split_list(d_ks, "--d-ks")) {
    int64_t v = 0;
    cli::detail::parse_value("--d-ks", d, &v);
    if (v < 1 || v > 4096) throw cli::UsageError("--d-ks: " + d + " is not in [1, 4096]");
    info.part_b.d_ks.push_back(v);
  }
  if (full) info.part_b.modes = study::study_modes();
  if (!modes.empty()) {
    info.part_b.modes = split_list(modes, "--modes");
    for (const std::string& m : info.part_b.modes)
      if (std::find(study::study_modes().begin(), study::study_modes().end(), m) ==
          study::study_modes().end())
        throw cli::UsageError("--modes: unknown mode '" + m + "'");
  }
  if (full) info.part_a.layer_rows = 8192, info.depth.draws = 32;
  info.lr_sweep.seed = info.width.seed = info.depth_training.seed = info.seed;
  info.lr_sweep.threads = info.width.threads = info.depth_training.threads = threads;
  info.lr_sweep.modes = info.part_b.modes;
  set_num_threads(1);  // parallelism comes from running several jobs at once
  // Process-wide, so the jobs' threads all see it; set before any job starts.
  set_reference_ops(reference);
  // Unscaled attention saturates, and its gradients are then full of denormal
  // floats, which Intel cores handle several times slower (tensor/parallel.h).
  set_flush_denormals(true);

  // One study per folder at a time; a stop signal ends the parts' jobs early
  // and the study writes nothing: its report is made from every part at once,
  // and a partial one would read as a finished study.
  const cli::RunLock lock(out);
  cli::StopSignals stop_signals;
  std::unique_ptr<cli::Progress> bar;
  std::vector<study::InitRow> init;
  std::vector<study::DepthRow> depth;
  study::PartBResult training;
  auto seconds_since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };
  study::FullResults extra;
  try {
    if (run.count("A")) {
      const auto t = std::chrono::steady_clock::now();
      init =
          study::run_part_a(info.part_a, progress_for(bar, "Part A: initialisation", "draw set"));
      info.seconds_a = seconds_since(t);
    }
    if (run.count("D")) {
      const auto t = std::chrono::steady_clock::now();
      depth = study::run_depth_probe(info.depth, progress_for(bar, "Part D: depth", "stack"));
      info.seconds_d = seconds_since(t);
    }
    if (run.count("B")) {
      const auto t = std::chrono::steady_clock::now();
      training = study::run_part_b(info.part_b, progress_for(bar, "Part B: training", "run"));
      info.seconds_b = seconds_since(t);
    }
    if (run.count("C")) {
      const auto t = std::chrono::steady_clock::now();
      extra.sweep =
          study::run_lr_sweep(info.lr_sweep, progress_for(bar, "Part C: learning rates", "run"));
      info.seconds_c = seconds_since(t);
    }
    if (run.count("E")) {
      const auto t = std::chrono::steady_clock::now();
      extra.width =
          study::run_width_sweep(info.width, progress_for(bar, "Part E: width and muP", "run"));
      info.seconds_e = seconds_since(t);
    }
    if (run.count("F")) {
      const auto t = std::chrono::steady_clock::now();
      extra.depth = study::run_depth_training(
          info.depth_training, progress_for(bar, "Part F: depth in training", "run"));
      info.seconds_f = seconds_since(t);
    }
  } catch (const study::Interrupted& stopped) {
    bar.reset();  // ends its line
    std::fflush(stdout);
    std::fprintf(stderr, "scaling_study: interrupted by %s; nothing written to %s\n",
                 stopped.what(), out.c_str());
    return cli::exit_code_for_signal(stopped.signal());
  }
  info.seconds = seconds_since(start);
  study::write_report(out, info, init, training, depth, extra);

  std::vector<study::Verdict> verdicts;
  if (!init.empty())
    verdicts = study::judge_claims(init, study::summarise_training(training.finals));
  for (study::Verdict& v : study::judge_full_claims(extra, training)) verdicts.push_back(v);
  if (!verdicts.empty()) {
    std::printf("\n%-4s %-15s %s\n", "id", "verdict", "claim");
    for (const study::Verdict& v : verdicts)
      std::printf("%-4s %-15s %s\n", v.id.c_str(), v.verdict.c_str(), v.claim.c_str());
  }
  if (!training.finals.empty()) {
    std::printf("\nfinal held-out accuracy, mean over %lld seeds (95%% interval in report.md)\n",
                static_cast<long long>(info.part_b.seeds));
    std::printf("%-8s %5s", "task", "d_k");
    for (const std::string& m : info.part_b.modes) std::printf(" %8.8s", m.c_str());
    std::printf("\n");
    std::string task;
    int64_t d_k = -1;
    for (const study::SettingSummary& s : study::summarise_training(training.finals)) {
      if (s.task != task || s.d_k != d_k) {
        if (d_k >= 0) std::printf("\n");
        task = s.task, d_k = s.d_k;
        std::printf("%-8s %5lld", task.c_str(), static_cast<long long>(d_k));
      }
      std::printf(" %8.3f", s.metric[0].mean);
    }
    std::printf("\n");
  }
  std::printf("\nreport: %s/report.md (%.0f s)\n", out.c_str(), info.seconds);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return cli::run_cli(argc, argv, run); }
