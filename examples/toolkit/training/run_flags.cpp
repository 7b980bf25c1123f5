#include "examples/toolkit/training/run_flags.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "autograd/reference.h"
#include "examples/toolkit/training/run_lock.h"
#include "examples/toolkit/training/step_graph.h"
#include "tensor/parallel.h"

namespace gradflow::training {

namespace fs = std::filesystem;
using cli::UsageError;

cli::Option<std::string>& RunFlags::add_choice(const std::string& name, std::string* target,
                                               std::vector<std::string> choices, std::string help) {
  flags_.emplace_back(name, [target] { return *target; });
  defaults_.push_back(*target);
  return args_.add_choice(name, target, std::move(choices), std::move(help));
}

cli::Option<std::string>& RunFlags::add_text(const std::string& name, std::string help,
                                             std::function<void(const std::string&)> set,
                                             std::function<std::string()> get) {
  texts_.push_back(get());
  cli::Option<std::string>& option = args_.add(name, &texts_.back(), std::move(help));
  option.set_default_text(get());
  defaults_.push_back(get());
  flags_.emplace_back(name, std::move(get));
  return option.check(std::move(set));
}

nn::Metadata RunFlags::to_metadata() const {
  nn::Metadata out;
  for (const auto& [name, get] : flags_) out.emplace_back("flag." + name, get());
  return out;
}

void RunFlags::restore(const nn::Metadata& metadata, const std::vector<std::string>& command_line) {
  std::vector<std::string> stored, values;
  for (size_t i = 0; i < flags_.size(); ++i) {
    const std::string& name = flags_[i].first;
    auto it = std::find_if(metadata.begin(), metadata.end(),
                           [&](const auto& kv) { return kv.first == "flag." + name; });
    // A checkpoint older than a flag ran with that flag's default, not with
    // whatever the command line, already parsed, gave it.
    if (it == metadata.end()) {
      values.push_back(defaults_[i]);
      continue;
    }
    stored.push_back(name + "=" + it->second);
    values.push_back(it->second);
  }
  // One at a time, so a bad stored value is reported as the checkpoint's,
  // not as if it had been typed.
  for (const std::string& entry : stored) {
    try {
      args_.parse(std::vector<std::string>{entry});
    } catch (const std::exception& e) {
      const std::string name = entry.substr(0, entry.find('='));
      throw UsageError("the checkpoint's flag." + name + " " +
                       cli::quote(entry.substr(name.size() + 1)) + " is not valid: " + e.what());
    }
  }
  args_.parse(command_line);  // what the user asked for wins, then is checked
  for (size_t i = 0; i < flags_.size(); ++i) {
    const auto& [name, get] = flags_[i];
    if (name != "--steps" && get() != values[i])
      throw UsageError(name + " " + get() + " differs from the checkpoint's " + values[i] +
                       " (a resumed run keeps its settings; only --steps may change)");
  }
}

namespace {

// A run flag per model field a flag sets, in the table's order, each writing
// straight into *config.
void add_model_flags(RunFlags& run, nn::ModelConfig* config) {
  for (const nn::ModelField& field : nn::model_fields()) {
    if (field.from_data) continue;
    std::string help = field.help;
    const bool is_scale = std::holds_alternative<nn::ScaleMode nn::ModelConfig::*>(field.member);
    if (is_scale) help += ": " + nn::scale_mode_names();
    cli::Option<std::string>& option = run.add_text(
        flag_name(field), help,
        [&field, config](const std::string& text) { set_field(field, *config, text); },
        [&field, config] { return field_text(field, *config); });
    if (field.choices) option.choices(field.choices());
    if (is_scale) option.metavar("MODE");
    if (std::holds_alternative<int64_t nn::ModelConfig::*>(field.member)) option.metavar("INT");
    if (std::holds_alternative<double nn::ModelConfig::*>(field.member)) option.metavar("NUM");
  }
}

}  // namespace

void add_common_flags(cli::ArgParser& args, RunFlags& run, CommonFlags& f) {
  run.add("--steps", &f.steps, "training steps in all (a resumed run may raise it)")
      .min(1)
      .max(nn::kMaxCheckpointStep);
  run.add("--batch", &f.batch, "examples per batch").min(1);
  run.add("--lr", &f.lr, "peak learning rate (of every schedule)").above(0).check(check_float32);
  run.add_choice("--schedule", &f.schedule, nn::LrSchedule::names(),
                 "learning-rate schedule (cosine decays to lr/10)");
  run.add("--warmup", &f.warmup, "warmup steps of cosine and noam (at most --steps)").min(0);
  run.add("--clip", &f.clip, "clip the gradient norm to this (0: never)")
      .min(0)
      .check(check_float32);
  run.add("--weight-decay", &f.weight_decay, "AdamW weight decay").min(0).check(check_float32);
  add_model_flags(run, &f.model);
  run.add("--seed", &f.seed, "seed of the initialisation and the data").min(0);
  args.add("--threads", &f.threads,
           "threads: each step runs this many parts of the batch at once, one per thread "
           "(the same --threads gives the same run bitwise; a resume keeps the run's)")
      .min(1)
      .max(256);
  // A run flag: which steps have a val_loss is part of what the log means.
  run.add("--eval-every", &f.eval_every, "evaluate every N steps (0: only at the end)").min(0);
  args.add("--save-every", &f.save_every, "save the checkpoint every N steps (0: at the end)")
      .min(0);
  args.add_flag("--stop-on-nan", &f.stop_on_nan,
                "stop (exit code 1) at a non-finite loss or gradient instead of skipping the step");
  args.add("--max-skipped-steps", &f.max_skipped_steps,
           "stop (exit code 2) after this many steps in a row were skipped for non-finite "
           "values, or when every step of a session was (0: never)")
      .min(0);
  // How to run, not what: the same run either way up to rounding, so a
  // checkpoint does not keep it and a resume may change it.
  args.add_flag("--reference", &f.reference,
                "run every fused op (linear, layer norm, attention, cross-entropy, AdamW) as its "
                "composed reference: slower, for checking");
  args.add("--out", &f.out, "output directory (when resuming: the --resume DIR)").metavar("DIR");
  args.add_flag("--overwrite", &f.overwrite,
                "replace the run already in --out (its log and checkpoints are deleted)");
  args.add("--resume", &f.resume, "continue the run whose checkpoint is in DIR (empty: none)")
      .metavar("DIR");
  // Pictures of the run: they change nothing in it.
  args.add("--graph", &f.graph,
           "draw the graph of one training step, each edge labelled and sized by the norm of the "
           "gradient that flowed back along it: FILE.svg, or FILE.dot for Graphviz")
      .metavar("FILE")
      .check([](const std::string& path) {
        if (path.empty()) throw cli::UsageError("must not be empty (leave it out to draw none)");
      });
  args.add("--graph-step", &f.graph_step, "the step --graph draws").min(1);
  args.add("--graph-depth", &f.graph_depth,
           "--graph folds each module this many levels deep into one box (0: every op; 1: the "
           "model; 2: its parts; 3: each layer)")
      .min(0)
      .max(64);
}

std::string checkpoint_path(const std::string& dir) {
  return (fs::path(dir) / "checkpoint.safetensors").string();
}

namespace {

// An edited config.* entry would build another model than the flag.* entries
// (which --help, messages and a later resume read) say: refused, not guessed.
// A flag the checkpoint predates is not compared.
void check_config_matches_flags(const nn::Metadata& metadata, const CommonFlags& flags) {
  bool any = false;
  for (const auto& [key, value] : metadata) any = any || key.rfind("config.", 0) == 0;
  if (!any) return;
  const nn::ModelConfig stored = config_from_metadata(metadata);
  for (const nn::ModelField& field : nn::model_fields()) {
    const std::string name = flag_name(field), wanted = field_text(field, flags.model);
    const std::string got = field_text(field, stored);
    bool stored_flag = false;
    for (const auto& kv : metadata) stored_flag = stored_flag || kv.first == "flag." + name;
    if (field.from_data || !stored_flag || got == wanted) continue;
    throw UsageError(
        "the checkpoint's config." + std::string(field.name) + " " + got +
        " differs from its flag." + name + " " + wanted +
        " (an edited checkpoint?): it builds neither model exactly; refusing to guess");
  }
}

std::string metadata_or(const nn::Metadata& metadata, const std::string& key) {
  for (const auto& [k, v] : metadata)
    if (k == key) return v;
  return "";
}

// What a resumed run keeps of its own unless told otherwise: its threads (so
// it continues bitwise, docs/reliability.md) and its schedule's horizon (a
// checkpoint older than "schedule_steps" spans its own --steps).
void keep_run_settings(const cli::ArgParser& args, const nn::Metadata& metadata, CommonFlags& f) {
  const std::string threads = metadata_or(metadata, "threads");
  if (!args.seen("--threads") && !threads.empty()) {
    const int saved = std::atoi(threads.c_str());
    if (saved >= 1 && saved <= 256) f.threads = saved;
  }
  std::string horizon = metadata_or(metadata, "schedule_steps");
  if (horizon.empty()) horizon = metadata_or(metadata, "flag.--steps");
  const long long steps = std::atoll(horizon.c_str());
  if (steps >= 1 && steps <= nn::kMaxCheckpointStep) f.schedule_steps = steps;
}

}  // namespace

nn::Metadata setup_run(const std::string& program, const cli::ArgParser& args, int argc,
                       char** argv, RunFlags& run_flags, CommonFlags& flags) {
  nn::Metadata metadata;
  if (!flags.resume.empty()) {
    // DIR, or the checkpoint file itself; not model.safetensors, which holds
    // no optimizer or data position and would silently resume the checkpoint
    // beside it instead.
    fs::path dir = flags.resume;
    const std::string given = cli::quote(flags.resume);
    if (fs::is_regular_file(dir)) {
      if (dir.filename() != "checkpoint.safetensors")
        throw UsageError(
            "--resume " + given + ": give the run's folder" +
            (dir.filename() == "model.safetensors"
                 ? " (model.safetensors holds the weights only; the run resumes from the "
                   "checkpoint.safetensors beside it)"
                 : " or its checkpoint.safetensors"));
      dir = dir.has_parent_path() ? dir.parent_path() : ".";
    }
    const std::string path = checkpoint_path(dir.string());
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) throw UsageError("--resume " + given + ": no such folder");
    // A run still training there has the folder, with or without a first
    // checkpoint: say so, rather than advise starting it again.
    if (const std::string holder = lock_holder(dir.string()); !holder.empty())
      throw UsageError("--resume " + given + " is in use by another run (" + holder +
                       "), still training: wait for it to end, or stop it (Ctrl-C, kill " +
                       "PID) and resume then");
    if (!fs::is_regular_file(path, ec))
      throw UsageError(
          "--resume " + given + ": no checkpoint.safetensors there" +
          (fs::exists(dir / "log.csv", ec)
               ? " (the run stopped before its first save; start it again with --out " + given +
                     " --overwrite)"
               : ""));
    try {
      metadata = nn::read_checkpoint_metadata(path);
      auto format = std::find_if(metadata.begin(), metadata.end(),
                                 [](const auto& kv) { return kv.first == "format"; });
      if (format == metadata.end() || format->second.rfind("gradflow-checkpoint", 0) != 0)
        fail("not a training checkpoint (model.safetensors holds weights only)");
      const std::string& owner = nn::metadata_value(metadata, "program");
      if (owner != program) fail("a checkpoint of ", owner, ", not of ", program);
    } catch (const std::exception& e) {
      throw UsageError("--resume " + cli::quote(path) + ": " + e.what());
    }
    try {
      run_flags.restore(metadata, std::vector<std::string>(argv + std::min(argc, 1), argv + argc));
      check_config_matches_flags(metadata, flags);
    } catch (const std::exception& e) {
      std::string problem = e.what();
      if (problem.rfind("--resume: ", 0) == 0) problem.erase(0, 10);  // config_from_metadata's
      throw UsageError("--resume " + cli::quote(path) + ": " + problem);
    }
    flags.resume = dir.string();
    if (!args.seen("--out")) flags.out = flags.resume;
    keep_run_settings(args, metadata, flags);
  }
  // The fields across fields (d_model a multiple of heads, rope's even d_k);
  // each field alone was checked as its flag was read.
  try {
    flags.model.validate();
  } catch (const Error& e) {
    std::string problem = e.what();
    if (problem.rfind("model config: ", 0) == 0) problem.erase(0, 14);
    throw UsageError(problem);
  }
  // Before the run claims its folder: a drawing that cannot be made is a
  // mistake in the command, not a failure at step N.
  check_graph_request({.path = flags.graph, .step = flags.graph_step}, flags.steps);
  try {
    set_num_threads(flags.threads);
  } catch (const std::system_error& e) {  // from std::thread: the bare "Resource ..."
    throw UsageError("--threads " + std::to_string(flags.threads) +
                     ": cannot start a worker thread: " + e.code().message());
  }
  set_reference_ops(flags.reference);
  // Denormal gradients (a saturated softmax's) would slow Intel cores several
  // times over for a difference below 1e-38 (tensor/parallel.h).
  set_flush_denormals(true);
  return metadata;
}

