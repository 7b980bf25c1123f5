// scaling_study: how the attention scale (1/sqrt(d_k), none, 1/d_k, ...)
// affects attention and gradient flow. Runs the study's parts (init, train,
// sgd, depth; with --full also lr, width, depth-train, length:
// examples/study/parts.h, examples/study/length.h),
// then writes report.md, CSV files and SVG plots, whose verdicts are
// computed from this run's numbers; docs/study.md explains the claims.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <set>

#include "autograd/reference.h"
#include "examples/study/part_table.h"
#include "examples/study/study_folder.h"
#include "examples/toolkit/cli/args.h"
#include "examples/toolkit/cli/progress.h"
#include "examples/toolkit/cli/signals.h"
#include "examples/toolkit/training/memory_estimate.h"
#include "examples/toolkit/training/run_lock.h"
#include "tensor/parallel.h"

using namespace gradflow;

namespace {

// The command line as a shell reads it back: an argument with anything but
// letters, digits and _./:=,+- in it goes in single quotes ('\'' for a quote).
std::string command_line(int argc, char** argv) {
  std::string out = "scaling_study";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool plain = !arg.empty() && arg.find_first_not_of(
                                           "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                           "0123456789_./:=,+-") == std::string::npos;
    if (plain) {
      out += " " + arg;
      continue;
    }
    out += " '";
    for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += "'";
  }
  return out;
}

std::string comma_list(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

std::vector<std::string> split_list(const std::string& text, const std::string& flag) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    if (end == start) throw cli::UsageError(flag + ": an empty item in '" + text + "'");
    const std::string item = text.substr(start, end - start);
    // Each item is one arm or setting of the study: a repeat would run the
    // same runs again and pool them as if they were more seeds.
    if (std::find(out.begin(), out.end(), item) != out.end())
      throw cli::UsageError(flag + ": '" + item + "' is listed twice in '" + text +
                            "' (a repeat would be pooled as extra seeds)");
    out.push_back(item);
    start = end + 1;
  }
  return out;
}

