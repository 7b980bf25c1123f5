#include "examples/toolkit/training/program.h"

#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <thread>

#include "autograd/variable.h"
#include "examples/toolkit/cli/number_text.h"
#include "nn/optim/optim.h"
#include "tensor/kernels/blas_info.h"

namespace gradflow::training {
namespace {

// The seed of a run's saved generator number `index` (0 init, 1 data, then
// the program's own), and of its held-out data: program.h's table.
uint64_t generator_seed(int64_t seed, size_t index) { return static_cast<uint64_t>(seed) + index; }
uint64_t held_out_seed(int64_t seed) { return static_cast<uint64_t>(seed) ^ 0x9e3779b97f4a7c15ull; }

}  // namespace

std::string threads_text(int threads, bool chosen, unsigned cores) {
  std::string out = std::to_string(threads) + (threads == 1 ? " thread" : " threads");
  if (chosen || cores <= static_cast<unsigned>(threads)) return out;
  // The default stays 1 on any machine: a run's numbers depend on its
  // thread count (each thread takes a part of the batch), so a default that
  // followed the machine would make the same command differ across machines.
  return out + " (the default; this machine has " + std::to_string(cores) + " cores: --threads " +
         std::to_string(cores) + " is faster, and a run repeats bitwise at the same --threads)";
}

TrainingProgram::TrainingProgram(const std::string& name, const std::string& about,
                                 CommonFlags& flags)
    : args(name, about), run_flags(args), name_(name), flags_(flags) {}

void TrainingProgram::add_common_flags() { training::add_common_flags(args, run_flags, flags_); }

void TrainingProgram::parse(int argc, char** argv,
                            const std::function<void()>& check_command_line) {
  args.parse(argc, argv);
  // The command as typed, for the run's page: the program's name, then each word as a shell
  // reads it back.
  command_ = name_;
  for (int i = 1; i < argc; ++i) command_ += " " + cli::shell_word(argv[i]);
  if (check_command_line) check_command_line();
  checkpoint_ = setup_run(name_, args, argc, argv, run_flags, flags_);
  // Only now is --seed known: a resumed run's comes from its checkpoint.
  init = Generator(generator_seed(flags_.seed, 0));
  data = Generator(generator_seed(flags_.seed, 1));
  generators_ = {{"init", &init}, {"data", &data}};
  parsed_ = true;
}

Generator& TrainingProgram::add_generator(const std::string& name) {
  if (!parsed_) throw std::logic_error(name_ + ": add_generator before parse, with no --seed yet");
  Generator& added = added_.emplace_back(generator_seed(flags_.seed, generators_.size()));
  generators_.emplace_back(name, &added);
  return added;
}

Generator TrainingProgram::held_out_generator() const {
  if (!parsed_) throw std::logic_error(name_ + ": held_out_generator before parse");
  return Generator(held_out_seed(flags_.seed));
}

nn::ModelConfig TrainingProgram::prepare(int64_t vocab, int64_t max_len, TrainingShape shape) {
  if (!parsed_) throw std::logic_error(name_ + ": prepare before parse");
  config_ = checkpoint_.empty() ? model_config(flags_, vocab, max_len)
                                : config_from_metadata(checkpoint_);
  if (!checkpoint_.empty())  // its tensors against its config, before anything is built
    check_resumed_model(checkpoint_path(flags_.resume), shape.kind, *config_, shape.classes);
  shape.config = *config_;
  shape.batch = flags_.batch;
  lock_.emplace(prepare_run(flags_, shape));
  schedule_ = make_schedule(flags_, config_->d_model);
  return *config_;
}

int TrainingProgram::train(nn::Module& model, const Hooks& hooks, const Report& report) {
  if (!config_) throw std::logic_error(name_ + ": train before prepare");
  nn::AdamW optimizer(model.parameters(), flags_.lr,
                      nn::AdamWSettings::pytorch(flags_.weight_decay));
  note_generic_blas_core();  // one line on stderr when OpenBLAS runs a generic core
  std::cout << "  " << flags_.steps << " steps of " << flags_.batch << " " << report.batch_of
            << ", " << schedule_->describe(cli::number_text)
            << (report.held_out.empty() ? "" : "; " + report.held_out) << "; "
            << threads_text(flags_.threads, args.seen("--threads") || !checkpoint_.empty(),
                            std::thread::hardware_concurrency())
            << "; output in " << flags_.out << "\n"
            << std::flush;

  LoopOptions loop = loop_options(flags_);
  loop.metrics = report.metrics;
  loop.metadata = run_metadata(name_, *config_, run_flags);
  // Only the cosine spans --steps; its horizon stays the first session's.
  if (flags_.schedule == "cosine") {
    const int64_t horizon = schedule_horizon(flags_);
    loop.metadata.emplace_back("schedule_steps", std::to_string(horizon));
    if (flags_.steps > horizon)
      loop.notes.push_back("note: --steps " + std::to_string(flags_.steps) +
                           " runs past the cosine schedule's " + std::to_string(horizon) +
                           " steps: steps " + std::to_string(horizon + 1) + " to " +
                           std::to_string(flags_.steps) + " keep its final learning rate, " +
                           cli::number_text(flags_.lr / 10) + " (docs/reliability.md)");
  }
  loop.metadata.insert(loop.metadata.end(), report.metadata.begin(), report.metadata.end());
  loop.page = {.write = true, .command = command_, .batch = flags_.batch};
  TrainResult result = run_training(model, optimizer, *schedule_, generators_, loop, hooks);
  if (result.outcome != Outcome::kFinished) return exit_code(result);

  model.eval();
  NoGradGuard no_grad;
  // A run resumed at its last step trains nothing, so nothing was evaluated.
  if (result.metrics.empty() && hooks.evaluate) result.metrics = hooks.evaluate().metrics;
  if (report.summary) report.summary(result.metrics);
  if (result.skipped > 0)
    std::printf("%lld steps skipped for non-finite values\n",
                static_cast<long long>(result.skipped));
  if (report.show) report.show();
  std::cout << wrote_line(flags_.out, result.written) << "\n";
  return 0;
}

std::string describe_model(const nn::Module& model, const nn::ModelConfig& config,
                           const std::string& more) {
  return std::to_string(model.num_parameters()) + " parameters (d_model " +
         std::to_string(config.d_model) + ", heads " + std::to_string(config.heads) + ", layers " +
         std::to_string(config.layers) + ", d_ff " + std::to_string(config.d_ff) +
         (more.empty() ? "" : ", " + more) + ", scale " + config.scale.name() + ")";
}

}  // namespace gradflow::training