nn::ModelConfig model_config(const CommonFlags& f, int64_t vocab, int64_t max_len) {
  nn::ModelConfig c = f.model;
  c.vocab = vocab;
  c.max_len = max_len;
  return c;
}

int64_t schedule_horizon(const CommonFlags& f) {
  return f.schedule_steps > 0 ? f.schedule_steps : f.steps;
}

nn::LrSchedule make_schedule(const CommonFlags& f, int64_t d_model) {
  const int64_t horizon = schedule_horizon(f);
  const int64_t warmup = std::min(f.warmup, horizon);
  // noam peaks at factor / sqrt(d_model * warmup) on update `warmup`.
  const double factor =
      f.lr * std::sqrt(static_cast<double>(d_model * std::max<int64_t>(warmup, 1)));
  try {
    return nn::LrSchedule::from_name(f.schedule, {.lr = f.lr,
                                                  .min_lr = f.lr / 10,
                                                  .warmup_steps = warmup,
                                                  .total_steps = horizon,
                                                  .d_model = d_model,
                                                  .noam_factor = factor});
  } catch (const std::exception& e) {
    throw UsageError("--schedule " + f.schedule + ": " + e.what());
  }
}

nn::Metadata run_metadata(const std::string& program, const nn::ModelConfig& config,
                          const RunFlags& run_flags) {
  nn::Metadata m = {{"program", program}};
  for (auto& kv : config_metadata(config)) m.push_back(kv);
  for (auto& kv : run_flags.to_metadata()) m.push_back(kv);
  return m;
}

}  // namespace gradflow::training
