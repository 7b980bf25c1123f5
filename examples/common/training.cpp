#include "examples/common/training.h"

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <limits>
#include <sstream>

#include "autograd/data_parallel.h"
#include "examples/common/csv_log.h"
#include "examples/common/progress.h"
#include "nn/io/atomic_file.h"

namespace gradflow::examples {
namespace {

namespace fs = std::filesystem;
using cli::UsageError;

volatile std::sig_atomic_t g_interrupted = 0;
void on_sigint(int) { g_interrupted = 1; }

// Installs the Ctrl-C handler for the loop's lifetime.
class SigintGuard {
 public:
  SigintGuard() : previous_(std::signal(SIGINT, on_sigint)) { g_interrupted = 0; }
  ~SigintGuard() { std::signal(SIGINT, previous_); }
  SigintGuard(const SigintGuard&) = delete;
  SigintGuard& operator=(const SigintGuard&) = delete;

 private:
  void (*previous_)(int);
};

std::string fmt(double v) {
  if (std::isnan(v)) return "nan";  // printf may say "-nan"
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// The rows of `from` up to `step` become `to` (the same file when resuming in
// place): rows a crash left after the checkpoint would otherwise repeat.
void carry_log(const std::string& from, const std::string& to, int64_t step) {
  if (!fs::is_regular_file(from)) return;  // nothing to continue: a new log starts
  std::istringstream in(read_file(from, uint64_t{1} << 30));
  std::string line, kept;
  if (!std::getline(in, line)) return;
  kept = line + '\n';
  while (std::getline(in, line))
    if (!in.eof() && std::strtoll(line.c_str(), nullptr, 10) <= step) kept += line + '\n';
  write_file_atomic(to, kept);
}

}  // namespace

LoopOptions loop_options(const CommonFlags& f) {
  // Dropout draws from one generator, which parts run at once cannot share
  // (nn/dropout.h): then the batch is one part, and --threads cuts its
  // kernels instead.
  const int64_t parts =
      f.dropout > 0 ? 1 : std::clamp<int64_t>(f.threads, 1, std::max<int64_t>(f.batch, 1));
  return {.out_dir = f.out,
          .steps = f.steps,
          .eval_every = f.eval_every,
          .save_every = f.save_every,
          .clip = f.clip,
          .parts = parts,
          .stop_on_nan = f.stop_on_nan,
          .resume_dir = f.resume};
}

namespace {

// One update: lr from the schedule, forward, backward, clip, AdamW; a
// non-finite loss or gradient norm leaves the parameters as they were.
StepInfo take_step(nn::Optimizer& optimizer, const nn::LrSchedule& schedule, double clip,
                   int64_t parts, const Hooks& hooks, int64_t step) {
  StepInfo info{.step = step, .lr = schedule.lr_at(optimizer.step_count())};
  optimizer.set_lr(info.lr);
  optimizer.zero_grad();
  const PartLoss part_loss = hooks.batch();
  // Parts whose loss is not finite are not backpropagated; then the step is
  // skipped below and the others' gradients are dropped.
  info.loss = 0;
  for (double loss :
       backward_in_parallel(parts, [&](int64_t part) { return part_loss(part, parts); }))
    info.loss += loss;
  info.grad_norm = std::nan("");
  if (std::isfinite(info.loss)) {
    // With no clipping, a bound no finite norm exceeds: only the norm.
    info.grad_norm = nn::clip_grad_norm(optimizer.params(),
                                        clip > 0 ? clip : std::numeric_limits<double>::max());
  }
  info.skipped = !std::isfinite(info.loss) || !std::isfinite(info.grad_norm);
  if (info.skipped)
    optimizer.zero_grad();
  else
    optimizer.step();
  return info;
}

Evaluation evaluate(nn::Module& model, const Hooks& hooks, size_t n_metrics) {
  NoGradGuard no_grad;
  model.eval();
  Evaluation e = hooks.evaluate();
  model.train();
  if (e.metrics.size() != n_metrics)
    fail("run_training: evaluate gave ", e.metrics.size(), " values for ", n_metrics, " metrics");
  return e;
}

}  // namespace

Tensor part_rows(const Tensor& t, int64_t part, int64_t parts) {
  const PartRange r = part_range(t.shape()[0], part, parts);
  return t.narrow(0, r.begin, r.end - r.begin);
}

TrainResult run_training(nn::Module& model, nn::Optimizer& optimizer,
                         const nn::LrSchedule& schedule,
                         const std::vector<std::pair<std::string, Generator*>>& generators,
                         const LoopOptions& options, const Hooks& hooks) {
  std::ostream& err = options.err ? *options.err : std::cerr;
  const fs::path dir = options.out_dir;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    throw UsageError("--out " + dir.string() + ": cannot create the directory" +
                     (ec ? ": " + ec.message() : ""));
  const std::string ckpt = checkpoint_path(dir), log_path = (dir / "log.csv").string();

  TrainResult result;
  const bool resuming = !options.resume_dir.empty();
  if (resuming) {
    const std::string from = checkpoint_path(options.resume_dir);
    try {
      result.step = nn::load_checkpoint(from, model, optimizer, generators).step;
    } catch (const std::exception& e) {
      throw UsageError("--resume " + from + ": " + e.what());
    }
    err << "resuming from " << from << " at step " << result.step << "\n";
    carry_log((fs::path(options.resume_dir) / "log.csv").string(), log_path, result.step);
  }
  std::vector<std::string> columns = {"step", "loss", "lr", "grad_norm", "skipped"};
  columns.insert(columns.end(), options.metrics.begin(), options.metrics.end());
  cli::CsvLog log(log_path, columns,
                  resuming ? cli::CsvLog::Mode::kAppend : cli::CsvLog::Mode::kTruncate);
  if (result.step >= options.steps) {
    err << "already at step " << result.step << " of " << options.steps
        << "; nothing to do (raise --steps to continue)\n";
    return result;
  }
  auto save = [&] {
    nn::save_checkpoint(ckpt, model, optimizer, generators, result.step, options.metadata);
  };

  SigintGuard sigint;
  cli::Progress progress(options.steps, err, {.tty = options.tty, .start_step = result.step});
  std::string eval_text;  // the last evaluation, shown beside the loss
  model.train();
  while (result.step < options.steps) {
    const StepInfo info =
        take_step(optimizer, schedule, options.clip, options.parts, hooks, ++result.step);
    result.last_loss = info.loss;
    if (info.skipped) {
      ++result.skipped;
      progress.note("step " + std::to_string(info.step) + ": non-finite " +
                    (std::isfinite(info.loss) ? "gradient norm" : "loss") +
                    (options.stop_on_nan ? "; stopping (--stop-on-nan)" : "; update skipped"));
    }
    if (hooks.after_step) hooks.after_step(info);

    std::vector<cli::CsvCell> row = {info.step, info.loss, info.lr, info.grad_norm, info.skipped};
    const bool last = info.step == options.steps;
    if (hooks.evaluate &&
        (last || (options.eval_every > 0 && info.step % options.eval_every == 0))) {
      Evaluation e = evaluate(model, hooks, options.metrics.size());
      result.metrics = e.metrics;
      eval_text.clear();
      for (size_t i = 0; i < e.metrics.size(); ++i) {
        eval_text += "  " + options.metrics[i] + " " + fmt(e.metrics[i]);
        row.emplace_back(e.metrics[i]);
      }
      progress.note("step " + std::to_string(info.step) + eval_text);
      if (!e.text.empty()) progress.note(e.text);
    }
    row.resize(columns.size(), cli::CsvCell(""));
    log.row(row);
    progress.update(info.step, "loss " + fmt(info.loss) + eval_text);

    if (info.skipped && options.stop_on_nan) result.outcome = Outcome::kStoppedOnNan;
    if (g_interrupted) result.outcome = Outcome::kInterrupted;
    if (result.outcome != Outcome::kFinished) break;
    if (options.save_every > 0 && info.step % options.save_every == 0 && !last) save();
  }
  progress.finish();
  save();
  nn::save_weights((dir / "model.safetensors").string(), model, options.metadata);
  if (result.outcome == Outcome::kInterrupted)
    err << "interrupted at step " << result.step << "; checkpoint saved to " << ckpt
        << " (continue with --resume " << dir.string() << ")\n";
  if (result.outcome == Outcome::kStoppedOnNan)
    err << "stopped at step " << result.step << " on a non-finite value; checkpoint saved to "
        << ckpt << "\n";
  return result;
}

int exit_code(const TrainResult& result) {
  if (result.outcome == Outcome::kInterrupted) return 130;
  return result.outcome == Outcome::kFinished ? 0 : 1;
}

}  // namespace gradflow::examples
