// train_bench: the training-step benchmark of bench/WORKLOADS.md (the same
// workloads, model and step as the PyTorch peer bench/peer_torch.py), so the
// two can be run in turn and compared line for line:
//
//   OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=2 python3 bench/peer_torch.py gpt-small --threads 1
//
//   train_bench gpt-small --threads 2
//   workload=gpt-small params=3241568 steps_per_s=F tokens_per_s=F gflops=F peak_rss_mb=F
//   openblas=0.3.21 blas_core=Cooperlake cpu=avx512 kernels=4 gemm=blas  (same line)
//
// One step: zero_grad, forward, cross_entropy, backward, AdamW step, on fixed
// random token batches src, tgt (inputs) and y (targets), each (B, T). The
// first --warmup steps are not timed.
//
// study-reverse and study-recall are the training models of the scaling
// study's Part B (examples/study), built here from the same nn:: config: one
// head of size d_k (--head-dim) in a d_model 32 model, batches of 64 drawn
// once from the study's tasks (nn/data), PAD targets left out of the loss,
// the study's AdamW (betas 0.9/0.98, eps 1e-9, no weight decay) and its
// gradient clipping to norm 1.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "autograd/reference.h"
#include "autograd/variable.h"
#include "bench/workloads.h"
#include "examples/toolkit/cli/args.h"
#include "examples/toolkit/training/memory_estimate.h"
#include "nn/positional_schemes.h"
#include "nn/scale_modes.h"
#include "tensor/creation.h"
#include "tensor/kernels/blas_info.h"
#include "tensor/parallel.h"

namespace {

using namespace gradflow;
using bench::Workload;

double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024;  // Linux reports KiB
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The framework's cost per op: the same model with every width 1 and one
// sequence (the study's tasks keep their lengths and vocabularies), so that
// the kernels have next to nothing to do and a step is what it costs to
// record, run and free its ops. Returns (graph nodes per step, seconds per
// step); the node count is the real workload's too, as the graph's shape
// does not depend on the widths.
std::pair<double, double> tiny_step_cost(Workload w, int64_t warmup, int64_t steps) {
  w.d_model = w.heads = w.d_ff = w.batch = 1;
  w.head_dim = 1;
  Generator gen(0);
  bench::TrainingStep step = bench::make_training_step(w, 1, gen);
  for (int64_t i = 0; i < warmup; ++i) step.run();
  const uint64_t nodes_before = recorded_nodes();
  const auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < steps; ++i) step.run();
  const double seconds = seconds_since(start);
  return {static_cast<double>(recorded_nodes() - nodes_before) / static_cast<double>(steps),
          seconds / static_cast<double>(steps)};
}

