#include "examples/common/run_flags.h"

#include "nn/positional_schemes.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <filesystem>

#include "autograd/reference.h"
#include "tensor/parallel.h"

namespace gradflow::examples {

namespace fs = std::filesystem;
using cli::UsageError;

cli::Option<std::string>& RunFlags::add_choice(const std::string& name, std::string* target,
                                               std::vector<std::string> choices, std::string help) {
  flags_.emplace_back(name, [target] { return *target; });
  return args_.add_choice(name, target, std::move(choices), std::move(help));
}

nn::Metadata RunFlags::to_metadata() const {
  nn::Metadata out;
  for (const auto& [name, get] : flags_) out.emplace_back("flag." + name, get());
  return out;
}

void RunFlags::restore(const nn::Metadata& metadata, const std::vector<std::string>& command_line) {
  std::vector<std::string> stored, values;
  for (const auto& [name, get] : flags_) {
    auto it = std::find_if(metadata.begin(), metadata.end(),
                           [&](const auto& kv) { return kv.first == "flag." + name; });
    // A checkpoint older than a flag ran with that flag's default.
    if (it == metadata.end()) {
      values.push_back(get());
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

void check_float32(double value) {
  if (!(std::abs(value) <= FLT_MAX))
    throw UsageError(cli::detail::format_value(value) +
                     " does not fit in float32, the dtype it is used in (|x| <= 3.4e38)");
  // 1e-320 or 4e-45 would become 0 or a subnormal there: a zero --lr (which
  // `--lr 0` is refused for), or a value flushed to zero in the kernels.
  if (value != 0 && std::abs(value) < FLT_MIN)
    throw UsageError(cli::detail::format_value(value) +
                     " is below float32's smallest normal number (1.2e-38), the dtype it is used "
                     "in, where it would be zero or subnormal");
}

nn::ScaleMode parse_scale(const std::string& text) {
  if (text.rfind("const:", 0) == 0) {
    // The number of const:<v> is read as every flag's number is (args.h):
    // " 1" and "0x10" are refused here as they are for --lr.
    double value = 0;
    cli::detail::parse_value("const", std::string_view(text).substr(6), &value);
    if (!(value > 0)) throw UsageError("const: must be > 0, got " + text.substr(6));
    check_float32(value);
  }
  return nn::ScaleMode::parse(text);
}

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
  run.add("--scale", &f.scale, "attention scale: " + nn::scale_mode_names())
      .metavar("MODE")
      .check([](const std::string& s) { parse_scale(s); });
  run.add("--d-model", &f.d_model, "model width (a multiple of --heads)").min(1);
  run.add("--heads", &f.heads, "attention heads").min(1);
  run.add("--layers", &f.layers, "transformer layers (per stack)").min(1);
  run.add("--d-ff", &f.d_ff, "feed-forward width").min(1);
  run.add("--head-dim", &f.head_dim,
          "d_k of every attention layer (0: d-model / heads; else the Q, K, V projections map "
          "d-model to heads x head-dim)")
      .min(0);
  run.add_choice("--positional", &f.positional, nn::positional_names(),
                 "positions: a learned table or fixed sinusoids added to the embeddings, rotary "
                 "embeddings turning q and k, or ALiBi's distance bias on the logits, in every "
                 "self-attention layer (nn/positional_schemes.h)");
  run.add_choice(
      "--norm", &f.norm, {"pre", "post"},
      "LayerNorm placement: before each sublayer (pre) or after its residual add (post)");
  run.add_choice("--activation", &f.activation, {"gelu", "relu"}, "feed-forward activation");
  run.add("--dropout", &f.dropout,
          "dropout on each sublayer's output (above 0, a batch runs as one part: --threads then "
          "splits the kernels)")
      .min(0)
      .check([](double p) {
        if (!(p < 1)) throw UsageError("must be below 1");
      });
  run.add("--seed", &f.seed, "seed of the initialisation and the data").min(0);
  args.add("--threads", &f.threads,
           "threads: each step runs this many parts of the batch at once, one per thread")
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
  const nn::ModelConfig flagged = model_config(flags, stored.vocab, stored.max_len);
  const std::pair<const char*, std::pair<std::string, std::string>> fields[] = {
      {"d-model", {std::to_string(stored.d_model), std::to_string(flagged.d_model)}},
      {"heads", {std::to_string(stored.heads), std::to_string(flagged.heads)}},
      {"layers", {std::to_string(stored.layers), std::to_string(flagged.layers)}},
      {"d-ff", {std::to_string(stored.d_ff), std::to_string(flagged.d_ff)}},
      {"head-dim", {std::to_string(stored.head_dim), std::to_string(flagged.head_dim)}},
      {"scale", {stored.scale.name(), flagged.scale.name()}},
      {"norm", {nn::norm_placement_name(stored.norm), nn::norm_placement_name(flagged.norm)}},
      {"activation", {stored.activation, flagged.activation}},
      {"positional", {stored.positional, flagged.positional}},
      {"dropout",
       {cli::detail::format_value(stored.dropout), cli::detail::format_value(flagged.dropout)}}};
  for (const auto& [flag, values] : fields) {
    const std::string name = std::string("--") + flag;
    bool stored_flag = false;
    for (const auto& kv : metadata) stored_flag = stored_flag || kv.first == "flag." + name;
    if (!stored_flag || values.first == values.second) continue;
    std::string key = flag;
    std::replace(key.begin(), key.end(), '-', '_');
    throw UsageError(
        "the checkpoint's config." + key + " " + values.first + " differs from its flag." + name +
        " " + values.second +
        " (an edited checkpoint?): it builds neither model exactly; refusing to guess");
  }
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
  }
  if (flags.head_dim == 0 && flags.d_model % flags.heads != 0)
    throw UsageError("--d-model " + std::to_string(flags.d_model) +
                     " must be divisible by --heads " + std::to_string(flags.heads) +
                     " (or set --head-dim)");
  const int64_t d_k = flags.head_dim ? flags.head_dim : flags.d_model / flags.heads;
  if (const auto check = nn::positional_scheme(flags.positional).check) {
    try {
      check({.d_k = d_k, .heads = flags.heads});
    } catch (const Error& e) {
      throw UsageError("--positional " + flags.positional + ": " + e.what());
    }
  }
  set_num_threads(flags.threads);
  set_reference_ops(flags.reference);
  // Denormal gradients (a saturated softmax's) would slow Intel cores several
  // times over for a difference below 1e-38 (tensor/parallel.h).
  set_flush_denormals(true);
  return metadata;
}

// ModelConfig's integer fields, under their metadata names.
constexpr std::pair<const char*, int64_t nn::ModelConfig::*> kConfigSizes[] = {
    {"vocab", &nn::ModelConfig::vocab},      {"d_model", &nn::ModelConfig::d_model},
    {"heads", &nn::ModelConfig::heads},      {"layers", &nn::ModelConfig::layers},
    {"d_ff", &nn::ModelConfig::d_ff},        {"max_len", &nn::ModelConfig::max_len},
    {"head_dim", &nn::ModelConfig::head_dim}};

nn::Metadata config_metadata(const nn::ModelConfig& c) {
  nn::Metadata m;
  for (auto [key, field] : kConfigSizes) m.emplace_back(key, std::to_string(c.*field));
  m.insert(m.end(), {{"scale", c.scale.name()},
                     {"norm", nn::norm_placement_name(c.norm)},
                     {"activation", c.activation},
                     {"positional", c.positional},
                     {"dropout", cli::detail::format_value(c.dropout)}});
  for (auto& [key, value] : m) key = "config." + key;
  return m;
}

nn::ModelConfig config_from_metadata(const nn::Metadata& m) {
  try {
    // A key every gradflow checkpoint has written must be there; one added
    // since (head_dim, norm) may be missing, and then the default stands.
    auto find = [&m](const std::string& key) -> const std::string* {
      for (const auto& [k, v] : m)
        if (k == "config." + key) return &v;
      return nullptr;
    };
    auto get = [&m](const std::string& key) { return nn::metadata_value(m, "config." + key); };
    nn::ModelConfig c;
    for (auto [key, field] : kConfigSizes) {
      if (std::string(key) == "head_dim" && !find(key)) continue;  // d_k = d_model / heads
      cli::detail::parse_value(key, get(key), &(c.*field));
    }
    c.scale = parse_scale(get("scale"));
    c.norm = nn::parse_norm_placement(get("norm"));
    c.activation = get("activation");
    c.positional = get("positional");
    cli::detail::parse_value("dropout", get("dropout"), &c.dropout);
    c.validate();
    return c;
  } catch (const std::exception& e) {
    throw UsageError(std::string("--resume: bad model config in the checkpoint: ") + e.what());
  }
}

nn::ModelConfig model_config(const CommonFlags& f, int64_t vocab, int64_t max_len) {
  nn::ModelConfig c;
  c.vocab = vocab;
  c.d_model = f.d_model, c.heads = f.heads, c.layers = f.layers, c.d_ff = f.d_ff;
  c.head_dim = f.head_dim;
  c.max_len = max_len;
  c.scale = parse_scale(f.scale);
  c.norm = nn::parse_norm_placement(f.norm);
  c.activation = f.activation;
  c.positional = f.positional;
  c.dropout = f.dropout;
  return c;
}

nn::LrSchedule make_schedule(const CommonFlags& f, int64_t d_model) {
  const int64_t warmup = std::min(f.warmup, f.steps);
  // noam peaks at factor / sqrt(d_model * warmup) on update `warmup`.
  const double factor =
      f.lr * std::sqrt(static_cast<double>(d_model * std::max<int64_t>(warmup, 1)));
  try {
    return nn::LrSchedule::from_name(f.schedule, {.lr = f.lr,
                                                  .min_lr = f.lr / 10,
                                                  .warmup_steps = warmup,
                                                  .total_steps = f.steps,
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

}  // namespace gradflow::examples
