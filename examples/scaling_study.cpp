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
#include "examples/common/args.h"
#include "examples/common/memory_estimate.h"
#include "examples/common/progress.h"
#include "examples/common/run_lock.h"
#include "examples/common/signals.h"
#include "examples/study/length.h"
#include "examples/study/parts.h"
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

// The parts by name, in the order a reader meets them; the letters of the
// earlier layout stay as aliases (sgd came later and has none: '\0').
const std::vector<std::pair<std::string, char>>& part_names() {
  static const std::vector<std::pair<std::string, char>> names = {
      {"init", 'A'}, {"train", 'B'}, {"sgd", '\0'},        {"depth", 'D'},
      {"lr", 'C'},   {"width", 'E'}, {"depth-train", 'F'}, {"length", '\0'}};
  return names;
}

std::set<std::string> parse_parts(const std::string& text) {
  std::set<std::string> out;
  for (const std::string& p : split_list(text, "--parts")) {
    auto it = std::find_if(part_names().begin(), part_names().end(), [&p](const auto& n) {
      return p == n.first || (p.size() == 1 && p[0] == n.second);
    });
    if (it != part_names().end() && out.count(it->first))
      throw cli::UsageError("--parts: '" + it->first + "' is listed twice in '" + text + "'");
    if (it == part_names().end())
      throw cli::UsageError("--parts: unknown part '" + p +
                            "' (expected init, train, sgd, depth, lr, width, depth-train, length)");
    out.insert(it->first);
  }
  return out;
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

// A new study in a folder that holds one replaces it only with --overwrite,
// which removes the old study's files first, so no report sits beside
// another run's CSV files. Called with the folder locked.
void claim_study_dir(const std::string& out, bool overwrite) {
  std::vector<std::filesystem::path> present;
  std::error_code ec;
  for (const std::string& file : study::study_files())
    if (std::filesystem::exists(std::filesystem::path(out) / file, ec))
      present.push_back(std::filesystem::path(out) / file);
  if (present.empty()) return;
  if (!overwrite)
    throw cli::UsageError("--out '" + out + "' already holds a study (" +
                          present.front().filename().string() +
                          "): choose another --out, or replace it with --overwrite");
  for (const std::filesystem::path& file : present)
    if (!std::filesystem::remove(file, ec) && ec)
      throw cli::UsageError("--overwrite: cannot remove '" + file.string() + "': " + ec.message());
  std::fprintf(stderr, "--overwrite: removed the previous study's %zu files from '%s'\n",
               present.size(), out.c_str());
}

// The memory of one training run at its peak (examples/common/memory_estimate.h),
// plus what the study adds: at evaluation steps the attention probe keeps
// each layer's (B, H, T, S) logits and weights and their gradients.
double run_bytes(const study::RunSpec& spec) {
  const study::RunShape shape = study::run_shape(spec);
  examples::TrainingShape training{.kind = shape.encoder_decoder
                                               ? examples::ModelKind::kEncoderDecoder
                                               : examples::ModelKind::kDecoder,
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
  return examples::estimate_training_memory(training).total_bytes + 4 * 4 * b * h * score_entries;
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
  const uint64_t available = examples::available_memory_bytes();
  if (available == 0 || total <= static_cast<double>(available)) return;
  throw cli::UsageError(
      "the study needs about " + examples::format_bytes(total) + " (" + std::to_string(threads) +
      " runs side by side of up to " + examples::format_bytes(run) + ", and " +
      examples::format_bytes(results) + " of results from " + std::to_string(runs.size()) +
      " runs), more than the " + examples::format_bytes(static_cast<double>(available)) +
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

int run(int argc, char** argv) {
  cli::ArgParser args(
      "scaling_study",
      "Measures how the attention scale affects attention and gradient flow, in parts: init "
      "(attention at initialisation, over many random draws, for d_k in {4, 16, 64, 256, 1024} "
      "and 8, 64, 512 keys), train (an encoder-decoder on reverse and a two-layer decoder on "
      "associative recall under each mode for d_k 16 and 256 (and 64 with --full), over several "
      "seeds), sgd "
      "(three modes on reverse under plain SGD over a few learning rates), depth "
      "(gradient norms and token similarity across 1 to 8 layers at initialisation); with "
      "--full also lr (learning-rate sensitivity), width (width and muP), depth-train (depth "
      "in training) and length (the scale against the number of keys). Writes report.md, CSV files "
      "and SVG plots to --out.");
  std::string out = "runs/scaling_study";
  args.add("--out", &out, "output directory");
  int64_t seed = 0;
  args.add("--seed", &seed, "base random seed (every run's seeds derive from it)").min(0);
  int threads = 2;
  args.add("--threads", &threads, "jobs run side by side (each single-threaded)").min(1).max(64);
  bool full = false;
  args.add_flag("--full", &full,
                "every part, each larger: 10 training seeds instead of 5, more draws, all ten "
                "arms, and the parts lr, width, depth-train and length (11 minutes on 2 "
                "cores at seed 0)");
  int64_t seeds = 0;
  args.add("--seeds", &seeds, "seeds of every training part (0: each part's own)").min(0).max(1000);
  int64_t steps = 0;
  args.add("--steps", &steps, "training steps per run of every training part (0: each's own)")
      .min(0)
      .max(1000000);
  std::string tasks = "reverse,recall", d_ks, modes;
  args.add("--tasks", &tasks, "the train part's tasks, comma-separated: reverse, recall");
  args.add("--d-ks", &d_ks,
           "the train part's head sizes d_k, comma-separated (empty: 16,256, or 16,64,256 with "
           "--full)");
  args.add("--modes", &modes,
           "the train and lr parts' arms, comma-separated (empty: six, all ten with --full)");
  int64_t recall_pairs = 0, recall_keys = 0;
  args.add("--recall-pairs", &recall_pairs,
           "recall: key-value pairs per example, each asked for once (0: the task's own)")
      .min(0)
      .max(512);
  args.add("--recall-keys", &recall_keys, "recall: keys and values to draw from (0: 16)")
      .min(0)
      .max(4096);
  bool reference = false;
  args.add_flag("--reference", &reference,
                "run every fused op as its composed reference (autograd/reference.h): slower, "
                "the same results up to rounding");
  bool overwrite = false;
  args.add_flag("--overwrite", &overwrite,
                "replace the study in --out: its files are removed before this one runs");
  std::string parts;
  args.add("--parts", &parts,
           "which parts to run, comma-separated: init, train, sgd, depth, lr, width, depth-train, "
           "length (letters A to F also work; empty: init,train,sgd,depth, or all with --full)");
  args.parse(argc, argv);

  const std::set<std::string> run =
      parse_parts(parts.empty() ? (full ? "init,train,sgd,depth,lr,width,depth-train,length"
                                        : "init,train,sgd,depth")
                                : parts);
  study::Settings settings{.seed = static_cast<uint64_t>(seed),
                           .threads = threads,
                           .full = full,
                           .seeds = seeds,
                           .steps = steps};
  if (!modes.empty()) {
    settings.modes = split_list(modes, "--modes");
    for (const std::string& m : settings.modes)
      if (std::find(study::study_modes().begin(), study::study_modes().end(), m) ==
          study::study_modes().end())
        throw cli::UsageError("--modes: unknown mode '" + m + "' (expected one of " +
                              comma_list(study::study_modes()) + ")");
  }
  const study::InitOptions init_options = study::init_options(settings);
  study::TrainOptions train_options = study::train_options(settings);
  train_options.tasks = parse_tasks(tasks, recall_pairs, recall_keys);
  if (!d_ks.empty()) train_options.d_ks = parse_d_ks(d_ks);
  const study::DepthOptions depth_options = study::depth_options(settings);
  const study::SgdOptions sgd_options = study::sgd_options(settings);
  const study::LrOptions lr_options = study::lr_options(settings);
  const study::WidthOptions width_options = study::width_options(settings);
  const study::DepthTrainOptions depth_train_options = study::depth_train_options(settings);
  const study::LengthOptions length_options = study::length_options(settings);

  // Every run of the training parts that run, for the memory check.
  std::vector<study::RunSpec> planned;
  auto plan = [&](const std::string& part, std::vector<study::RunSpec> specs) {
    if (run.count(part)) planned.insert(planned.end(), specs.begin(), specs.end());
  };
  plan("train", study::train_runs(settings, train_options));
  plan("sgd", study::sgd_runs(settings, sgd_options));
  plan("lr", study::lr_runs(settings, lr_options));
  plan("width", study::width_runs(settings, width_options));
  plan("depth-train", study::depth_train_runs(settings, depth_train_options));
  plan("length", study::length_runs(settings, length_options));
  check_study_memory(planned, threads);

  const auto start = std::chrono::steady_clock::now();
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (!std::filesystem::is_directory(out))
    throw cli::UsageError("--out " + out + ": cannot create the directory" +
                          (ec ? ": " + ec.message() : ""));
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
  claim_study_dir(out, overwrite);
  cli::StopSignals stop_signals;
  std::unique_ptr<cli::Progress> bar;
  settings.progress = [&bar](const std::string& title, const std::string& unit) {
    return progress_for(bar, title, unit);
  };
  std::vector<study::InitRow> init;
  study::TrainResult train;
  std::vector<study::DepthRow> depth;
  std::vector<study::FinalRow> sgd, lr;
  std::vector<study::WidthRow> width;
  study::DepthTrainResult depth_train;
  study::LengthResult length;
  std::map<std::string, double> seconds;
  // Runs a part if asked for, timing it; the cheap parts first.
  auto part = [&](const std::string& name, const std::function<void()>& body) {
    if (!run.count(name)) return;
    const auto t = std::chrono::steady_clock::now();
    body();
    seconds[name] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };
  try {
    part("init", [&] { init = study::run_init(settings, init_options); });
    part("depth", [&] { depth = study::run_depth(settings, depth_options); });
    part("train", [&] { train = study::run_train(settings, train_options); });
    part("sgd", [&] { sgd = study::run_sgd(settings, sgd_options); });
    part("lr", [&] { lr = study::run_lr(settings, lr_options); });
    part("width", [&] { width = study::run_width(settings, width_options); });
    part("depth-train",
         [&] { depth_train = study::run_depth_train(settings, depth_train_options); });
    part("length", [&] { length = study::run_length(settings, length_options); });
  } catch (const study::Interrupted& stopped) {
    bar.reset();  // ends its line
    std::fflush(stdout);
    std::fprintf(stderr, "scaling_study: interrupted by %s; nothing written to %s\n",
                 stopped.what(), out.c_str());
    return cli::exit_code_for_signal(stopped.signal());
  }
  // The sections in the order a reader meets them.
  const std::vector<study::SettingSummary> summary = study::summarise_training(train.finals);
  std::vector<study::Section> sections = {
      study::init_section(init_options, init, summary),
      study::train_section(train_options, train, lr),
      study::sgd_section(sgd_options, sgd),
      study::depth_section(depth_options, depth),
      study::lr_section(lr_options, lr),
      study::width_section(width_options, width),
      study::depth_train_section(depth_train_options, depth_train),
      study::length_section(length_options, length)};
  std::erase_if(sections, [&run](const study::Section& s) { return !run.count(s.part); });
  for (study::Section& s : sections) s.seconds = seconds[s.part];
  const study::ReportInfo info{
      .command = command_line(argc, argv),
      .seed = settings.seed,
      .threads = threads,
      .training_seeds = train_options.seeds,
      .seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
  study::write_report(out, info, sections);
  print_summary(sections, train, train_options);
  std::printf("\nreport: %s/report.md (%.0f s)\n", out.c_str(), info.seconds);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return cli::run_cli(argc, argv, run); }