// A progress display per part, named, counting the part's own units, its
// clock started when the part starts (run_jobs reports 0 done first).
study::ProgressFn progress_for(std::unique_ptr<cli::Progress>& bar, const std::string& label,
                               const std::string& unit) {
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

// The parts --parts names (by name or the earlier layout's letter), in the
// table's order; empty: the default run's, or every part with --full.
std::vector<const study::Part*> chosen_parts(const std::string& text, bool full) {
  std::vector<const study::Part*> chosen;
  if (text.empty()) {
    for (const study::Part& p : study::parts())
      if (full || p.in_default) chosen.push_back(&p);
    return chosen;
  }
  for (const std::string& name : split_list(text, "--parts")) {
    const study::Part* p = study::find_part(name);
    if (p == nullptr)
      throw cli::UsageError("--parts: unknown part '" + name + "' (expected " +
                            study::part_names() + ")");
    if (std::find(chosen.begin(), chosen.end(), p) != chosen.end())
      throw cli::UsageError("--parts: '" + p->name + "' is listed twice in '" + text + "'");
    chosen.push_back(p);
  }
  std::sort(chosen.begin(), chosen.end());  // the table's order: pointers into it
  return chosen;
}

std::vector<study::TaskSetup> parse_tasks(const std::string& text, int64_t recall_pairs,
                                          int64_t recall_keys) {
  std::vector<study::TaskSetup> out;
  for (const std::string& t : split_list(text, "--tasks")) {
    if (t == "reverse") {
      out.push_back(study::reverse_setup());
    } else if (t == "recall") {
      study::TaskSetup recall = study::recall_setup();
      if (recall_keys > 0) recall.recall.n_keys = recall.recall.n_values = recall_keys;
      if (recall_pairs > 0) recall.recall.pairs = recall.recall.queries = recall_pairs;
      if (recall.recall.pairs > recall.recall.n_keys)
        throw cli::UsageError("--recall-pairs " + std::to_string(recall.recall.pairs) +
                              " exceeds the " + std::to_string(recall.recall.n_keys) + " keys");
      out.push_back(recall);
    } else {
      throw cli::UsageError("--tasks: unknown task '" + t + "' (expected reverse or recall)");
    }
  }
  return out;
}

std::vector<int64_t> parse_d_ks(const std::string& text) {
  std::vector<int64_t> out;
  for (const std::string& d : split_list(text, "--d-ks")) {
    int64_t v = 0;
    cli::detail::parse_value("--d-ks", d, &v);
    if (v < 1 || v > 4096) throw cli::UsageError("--d-ks: " + d + " is not in [1, 4096]");
    if (std::find(out.begin(), out.end(), v) != out.end())
      throw cli::UsageError("--d-ks: " + std::to_string(v) + " is listed twice in '" + text +
                            "' (a repeat would be pooled as extra seeds)");
    out.push_back(v);
  }
  return out;
}

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
// evaluation row and one per attention layer, every eval_every steps).
void check_study_memory(const std::vector<study::RunSpec>& runs, int threads) {
  double run = 0, rows = 0;
  for (const study::RunSpec& spec : runs) {
    run = std::max(run, run_bytes(spec));
    const double layers = static_cast<double>(spec.task.model.layers) *
                          (study::run_shape(spec).encoder_decoder ? 3 : 1);
    rows += static_cast<double>(spec.task.steps / spec.eval_every + 2) * (1 + layers);
  }
  const double results = rows * 256;  // a row and its strings
  const double total = static_cast<double>(threads) * run + results;
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

struct Flags {
  std::string out = "runs/scaling_study";
  int64_t seed = 0;
  int threads = 2;
  bool full = false, reference = false, overwrite = false;
  int64_t seeds = 0, steps = 0, recall_pairs = 0, recall_keys = 0;
  std::string tasks = "reverse,recall", d_ks, modes, parts;
};

Flags parse_flags(int argc, char** argv) {
  std::string part_list;
  for (const study::Part& p : study::parts())
    part_list += (part_list.empty() ? "" : "; ") + p.name + (p.in_default ? "" : " (--full)") +
                 ": " + p.summary;
  cli::ArgParser args("scaling_study",
                      "Measures how the attention scale affects attention and gradient flow, in "
                      "parts (" +
                          part_list + "). Writes report.md, CSV files and SVG plots to --out.");
  Flags f;
  args.add("--out", &f.out, "output directory");
  args.add("--seed", &f.seed, "base random seed (every run's seeds derive from it)").min(0);
  args.add("--threads", &f.threads, "jobs run side by side (each single-threaded)").min(1).max(64);
  args.add_flag("--full", &f.full,
                "every part, each larger: 10 training seeds instead of 5, more draws, every arm "
                "--full trains, and the parts the default run leaves out (11 minutes on 2 "
                "cores at seed 0)");
  args.add("--seeds", &f.seeds, "seeds of every training part (0: each part's own)")
      .min(0)
      .max(1000);
  args.add("--steps", &f.steps, "training steps per run of every training part (0: each's own)")
      .min(0)
      .max(1000000);
  args.add("--tasks", &f.tasks, "the train part's tasks, comma-separated: reverse, recall");
  args.add("--d-ks", &f.d_ks,
           "the train part's head sizes d_k, comma-separated (empty: 16,256, or 16,64,256 with "
           "--full)");
  args.add("--modes", &f.modes,
           "the train and lr parts' arms, comma-separated (empty: " +
               comma_list(study::default_modes()) + "; with --full also the rest of " +
               std::to_string(study::study_modes().size()) + "). The arms: " + study::arm_names());
  args.add("--recall-pairs", &f.recall_pairs,
           "recall: key-value pairs per example, each asked for once (0: the task's own)")
      .min(0)
      .max(512);
  args.add("--recall-keys", &f.recall_keys, "recall: keys and values to draw from (0: 16)")
      .min(0)
      .max(4096);
  args.add_flag("--reference", &f.reference,
                "run every fused op as its composed reference (autograd/reference.h): slower, "
                "the same results up to rounding");
  args.add_flag("--overwrite", &f.overwrite,
                "replace the study in --out: its files are removed before this one runs");
  args.add("--parts", &f.parts,
           "which parts to run, comma-separated: " + study::part_names() +
               " (the earlier letters A to F also work; empty: the default run's, or all with "
               "--full)");
  args.parse(argc, argv);
  return f;
}

// Every part's options from the flags: the settings first, then what the
// command line changes in the train part.
study::StudyRun plan_study(const Flags& f) {
  study::Settings settings{.seed = static_cast<uint64_t>(f.seed),
                           .threads = f.threads,
                           .full = f.full,
                           .seeds = f.seeds,
                           .steps = f.steps};
  if (!f.modes.empty()) {
    settings.modes = split_list(f.modes, "--modes");
    for (const std::string& m : settings.modes)
      if (!study::find_arm(m))
        throw cli::UsageError("--modes: unknown arm '" + m + "' (expected one of " +
                              study::arm_names() + ")");
  }
  study::StudyRun study(settings);
  study.train_options.tasks = parse_tasks(f.tasks, f.recall_pairs, f.recall_keys);
  if (!f.d_ks.empty()) study.train_options.d_ks = parse_d_ks(f.d_ks);
  return study;
}

// The folder, and what every job of the process shares, set before any job starts.
void prepare_run(const Flags& f) {
  std::error_code ec;
  std::filesystem::create_directories(f.out, ec);
  if (!std::filesystem::is_directory(f.out))
    throw cli::UsageError("--out " + f.out + ": cannot create the directory" +
                          (ec ? ": " + ec.message() : ""));
  set_num_threads(1);  // parallelism comes from running several jobs at once
  set_reference_ops(f.reference);
  // Unscaled attention saturates, and its gradients are then full of denormal
  // floats, which Intel cores handle several times slower (tensor/parallel.h).
  set_flush_denormals(true);
}

int run(int argc, char** argv) {
  const Flags f = parse_flags(argc, argv);
  const std::vector<const study::Part*> chosen = chosen_parts(f.parts, f.full);
  study::StudyRun study = plan_study(f);
  std::vector<study::RunSpec> planned;  // every training run, for the memory check
  for (const study::Part* p : chosen)
    if (p->plan) std::ranges::copy(p->plan(study), std::back_inserter(planned));
  check_study_memory(planned, f.threads);

  const auto start = std::chrono::steady_clock::now();
  prepare_run(f);
  // One study per folder at a time; a stop signal ends the parts' jobs early
  // and the study writes nothing: its report is made from every part at once,
  // and a partial one would read as a finished study.
  const training::RunLock lock(f.out);
  const bool replacing = study::claim_study_dir(f.out, f.overwrite);
  cli::StopSignals stop_signals;
  std::unique_ptr<cli::Progress> bar;
  study.settings.progress = [&bar](const std::string& title, const std::string& unit) {
    return progress_for(bar, title, unit);
  };
  std::vector<double> seconds;
  try {
    for (const study::Part* p : chosen) {
      const auto t = std::chrono::steady_clock::now();
      p->run(study);
      seconds.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count());
    }
  } catch (const study::Interrupted& stopped) {
    bar.reset();  // ends its line
    std::fflush(stdout);
    std::fprintf(stderr, "scaling_study: interrupted by %s; nothing written to %s\n",
                 stopped.what(), f.out.c_str());
    return cli::exit_code_for_signal(stopped.signal());
  }
  std::vector<study::Section> sections;
  for (size_t i = 0; i < chosen.size(); ++i) {
    sections.push_back(chosen[i]->section(study));
    sections.back().seconds = seconds[i];
  }
  const study::ReportInfo info{
      .command = command_line(argc, argv),
      .seed = study.settings.seed,
      .threads = f.threads,
      .training_seeds = study.train_options.seeds,
      .seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
  study::write_study(f.out, replacing, info, sections);
  print_summary(sections, study.train, study.train_options);
  std::printf("\nreport: %s/report.md (%.0f s)\n", f.out.c_str(), info.seconds);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return cli::run_cli(argc, argv, run); }
