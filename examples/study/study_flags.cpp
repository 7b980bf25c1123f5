// scaling_study's command line (study_flags.h).
#include "examples/study/study_flags.h"

#include <algorithm>

#include "examples/toolkit/cli/args.h"
#include "examples/toolkit/training/model_flags.h"

namespace gradflow::study {

namespace {

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

std::vector<TaskSetup> parse_tasks(const std::string& text, int64_t recall_pairs,
                                   int64_t recall_keys) {
  std::vector<TaskSetup> out;
  for (const std::string& t : split_list(text, "--tasks")) {
    if (t == "reverse") {
      out.push_back(reverse_setup());
    } else if (t == "recall") {
      TaskSetup recall = recall_setup();
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

// Whether a chosen part reads `flag` (its row's flags).
bool read_by(const std::vector<const Part*>& chosen, const std::string& flag) {
  return std::any_of(chosen.begin(), chosen.end(), [&](const Part* p) {
    return std::find(p->flags.begin(), p->flags.end(), flag) != p->flags.end();
  });
}

bool runs(const std::vector<const Part*>& chosen, const std::string& name) {
  return std::any_of(chosen.begin(), chosen.end(), [&](const Part* p) { return p->name == name; });
}

// Whether the train part's tasks include recall (an unparsable list counts
// as yes: its error comes when it is parsed).
bool recall_trains(const Flags& f) { return f.tasks.find("recall") != std::string::npos; }

}  // namespace

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

Flags parse_flags(int argc, char** argv) {
  std::string part_list;
  for (const Part& p : parts())
    part_list += (part_list.empty() ? "" : "; ") + p.name + (p.in_default ? "" : " (--full)") +
                 ": " + p.summary;
  cli::ArgParser args("scaling_study",
                      "Measures how the attention scale affects attention and gradient flow, in "
                      "parts (" +
                          part_list + "). Writes report.md, CSV files and SVG plots to --out.");
  Flags f;
  args.add("--out", &f.out, "output directory");
  args.add("--seed", &f.seed, "base random seed (every run's seeds derive from it)").min(0);
  args.add("--threads", &f.threads,
           "jobs run side by side, each single-threaded: the time changes, the numbers do not")
      .min(1)
      .max(64);
  args.add_flag("--full", &f.full,
                "every part, each larger: 10 training seeds instead of 5, more draws, every arm "
                "--full trains, and the parts the default run leaves out (--full --estimate "
                "prints its time here)");
  args.add("--seeds", &f.seeds, "seeds of every training part (0: each part's own)")
      .min(0)
      .max(1000);
  args.add("--steps", &f.steps, "training steps per run of every training part (0: each's own)")
      .min(0)
      .max(1000000);
  args.add("--tasks", &f.tasks, "the train part's tasks, comma-separated: reverse, recall");
  args.add("--d-ks", &f.d_ks,
           "the train part's head sizes d_k, comma-separated (empty: 16,256, or 16,64,256 with "
           "--full); qk-rate's too, at d_model = 4 d_k (empty: 16,32,64,128)");
  args.add("--modes", &f.modes,
           "the arms, comma-separated: those the train and lr parts train (empty: " +
               comma_list(default_modes()) + "; with --full also the rest of " +
               std::to_string(study_modes().size()) +
               "), and more for the parts at initialisation to measure; read by " +
               parts_reading("--modes") + ". The arms: " + arm_names());
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
                "replace the study in --out, whole: the new one is written beside it and "
                "moved over it once complete");
  args.add("--parts", &f.parts,
           "which parts to run, comma-separated: " + part_names() +
               " (the earlier letters A to F also work; empty: the default run's, or all with "
               "--full)");
  args.add_flag("--estimate", &f.estimate,
                "print the plan (the parts and their jobs) and an estimate of its time on this "
                "machine, from a half-second calibration, and exit without running it");
  args.parse(argc, argv);
  for (const std::string& flag : part_flags())
    if (args.seen(flag)) f.given.insert(flag);
  return f;
}

std::vector<const Part*> chosen_parts(const std::string& text, bool full) {
  std::vector<const Part*> chosen;
  if (text.empty()) {
    for (const Part& p : parts())
      if (full || p.in_default) chosen.push_back(&p);
    return chosen;
  }
  for (const std::string& name : split_list(text, "--parts")) {
    const Part* p = find_part(name);
    if (p == nullptr)
      throw cli::UsageError("--parts: unknown part '" + name + "' (expected " + part_names() + ")");
    if (std::find(chosen.begin(), chosen.end(), p) != chosen.end())
      throw cli::UsageError("--parts: '" + p->name + "' is listed twice in '" + text + "'");
    chosen.push_back(p);
  }
  std::sort(chosen.begin(), chosen.end());  // the table's order: pointers into it
  return chosen;
}

StudyRun plan_study(const Flags& f, const std::vector<const Part*>& chosen) {
  Settings settings{.seed = static_cast<uint64_t>(f.seed),
                    .threads = f.threads,
                    .full = f.full,
                    .seeds = f.seeds,
                    .steps = f.steps};
  const bool trains = runs(chosen, "train");
  if (!f.modes.empty() && read_by(chosen, "--modes")) {
    settings.modes = split_list(f.modes, "--modes");
    for (const std::string& m : settings.modes) {
      // A mode with a value is read as --scale reads it: one parser and its checks (const:1e-45
      // is subnormal in float32, const:nan is no number).
      if (m.find(':') != std::string::npos) try {
          training::parse_scale(m);
        } catch (const cli::UsageError& e) {
          throw cli::UsageError("--modes: '" + m + "': " + e.what());
        }
      if (!find_arm(m))
        throw cli::UsageError("--modes: unknown arm '" + m + "' (expected one of " + arm_names() +
                              ")");
    }
  }
  StudyRun study(settings);
  if (!f.d_ks.empty() && runs(chosen, "qk-rate")) {  // a flag no chosen part reads is not checked
    study.qk_rate_options.d_models.clear();
    for (int64_t d_k : parse_d_ks(f.d_ks)) study.qk_rate_options.d_models.push_back(4 * d_k);
  }
  if (!trains) return study;
  study.train_options.tasks = parse_tasks(f.tasks, f.recall_pairs, f.recall_keys);
  if (!f.d_ks.empty()) study.train_options.d_ks = parse_d_ks(f.d_ks);
  return study;
}

std::string unused_flags_warning(const Flags& f, const std::vector<const Part*>& chosen) {
  std::vector<std::string> unused;
  for (const std::string& flag : part_flags()) {
    if (!f.given.count(flag)) continue;
    bool used = read_by(chosen, flag);
    if (used && (flag == "--recall-pairs" || flag == "--recall-keys")) used = recall_trains(f);
    if (!used) unused.push_back(flag);
  }
  if (unused.empty()) return "";
  std::vector<std::string> names;
  for (const Part* p : chosen) names.push_back(p->name);
  const bool train_without_recall = runs(chosen, "train") && !recall_trains(f);
  return "scaling_study: warning: " + comma_list(unused) + (unused.size() == 1 ? " is" : " are") +
         " not used by the parts run here (" + comma_list(names) +
         (train_without_recall ? "; train without recall" : "") + "); ignored";
}

}  // namespace gradflow::study
