#include "examples/toolkit/training/training.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "autograd/data_parallel.h"
#include "examples/toolkit/cli/csv_log.h"
#include "examples/toolkit/cli/progress.h"
#include "examples/toolkit/cli/signals.h"
#include "examples/toolkit/training/address_space.h"
#include "examples/toolkit/training/run_page.h"
#include "examples/toolkit/training/step_graph.h"
#include "nn/io/atomic_file.h"
#include "nn/optim/training_step.h"

namespace gradflow::training {
namespace {

namespace fs = std::filesystem;
using cli::UsageError;

std::string fmt(double v) {
  if (std::isnan(v)) return "nan";  // printf may say "-nan"
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// The header and the rows of the log at `path` up to `step`: rows a crash
// left after the checkpoint would otherwise repeat, and a torn last row (no
// newline) is dropped.
std::string rows_up_to(const std::string& path, int64_t step) {
  std::istringstream in(read_file(path, uint64_t{1} << 30));
  std::string line, kept;
  if (!std::getline(in, line)) return kept;
  kept = line + '\n';
  while (std::getline(in, line))
    if (!in.eof() && std::strtoll(line.c_str(), nullptr, 10) <= step) kept += line + '\n';
  return kept;
}

std::string value_or(const nn::Metadata& metadata, const std::string& key) {
  for (const auto& [k, v] : metadata)
    if (k == key) return v;
  return "";
}

// The resumed run's log up to the checkpoint's step becomes `to` (the same
// file when resuming in place), once it is known to be the checkpoint's own.
void carry_log(const std::string& resume_dir, const std::string& to, int64_t step,
               const nn::Metadata& checkpoint, std::ostream& err) {
  const std::string from = (fs::path(resume_dir) / "log.csv").string();
  // Only a log that is not there is missing: a FIFO (which opening would
  // block on), a folder or a dangling symlink in its place is refused, not
  // replaced. symlink_status and require_regular_file's stat open nothing.
  std::error_code ec;
  const bool absent = fs::symlink_status(from, ec).type() == fs::file_type::not_found;
  if (!absent) {
    try {
      cli::require_regular_file(from);
    } catch (const std::exception& e) {
      throw UsageError("--resume " + cli::quote(resume_dir) + ": " + e.what() +
                       "; move it away to continue with a new log");
    }
  }
  if (absent || fs::file_size(from, ec) == 0) {
    err << "warning: " << cli::quote(from) << " is missing: a new log starts at step " << step + 1
        << " (the rows of steps 1 to " << step << " are lost)\n";
    std::error_code ignored;
    fs::remove(to, ignored);  // resuming into another folder: no stale log there either
    return;
  }
  const std::string kept = rows_up_to(from, step);
  const std::string saved = value_or(checkpoint, "log_digest");
  if (!saved.empty() && saved != cli::digest_hex(cli::log_digest(kept)))
    throw UsageError("--resume " + cli::quote(resume_dir) + ": log.csv does not belong with " +
                     "checkpoint.safetensors: its rows up to step " + std::to_string(step) +
                     " are not the ones saved with the checkpoint (another run's log, or an " +
                     "edited one); move log.csv away to continue with a new log");
  write_file_atomic(to, kept);
}

}  // namespace

training::RunLock prepare_run(const CommonFlags& flags, const TrainingShape& shape) {
  TrainingShape checked = shape;
  checked.reference = flags.reference;
  const MemoryEstimate estimate = estimate_training_memory(checked);
  check_memory(estimate, available_memory_bytes());
  check_address_space(flags.threads, estimate.tensor_bytes, address_space_limit(),
                      address_space_in_use());
  // Where the pictures go, before --out is claimed: nothing there is lost to them.
  check_graph_request({.path = flags.graph, .step = flags.graph_step}, flags.steps,
                      flags.attention_maps);
  return training::claim_run_dir(flags.out, flags.resume, flags.overwrite, std::cerr);
}

LoopOptions loop_options(const CommonFlags& f) {
  // Dropout draws from one generator, which parts run at once cannot share
  // (nn/dropout.h): then the batch is one part, and --threads cuts its
  // kernels instead.
  const int64_t parts =
      f.model.dropout > 0 ? 1 : std::clamp<int64_t>(f.threads, 1, std::max<int64_t>(f.batch, 1));
  return {.out_dir = f.out,
          .steps = f.steps,
          .eval_every = f.eval_every,
          .save_every = f.save_every,
          .clip = f.clip,
          .parts = parts,
          .stop_on_nan = f.stop_on_nan,
          .max_skipped_steps = f.max_skipped_steps,
          .threads = f.threads,
          .resume_dir = f.resume,
          .graph = {.path = f.graph, .step = f.graph_step, .depth = f.graph_depth}};
}

namespace {

// One update: forward and backward of the batch's parts, then nn::training_step (lr from the
// schedule, clip, the non-finite policy, the optimizer's step).
// `page`, if any, reads the gradients before the update (run_page.h).
StepInfo take_step(nn::Optimizer& optimizer, const nn::LrSchedule& schedule,
                   const nn::StepOptions& step_options, int64_t parts, const Hooks& hooks,
                   int64_t step, RunPage* page) {
  optimizer.zero_grad();
  const PartLoss part_loss = hooks.batch();
  // Parts whose loss is not finite are not backpropagated; then the step is
  // skipped and the others' gradients are dropped.
  StepInfo info{.step = step, .loss = 0};
  for (double loss :
       backward_in_parallel(parts, [&](int64_t part) { return part_loss(part, parts); }))
    info.loss += loss;
  if (page) page->after_backward();
  const nn::StepReport report = nn::training_step(optimizer, schedule, info.loss, step_options);
  info.lr = report.lr;
  info.grad_norm = report.grad_norm;
  info.skipped = !report.updated;
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
    throw UsageError("--out " + cli::quote(dir.string()) + ": cannot create the directory" +
                     (ec ? ": " + ec.message() : ""));
  const std::string ckpt = checkpoint_path(dir), log_path = (dir / "log.csv").string();
  check_graph_request(options.graph, options.steps);

  TrainResult result;
  const bool resuming = !options.resume_dir.empty();
  if (resuming) {
    const std::string from = checkpoint_path(options.resume_dir);
    nn::CheckpointContents loaded;
    try {
      loaded = nn::load_checkpoint(from, model, optimizer, generators);
    } catch (const std::exception& e) {
      throw UsageError("--resume " + cli::quote(from) + ": " + e.what());
    }
    result.step = loaded.step;
    err << "resuming from " << cli::quote(from) << " at step " << result.step << "\n";
    const std::string threads = value_or(loaded.metadata, "threads");
    if (!threads.empty() && threads != std::to_string(options.threads))
      err << "warning: --threads " << options.threads << " differs from the checkpoint's "
          << threads << ": the run continues, but not bitwise as it would with " << threads
          << " (see docs/reliability.md)\n";
    carry_log(options.resume_dir, log_path, result.step, loaded.metadata, err);
  }
  std::vector<std::string> columns = {"step", "loss", "lr", "grad_norm", "skipped"};
  columns.insert(columns.end(), options.metrics.begin(), options.metrics.end());
  cli::CsvLog log(log_path, columns,
                  resuming ? cli::CsvLog::Mode::kAppend : cli::CsvLog::Mode::kTruncate);
  result.written.push_back("log.csv");
  for (const std::string& note : options.notes) err << note << "\n";
  nn::Metadata metadata = options.metadata;
  metadata.emplace_back("threads", std::to_string(options.threads));
  // The step of the checkpoint on disk in `dir`, if any.
  const bool in_place = resuming && fs::equivalent(options.resume_dir, dir, ec);
  int64_t saved_step = in_place ? result.step : -1;
  const std::string model_path = (dir / "model.safetensors").string();
  auto save_model = [&] {
    nn::save_weights(model_path, model, options.metadata);
    result.written.push_back("model.safetensors");
  };
  std::optional<RunPage> page;
  if (options.page.write) {
    page.emplace(options, model, result.step);
    if (page->logs_gradients()) result.written.push_back("attention_grads.csv");
    page->write(result.step, result.step >= options.steps ? "Finished" : "Running",
                result.step < options.steps);
  }
  if (result.step >= options.steps) {
    err << "already at step " << result.step << " of " << options.steps
        << "; nothing to do (raise --steps to continue)\n";
    // Still what was asked: --out holds the whole run, and a model file a
    // crash or a user removed is rebuilt from the checkpoint. (A loaded
    // state is finite: load_checkpoint checked it.)
    if (!in_place) {
      nn::Metadata m = metadata;
      m.emplace_back("log_digest", cli::digest_hex(log.digest()));
      nn::save_checkpoint(ckpt, model, optimizer, generators, result.step, m);
      result.written.push_back("checkpoint.safetensors");
    }
    if (!in_place || !fs::exists(model_path, ec)) save_model();
    if (page) result.written.push_back("index.html");  // last: the file to open
    return result;
  }
  cli::Progress progress(options.steps, err, {.tty = options.tty, .start_step = result.step});
  // A state with a NaN or an infinity is not saved (nothing could resume
  // from it): the file on disk stays the last good one.
  auto save = [&]() -> bool {
    nn::Metadata m = metadata;
    m.emplace_back("log_digest", cli::digest_hex(log.digest()));
    try {
      nn::save_checkpoint(ckpt, model, optimizer, generators, result.step, m);
    } catch (const nn::NonFiniteStateError& e) {
      progress.note(std::string(e.what()) + "; " +
                    (saved_step >= 0 ? ckpt + " keeps step " + std::to_string(saved_step)
                                     : "no checkpoint was saved"));
      return false;
    }
    saved_step = result.step;
    if (std::find(result.written.begin(), result.written.end(), "checkpoint.safetensors") ==
        result.written.end())
      result.written.push_back("checkpoint.safetensors");
    return true;
  };

  // A non-finite loss or gradient norm skips the update; --stop-on-nan also ends the run.
  const nn::StepOptions step_options{.clip = options.clip,
                                     .non_finite = options.stop_on_nan
                                                       ? nn::NonFinitePolicy::kSkipAndStop
                                                       : nn::NonFinitePolicy::kSkip};
  cli::StopSignals stop_signals;
  std::string eval_text;  // the last evaluation, shown beside the loss
  int64_t skipped_in_a_row = 0, session_steps = 0;
  model.train();
  if (!options.graph.path.empty() && options.graph.step <= result.step)
    progress.note("warning: --graph-step " + std::to_string(options.graph.step) +
                  " was trained before this session: no graph drawn");
  while (result.step < options.steps) {
    if (!options.graph.path.empty() && options.graph.step == result.step + 1)
      progress.note(draw_step_graph(
          options.graph, model, generators, hooks,
          value_or(options.metadata, "program") + ": the graph of training step " +
              std::to_string(options.graph.step) + ", edges labelled with the gradient's norm"));
    const StepInfo info = take_step(optimizer, schedule, step_options, options.parts, hooks,
                                    ++result.step, page ? &*page : nullptr);
    ++session_steps;
    result.last_loss = info.loss;
    skipped_in_a_row = info.skipped ? skipped_in_a_row + 1 : 0;
    if (info.skipped) {
      ++result.skipped;
      progress.note("step " + std::to_string(info.step) + ": non-finite " +
                    (std::isfinite(info.loss) ? "gradient norm" : "loss") +
                    (options.stop_on_nan ? "; stopping (--stop-on-nan)" : "; update skipped"));
    }
    if (hooks.after_step) hooks.after_step(info);

    std::vector<cli::CsvCell> row = {info.step, info.loss, info.lr, info.grad_norm, info.skipped};
    const bool last = info.step == options.steps;
    const bool evaluating =
        hooks.evaluate && (last || (options.eval_every > 0 && info.step % options.eval_every == 0));
    if (evaluating) {
      Evaluation e = evaluate(model, hooks, options.metrics.size());
      result.metrics = e.metrics;
      eval_text.clear();
      for (size_t i = 0; i < e.metrics.size(); ++i) {
        eval_text += "  " + options.metrics[i] + " " + fmt(e.metrics[i]);
        row.emplace_back(e.metrics[i]);
      }
      progress.note("step " + std::to_string(info.step) + eval_text);
      if (!e.text.empty()) progress.note(e.text);
      if (page) page->after_evaluation(info.step, generators, hooks);
    }
    row.resize(columns.size(), cli::CsvCell(""));
    log.row(row);
    if (page) page->log_row(info.step);
    if (page && evaluating && !last) page->write(info.step, "Running", true);
    progress.update(info.step, "loss " + fmt(info.loss) + eval_text);

    if (info.skipped && options.stop_on_nan) result.outcome = Outcome::kStoppedOnNan;
    const bool all_skipped = last && skipped_in_a_row == session_steps;
    if (options.max_skipped_steps > 0 &&
        (skipped_in_a_row >= options.max_skipped_steps || all_skipped) &&
        result.outcome == Outcome::kFinished)
      result.outcome = Outcome::kTooManySkipped;
    if (const int signal = cli::stop_signal(); signal != 0) {
      result.outcome = Outcome::kInterrupted;
      result.signal = signal;
    }
    if (result.outcome != Outcome::kFinished) break;
    if (options.save_every > 0 && info.step % options.save_every == 0 && !last) save();
  }
  if (result.outcome == Outcome::kFinished)
    progress.finish();
  else  // "done 315/1500" would read as a finished run
    progress.stop(result.outcome == Outcome::kInterrupted ? "interrupted" : "stopped");
  const bool saved = save();
  if (saved) save_model();
  // A stop signal that came during the final save: the run is saved, but it
  // was asked to stop, which exit 0 would hide.
  if (const int signal = cli::stop_signal(); signal != 0 && result.outcome == Outcome::kFinished) {
    result.outcome = Outcome::kInterrupted;
    result.signal = signal;
  }
  if (!saved && result.outcome == Outcome::kFinished) result.outcome = Outcome::kNotSaved;
  if (page) {
    page->write(result.step, outcome_text(result), false);
    result.written.push_back("index.html");  // last: the file to open
  }
  const std::string where =
      saved             ? "checkpoint saved to " + cli::shell_word(ckpt)
      : saved_step >= 0 ? cli::shell_word(ckpt) + " is step " + std::to_string(saved_step) + "'s"
                        : "no checkpoint saved";
  const std::string program = value_or(options.metadata, "program");
  const std::string resume_command =
      (program.empty() ? "" : program + " ") + "--resume " + cli::shell_word(dir.string());
  if (result.outcome == Outcome::kInterrupted)
    err << "interrupted at step " << result.step << " (" << cli::signal_name(result.signal) << "); "
        << where << (saved_step >= 0 ? "; continue with: " + resume_command : "") << "\n";
  if (result.outcome == Outcome::kNotSaved)
    err << "finished step " << result.step << ", but its state is not finite, so it was not saved; "
        << where << "; " << wrote_line(dir.string(), result.written) << "\n";
  if (result.outcome == Outcome::kStoppedOnNan)
    err << "stopped at step " << result.step << " on a non-finite value; " << where << "\n";
  if (result.outcome == Outcome::kTooManySkipped)
    err << "stopped at step " << result.step << ": "
        << (skipped_in_a_row == session_steps
                ? "every one of this run's " + std::to_string(session_steps) + " steps was"
                : "the last " + std::to_string(skipped_in_a_row) + " steps were")
        << " skipped for non-finite values (--max-skipped-steps " << options.max_skipped_steps
        << "; try a lower --lr or another --scale); " << where << "\n";
  return result;
}

std::string wrote_line(const std::string& dir, const std::vector<std::string>& files) {
  std::string line = "wrote";
  for (const std::string& f : files) line += " " + cli::shell_word((fs::path(dir) / f).string());
  return line;
}

std::string outcome_text(const TrainResult& result) {
  switch (result.outcome) {
    case Outcome::kFinished:
      return "Finished";
    case Outcome::kInterrupted:
      return "Interrupted (" + cli::signal_name(result.signal) + ")";
    case Outcome::kStoppedOnNan:
      return "Stopped on a non-finite value";
    case Outcome::kTooManySkipped:
      return "Stopped: too many steps skipped for non-finite values";
    case Outcome::kNotSaved:
      return "Finished, but its final state is not finite and was not saved";
  }
  return "Stopped";
}

int exit_code(const TrainResult& result) {
  switch (result.outcome) {
    case Outcome::kFinished:
      return 0;
    case Outcome::kInterrupted:
      return cli::exit_code_for_signal(result.signal);
    case Outcome::kStoppedOnNan:
    case Outcome::kNotSaved:
      return kExitStoppedOnNan;
    case Outcome::kTooManySkipped:
      return cli::kExitUsage;
  }
  return cli::kExitUsage;
}

}  // namespace gradflow::training
