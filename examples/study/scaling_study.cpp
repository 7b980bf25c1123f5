// scaling_study: how the attention scale (1/sqrt(d_k), none, 1/d_k, ...)
// affects attention and gradient flow. Runs the study's parts (init, train,
// sgd, depth; with --full also lr, width, depth-train, length:
// examples/study/parts.h, examples/study/length.h),
// then writes report.md, CSV files and SVG plots, whose verdicts are
// computed from this run's numbers; docs/study.md explains the claims.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <thread>

#include "autograd/reference.h"
#include "examples/study/overall_progress.h"
#include "examples/study/part_table.h"
#include "examples/study/study_flags.h"
#include "examples/study/study_folder.h"
#include "examples/toolkit/cli/args.h"
#include "examples/toolkit/cli/signals.h"
#include "examples/toolkit/training/address_space.h"
#include "examples/toolkit/training/memory_estimate.h"
#include "examples/toolkit/training/run_lock.h"
#include "tensor/kernels/blas_info.h"
#include "tensor/parallel.h"

using namespace gradflow;

namespace {

// The memory of one training run at its peak (examples/toolkit/training/memory_estimate.h),
// plus what the study adds: at evaluation steps the attention probe keeps
// each layer's (B, H, T, S) logits and weights and their gradients.
double run_bytes(const study::RunSpec& spec) {
  const study::RunShape shape = study::run_shape(spec);
  training::TrainingShape training{.kind = shape.encoder_decoder
                                               ? training::ModelKind::kEncoderDecoder
                                               : training::ModelKind::kDecoder,
                                   .config = shape.config,
                                   .batch = std::max(spec.batch, spec.eval_examples),
                                   .src_len = shape.src_len,
                                   .tgt_len = shape.tgt_len};
  const double b = static_cast<double>(training.batch),
               h = static_cast<double>(spec.task.model.heads),
               s = static_cast<double>(shape.src_len), t = static_cast<double>(shape.tgt_len),
               layers = static_cast<double>(spec.task.model.layers);
  const double score_entries =
      shape.encoder_decoder ? layers * (s * s + t * t + t * s) : layers * t * t;
  return training::estimate_training_memory(training).total_bytes + 4 * 4 * b * h * score_entries;
}

// Refuses, before anything runs, a study that cannot fit: `threads` of its
// largest run side by side, and the rows every run keeps for the report (an
// evaluation row every eval_every steps, and one per attention layer at each
// evaluation and probed step).
void check_study_memory(const std::vector<study::RunSpec>& runs, int threads) {
  double run = 0, rows = 0;
  for (const study::RunSpec& spec : runs) {
    run = std::max(run, run_bytes(spec));
    const double layers = static_cast<double>(spec.task.model.layers) *
                          (study::run_shape(spec).encoder_decoder ? 3 : 1);
    const double probes =
        static_cast<double>(spec.task.steps / spec.eval_every + 2 + spec.probe_densely_until / 2);
    rows += static_cast<double>(spec.task.steps / spec.eval_every + 2) + probes * layers;
  }
  const double results = rows * 256;  // a row and its strings
  const double total = static_cast<double>(threads) * run + results;
  // Under `ulimit -v` OpenBLAS would wait forever for a buffer it cannot map
  // (address_space.h): each job's thread and the main thread (the calibration) map one.
  training::check_address_space(threads, total, training::address_space_limit(),
                                training::address_space_in_use(), /*main_too=*/true);
  const uint64_t available = training::available_memory_bytes();
  if (available == 0 || total <= static_cast<double>(available)) return;
  throw cli::UsageError(
      "the study needs about " + training::format_bytes(total) + " (" + std::to_string(threads) +
      " runs side by side of up to " + training::format_bytes(run) + ", and " +
      training::format_bytes(results) + " of results from " + std::to_string(runs.size()) +
      " runs), more than the " + training::format_bytes(static_cast<double>(available)) +
      " available; lower --threads, --d-ks, --recall-pairs, --recall-keys, "
      "--seeds or --steps");
}

// The verdicts and the final accuracy table, as the end of the run shows them.
void print_summary(const std::vector<study::Section>& sections, const study::TrainResult& train,
                   const study::TrainOptions& options) {
  const std::vector<study::Verdict> verdicts = study::claims_in_order(sections);
  if (!verdicts.empty()) {
    std::printf("\n%-4s %-15s %s\n", "id", "verdict", "claim");
    for (const study::Verdict& v : verdicts)
      std::printf("%-4s %-15s %s%s\n", v.id.c_str(), v.verdict.c_str(),
                  v.identity ? "(identity) " : "", v.claim.c_str());
  }
  for (const study::Section& s : sections)
    if (!s.terminal_summary.empty()) std::printf("\n%s\n", s.terminal_summary.c_str());
  if (train.finals.empty()) return;
  std::printf(
      "\nreverse: final held-out accuracy, mean over %lld seeds; recall: the share of runs "
      "solved (intervals in report.md)\n",
      static_cast<long long>(options.seeds));
  std::printf("%-8s %5s", "task", "d_k");
  for (const std::string& m : options.modes) std::printf(" %8.8s", m.c_str());
  std::printf("\n");
  std::string task;
  int64_t d_k = -1;
  for (const study::SettingSummary& s : study::summarise_training(train.finals)) {
    if (s.task != task || s.d_k != d_k) {
      if (d_k >= 0) std::printf("\n");
      task = s.task, d_k = s.d_k;
      std::printf("%-8s %5lld", task.c_str(), static_cast<long long>(d_k));
    }
    std::printf(" %8.3f", s.metric[0].mean);
  }
  std::printf("\n");
}

// What every job of the process shares, set before any job (and the
// calibration) starts.
void prepare_jobs(const study::Flags& f) {
  set_num_threads(1);  // parallelism comes from running several jobs at once
  set_reference_ops(f.reference);
  // Unscaled attention saturates, and its gradients are then full of denormal
  // floats, which Intel cores handle several times slower (tensor/parallel.h).
  set_flush_denormals(true);
}

void create_out(const std::string& out) {
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (!std::filesystem::is_directory(out))
    throw cli::UsageError("--out " + out + ": cannot create the directory" +
                          (ec ? ": " + ec.message() : ""));
}

// Every chosen part's jobs and their cost, for the plan, the estimate and
// the progress line.
std::vector<study::NamedCost> part_costs(const std::vector<const study::Part*>& chosen,
                                         const study::StudyRun& study) {
  std::vector<study::NamedCost> costs;
  for (const study::Part* p : chosen)
    costs.push_back({p->name, p->cost ? p->cost(study) : study::PartCost{}});
  return costs;
}

// Tests only: GRADFLOW_STUDY_PAUSE_AFTER_REPORT=<seconds> waits that long
// (or until a stop signal) once the report is written, so a test can send
// a signal at the moment one that came while writing would be seen.
void pause_after_report() {
  const char* text = std::getenv("GRADFLOW_STUDY_PAUSE_AFTER_REPORT");
  if (text == nullptr) return;
  const auto until =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(std::atof(text));
  while (cli::stop_signal() == 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

int run(int argc, char** argv) {
  const study::Flags f = study::parse_flags(argc, argv);
  const std::vector<const study::Part*> chosen = study::chosen_parts(f.parts, f.full);
  if (const std::string warning = study::unused_flags_warning(f, chosen); !warning.empty())
    std::fprintf(stderr, "%s\n", warning.c_str());
  study::StudyRun study = study::plan_study(f, chosen);
  std::vector<study::RunSpec> planned;  // every training run, for the memory check
  for (const study::Part* p : chosen)
    if (p->plan) std::ranges::copy(p->plan(study), std::back_inserter(planned));
  check_study_memory(planned, f.threads);
  const std::vector<study::NamedCost> costs = part_costs(chosen, study);
  note_generic_blas_core();  // one line on stderr when OpenBLAS runs a generic core
  std::printf("%s\n", study::plan_line(costs).c_str());
  std::fflush(stdout);

  // The folder first: a usage error (a study already there) before the calibration.
  std::optional<training::RunLock> lock;  // one study per folder at a time
  bool replacing = false;
  if (!f.estimate) {
    create_out(f.out);
    lock.emplace(f.out);
    replacing = study::claim_study_dir(f.out, f.overwrite);
  }
  prepare_jobs(f);
  // The calibration is stopped by a signal like the parts are; with
  // --estimate there is nothing else to stop, and nothing is written.
  cli::StopSignals stop_signals;
  auto interrupted = [&f](const study::Interrupted& stopped) {
    std::fflush(stdout);
    std::fprintf(stderr, "scaling_study: interrupted by %s; nothing written to %s\n",
                 stopped.what(), f.out.c_str());
    return cli::exit_code_for_signal(stopped.signal());
  };
  double unit_seconds = 0;
  try {
    unit_seconds = study::calibrate();
  } catch (const study::Interrupted& stopped) {
    return interrupted(stopped);
  }
  std::printf("%s\n", study::estimate_line(costs, unit_seconds, f.threads).c_str());
  std::fflush(stdout);
  if (f.estimate) return 0;

  // A stop signal ends the parts' jobs early and the study writes nothing:
  // its report is made from every part at once, and a partial one would
  // read as a finished study.
  const auto start = std::chrono::steady_clock::now();
  auto overall =
      std::make_unique<study::OverallProgress>(costs, unit_seconds, f.threads, std::cerr);
  study.settings.progress = [&overall](const std::string&, const std::string&) {
    return study::ProgressFn(
        [&overall](size_t done, size_t total) { overall->update(done, total); });
  };
  std::vector<double> seconds;
  for (size_t i = 0; i < chosen.size(); ++i) {
    const auto t = std::chrono::steady_clock::now();
    overall->start_part(i);
    try {
      chosen[i]->run(study);
    } catch (const study::Interrupted& stopped) {
      overall.reset();  // ends its line
      return interrupted(stopped);
    } catch (const std::exception&) {
      // Work a part does outside the job runner (the length part's
      // measurements) stops by throwing: a signal, not an error.
      const int signal = cli::stop_signal();
      if (signal == 0) throw;
      overall.reset();
      return interrupted(study::Interrupted(signal, chosen[i]->name, 0, costs[i].cost.jobs.size()));
    }
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count());
  }
  overall->finish();
  overall.reset();
  if (const int signal = cli::stop_signal(); signal != 0)  // after the last job
    return interrupted(study::Interrupted(signal, "the report", 0, 1));
  std::vector<study::Section> sections;
  for (size_t i = 0; i < chosen.size(); ++i) {
    sections.push_back(chosen[i]->section(study));
    sections.back().seconds = seconds[i];
  }
  const study::ReportInfo info{
      .command = study::command_line(argc, argv),
      .seed = study.settings.seed,
      .threads = f.threads,
      // The train part's seeds; the other parts state their own in their sections.
      .training_seeds = std::any_of(chosen.begin(), chosen.end(),
                                    [](const study::Part* p) { return p->name == "train"; })
                            ? study.train_options.seeds
                            : 0,
      .seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
  study::write_study(f.out, replacing, info, sections);
  pause_after_report();
  print_summary(sections, study.train, study.train_options);
  std::printf(
      "\nreport: %s/report.md (%.0f s)\npage:   %s/index.html (the report with its "
      "figures, to open in a browser)\n",
      f.out.c_str(), info.seconds, f.out.c_str());
  // A signal that came while the report was written: the study is complete
  // (its files are each written whole), but the run was asked to stop, which
  // exit 0 would hide.
  if (const int signal = cli::stop_signal(); signal != 0) {
    std::fflush(stdout);
    std::fprintf(stderr,
                 "scaling_study: interrupted by %s while writing the report; the study in %s "
                 "is complete\n",
                 cli::signal_name(signal).c_str(), f.out.c_str());
    return cli::exit_code_for_signal(signal);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return cli::run_cli(argc, argv, run); }