int run(int argc, char** argv) {
  cli::ArgParser args("train_bench",
                      "Time training steps (forward, cross-entropy, backward, AdamW) of a "
                      "bench/WORKLOADS.md transformer and print one line of results. --kind and "
                      "the shape options override the workload's fields; the defaults shown are "
                      "gpt-small's.");
  std::string workload = "gpt-small";
  args.add_positional("WORKLOAD", &workload, "the workload to run")
      .choices({"seq2seq-tiny", "gpt-small", "study-reverse", "study-recall"})
      .metavar("WORKLOAD");
  // Registered with gpt-small's fields so --help shows them; an option not
  // given takes the chosen workload's value instead.
  Workload given = bench::named_workload("gpt-small");
  args.add_choice("--kind", &given.kind, {"encdec", "decoder", "encoder"}, "model kind");
  args.add("--d-model", &given.d_model, "model width C").min(1);
  args.add("--heads", &given.heads, "attention heads").min(1);
  args.add("--layers", &given.layers, "blocks per stack").min(1);
  args.add("--d-ff", &given.d_ff, "feed-forward width").min(1);
  args.add("--seq", &given.seq, "sequence length T, of source and target alike").min(1);
  args.add("--batch", &given.batch, "sequences per batch B").min(1);
  args.add("--vocab", &given.vocab, "vocabulary size V").min(2);
  args.add("--head-dim", &given.head_dim, "d_k of every head (0: d_model / heads)").min(0);
  args.add("--scale", &given.scale, "attention scale mode: " + nn::scale_mode_names())
      .metavar("MODE")
      .check([](const std::string& s) { nn::ScaleMode::parse(s); });
  args.add_choice("--positional", &given.positional, nn::positional_names(),
                  "positional scheme (nn/positional_schemes.h)");
  int64_t steps = 20, warmup = 3, seed = 0;
  args.add("--steps", &steps, "timed steps").min(1);
  args.add("--warmup", &warmup, "untimed steps first").min(0);
  args.add("--seed", &seed, "seed of the weights and the token batches").min(0);
  int threads = 2;
  args.add("--threads", &threads, "threads (gradflow's pool; OpenBLAS runs inside it)")
      .min(1)
      .max(256);
  std::string parallel = "batch";
  args.add_choice("--parallel", &parallel, {"batch", "ops"},
                  "how threads share a step: batch runs parts of the batch at once, one per "
                  "thread (autograd/data_parallel.h); ops cuts every kernel over the threads");
  bool reference = false;
  args.add_flag("--reference", &reference,
                "run every fused op as its composed reference (autograd/reference.h), to see "
                "what the fused kernels save");
  bool overhead = false;
  args.add_flag("--overhead", &overhead,
                "also print a second line: graph ops (nodes) per step, and the step time of "
                "the same model at width 1 and batch 1 per op, the framework's own cost");
  bool memory = false;
  args.add_flag("--memory", &memory,
                "also print, on stderr, the tensor memory (peak held at once, cached) and the "
                "estimate the run was checked against before it started");
  args.parse(argc, argv);

  Workload w = bench::named_workload(workload);
  const bool study = !w.task.empty();
  if (args.seen("--kind")) w.kind = given.kind;
  if (args.seen("--head-dim")) w.head_dim = given.head_dim;
  if (args.seen("--scale")) w.scale = given.scale;
  if (args.seen("--positional")) w.positional = given.positional;
  const std::pair<const char*, int64_t Workload::*> fields[] = {
      {"--d-model", &Workload::d_model}, {"--heads", &Workload::heads},
      {"--layers", &Workload::layers},   {"--d-ff", &Workload::d_ff},
      {"--seq", &Workload::seq},         {"--batch", &Workload::batch},
      {"--vocab", &Workload::vocab}};
  for (const auto& [name, field] : fields)
    if (args.seen(name)) w.*field = given.*field;
  // The study's batches come from its tasks, which fix the model kind, the
  // sequence length and the vocabulary.
  for (const char* fixed : {"--kind", "--seq", "--vocab"})
    if (study && args.seen(fixed))
      throw cli::UsageError(std::string(fixed) + " is set by " + workload + "'s task");

  set_num_threads(threads);
  set_reference_ops(reference);
  const nn::ModelConfig config = bench::model_config(w);
  config.validate();  // e.g. d_model not divisible by heads: one line, exit 2
  const training::MemoryEstimate estimate = training::estimate_training_memory(
      {.kind = w.kind == "encdec"    ? training::ModelKind::kEncoderDecoder
               : w.kind == "decoder" ? training::ModelKind::kDecoder
                                     : training::ModelKind::kEncoder,
       .config = config,
       .batch = w.batch,
       .src_len = w.seq,
       .tgt_len = w.seq,
       .reference = reference});
  training::check_memory(estimate, training::available_memory_bytes());
  note_generic_blas_core();  // checks passed: one line on stderr when OpenBLAS runs a generic core

  // With --parallel batch, one part of the batch per thread (as many as
  // there are rows).
  const int64_t parts = parallel == "batch" ? std::min<int64_t>(threads, w.batch) : 1;
  Generator gen(static_cast<uint64_t>(seed));
  bench::TrainingStep step = bench::make_training_step(w, parts, gen);
  double last_loss = 0;
  for (int64_t i = 0; i < warmup; ++i) step.run();
  const auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < steps; ++i) last_loss = step.run();
  const double seconds = seconds_since(start);
  if (!std::isfinite(last_loss)) fail("train_bench: the loss is ", last_loss);

  const double steps_per_s = static_cast<double>(steps) / seconds;
  const double tokens_per_s = steps_per_s * static_cast<double>(w.batch * w.seq);
  std::printf(
      "workload=%s params=%lld steps_per_s=%.2f tokens_per_s=%.0f gflops=%.1f "
      "peak_rss_mb=%.0f %s\n",
      workload.c_str(), static_cast<long long>(step.model->num_parameters()), steps_per_s,
      tokens_per_s, bench::step_flops(w) * steps_per_s / 1e9, peak_rss_mb(),
      blas_summary().c_str());
  if (overhead) {
    const auto [nodes, tiny_seconds] = tiny_step_cost(w, warmup, steps);
    const double step_seconds = seconds / static_cast<double>(steps);
    std::printf(
        "overhead ops_per_step=%.0f param_tensors=%zu tiny_step_us=%.1f us_per_op=%.2f "
        "share_of_step=%.2f\n",
        nodes, step.model->parameters().size(), tiny_seconds * 1e6, tiny_seconds * 1e6 / nodes,
        tiny_seconds / step_seconds);
  }
  if (memory) {
    const MemoryStats m = memory_stats();
    std::fprintf(
        stderr,
        "tensor memory: peak %.1f MB held at once, %.1f MB cached, %llu blocks from the system\n",
        static_cast<double>(m.peak_live_bytes) / 1e6, static_cast<double>(m.cached_bytes) / 1e6,
        static_cast<unsigned long long>(m.system_allocations));
    std::fprintf(
        stderr,
        "estimated before the run (examples/toolkit/training/memory_estimate.h): %.1f MB in all, "
        "%.1f MB of activations\n",
        estimate.total_bytes / 1e6, estimate.activation_bytes / 1e6);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return gradflow::cli::run_cli(argc, argv, run); }
