// The flags of a training program and what a checkpoint keeps of them.
//
// Flags that define a run (model size, data, optimisation, seed) are
// registered through RunFlags: a checkpoint stores them as metadata
// ("flag.--d-model" = "64") beside the model config ("config.d_model"), and
// --resume restores them, so a resumed run is the same run. The rest
// (--threads, --eval-every, --out, ...) only say how to run it.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "examples/toolkit/cli/args.h"
#include "examples/toolkit/training/model_flags.h"
#include "nn/io/checkpoint.h"
#include "nn/models.h"
#include "nn/optim/schedule.h"

namespace gradflow::training {

// Registers run flags with the parser and remembers how to read them back
// as text.
class RunFlags {
 public:
  explicit RunFlags(cli::ArgParser& args) : args_(args) {}
  RunFlags(const RunFlags&) = delete;
  RunFlags& operator=(const RunFlags&) = delete;

  template <class T>
  cli::Option<T>& add(const std::string& name, T* target, std::string help) {
    flags_.emplace_back(name, [target] {
      if constexpr (std::is_same_v<T, std::string>)
        return *target;  // format_value would quote it, for --help
      else
        return cli::detail::format_value(*target);
    });
    defaults_.push_back(flags_.back().second());
    return args_.add(name, target, std::move(help));
  }
  cli::Option<std::string>& add_choice(const std::string& name, std::string* target,
                                       std::vector<std::string> choices, std::string help);
  // A flag whose value lives elsewhere: `set` reads the text into it (and
  // throws on bad text), `get` writes it back as text, for the metadata and
  // the default --help shows.
  cli::Option<std::string>& add_text(const std::string& name, std::string help,
                                     std::function<void(const std::string&)> set,
                                     std::function<std::string()> get);

  nn::Metadata to_metadata() const;
  // Sets every run flag from a checkpoint's metadata (a flag the checkpoint
  // predates keeps its default), then applies the command line again: it may
  // change --steps (to extend a run), but any other run flag given with a
  // different value is a UsageError.
  void restore(const nn::Metadata& metadata, const std::vector<std::string>& command_line);

 private:
  cli::ArgParser& args_;
  std::vector<std::pair<std::string, std::function<std::string()>>> flags_;
  // Each flag's text when it was registered, its default: what a checkpoint
  // older than the flag ran with (the command line may have set it since).
  std::vector<std::string> defaults_;
  std::deque<std::string> texts_;  // add_text's targets: a deque keeps them in place
};

// The flags every program has. A program sets its defaults in the struct
// before add_common_flags, so --help shows them.
struct CommonFlags {
  int64_t steps = 1000, batch = 32, warmup = 100, eval_every = 200, save_every = 500;
  // The steps the learning-rate schedule spans: 0 means --steps. A resumed
  // run keeps its first session's (setup_run), so raising --steps never
  // restarts the cosine's decay: the steps past it keep its final lr.
  int64_t schedule_steps = 0;
  double lr = 1e-3, clip = 1.0, weight_decay = 0.01;
  std::string schedule = "cosine";
  // Every field a flag sets (--d-model, --scale, --positional, ...: the
  // table of nn/model_config.h); vocab and max_len come from the data.
  nn::ModelConfig model = {};
  int64_t seed = 0;
  int threads = 1;
  bool stop_on_nan = false, overwrite = false;
  int64_t max_skipped_steps = 100;
  bool reference = false;  // run every fused op's composed reference (autograd/reference.h)
  std::string out = "runs/out", resume = "";
  // --graph FILE, --graph-step N, --graph-depth D (training.h: GraphRequest)
  std::string graph = "";
  std::string attention_maps = "";  // --attention-maps DIR (attention_maps.h), added by a program
  int64_t graph_step = 1;
  int graph_depth = 0;
};

void add_common_flags(cli::ArgParser& args, RunFlags& run_flags, CommonFlags& flags);

// After args.parse: with --resume DIR, reads DIR/checkpoint.safetensors and
// restores the run flags from it (checking it is a checkpoint of `program`),
// and --out, unless given, becomes DIR, --threads, unless given, the run's,
// and the schedule keeps the run's horizon (schedule_steps); refuses to
// resume a run still in progress; checks the model sizes; sets the threads
// and, with --reference, the reference path. Returns the checkpoint's metadata, empty
// for a fresh run. Throws UsageError.
nn::Metadata setup_run(const std::string& program, const cli::ArgParser& args, int argc,
                       char** argv, RunFlags& run_flags, CommonFlags& flags);

std::string checkpoint_path(const std::string& dir);  // DIR/checkpoint.safetensors

// The flags' model fields with the data's vocabulary and longest sequence.
nn::ModelConfig model_config(const CommonFlags& flags, int64_t vocab, int64_t max_len);

// --schedule with --lr as its peak for every schedule (noam's factor is set
// so), spanning schedule_horizon steps, with --warmup capped at them.
nn::LrSchedule make_schedule(const CommonFlags& flags, int64_t d_model);
// flags.schedule_steps, or --steps when it is 0. Saved in the checkpoint as
// "schedule_steps".
int64_t schedule_horizon(const CommonFlags& flags);

// "program", the model config and the run flags: what rebuilds the run.
nn::Metadata run_metadata(const std::string& program, const nn::ModelConfig& config,
                          const RunFlags& run_flags);

}  // namespace gradflow::training
