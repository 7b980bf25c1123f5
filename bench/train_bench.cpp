// train_bench: the training-step benchmark of bench/WORKLOADS.md (the same
// workloads, model and step as the PyTorch peer bench/peer_torch.py), so the
// two can be run in turn and compared line for line:
//
//   OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=2 python3 bench/peer_torch.py gpt-small --threads 1
//
//   train_bench gpt-small --threads 2
//   workload=gpt-small params=3241568 steps_per_s=F tokens_per_s=F gflops=F peak_rss_mb=F
//
// One step: zero_grad, forward, cross_entropy, backward, AdamW step, on fixed
// random token batches src, tgt (inputs) and y (targets), each (B, T). The
// first --warmup steps are not timed.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "autograd/data_parallel.h"
#include "autograd/ops.h"
#include "autograd/reference.h"
#include "examples/common/args.h"
#include "examples/common/memory_estimate.h"
#include "nn/loss.h"
#include "nn/models.h"
#include "nn/optim/optim.h"
#include "tensor/creation.h"
#include "tensor/parallel.h"

namespace {

using namespace gradflow;

// B batch, T seq (source and target alike), C d_model, F d_ff, L layers per
// stack, V vocab: the fields of a WORKLOADS.md row.
struct Workload {
  std::string kind;  // "encdec", "decoder" or "encoder"
  int64_t d_model, heads, layers, d_ff, seq, batch, vocab;
};

Workload named_workload(const std::string& name) {
  if (name == "seq2seq-tiny") return {"encdec", 64, 4, 2, 256, 16, 64, 16};
  return {"decoder", 256, 8, 4, 1024, 128, 16, 96};  // gpt-small
}

// Model FLOPs of one training step, WORKLOADS.md's formula (forward plus a
// backward of twice its cost, matrix products only):
//   6 x (weights of every Linear) x (tokens passing through it)
//     Linear weights: per block Q, K, V, O (4 C^2) and the two feed-forward
//     matrices (2 C F); a decoder block of an encoder-decoder adds the
//     cross-attention's Q, K, V, O (4 C^2); the head is C V. Biases,
//     embeddings and LayerNorms are not counted. Encoder blocks see the
//     source's B T tokens, decoder blocks and the head the target's.
//   + 12 x L x T_keys x C x (B T_queries) per attention stack, for the two
//     attention products (Q K^T and weights V, 2 T_q T_k C each forward per
//     sequence), causal masking not discounted; cross-attention counts the
//     same with the source length as T_keys.
// The source and the target both have T = seq positions here.
double step_flops(const Workload& w) {
  const double C = static_cast<double>(w.d_model), F = static_cast<double>(w.d_ff);
  const double L = static_cast<double>(w.layers), T = static_cast<double>(w.seq);
  const double V = static_cast<double>(w.vocab), tokens = static_cast<double>(w.batch) * T;
  const double block = 4 * C * C + 2 * C * F, cross = 4 * C * C;
  const double attention = 12 * L * T * C * tokens;
  double linear_weights = 0, attention_stacks = 0;
  if (w.kind == "encdec") {
    linear_weights = L * block + L * (block + cross) + C * V;
    attention_stacks = 3;  // encoder self, decoder self, decoder cross
  } else {
    linear_weights = L * block + C * V;
    attention_stacks = 1;
  }
  return 6 * linear_weights * tokens + attention_stacks * attention;
}

double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024;  // Linux reports KiB
}

int run(int argc, char** argv) {
  cli::ArgParser args("train_bench",
                      "Time training steps (forward, cross-entropy, backward, AdamW) of a "
                      "bench/WORKLOADS.md transformer and print one line of results. --kind and "
                      "the shape options override the workload's fields; the defaults shown are "
                      "gpt-small's.");
  std::string workload = "gpt-small";
  args.add_positional("WORKLOAD", &workload, "the workload to run")
      .choices({"seq2seq-tiny", "gpt-small"})
      .metavar("WORKLOAD");
  // Registered with gpt-small's fields so --help shows them; an option not
  // given takes the chosen workload's value instead.
  Workload given = named_workload("gpt-small");
  args.add_choice("--kind", &given.kind, {"encdec", "decoder", "encoder"}, "model kind");
  args.add("--d-model", &given.d_model, "model width C").min(1);
  args.add("--heads", &given.heads, "attention heads").min(1);
  args.add("--layers", &given.layers, "blocks per stack").min(1);
  args.add("--d-ff", &given.d_ff, "feed-forward width").min(1);
  args.add("--seq", &given.seq, "sequence length T, of source and target alike").min(1);
  args.add("--batch", &given.batch, "sequences per batch B").min(1);
  args.add("--vocab", &given.vocab, "vocabulary size V").min(2);
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
  bool memory = false;
  args.add_flag("--memory", &memory,
                "also print, on stderr, the tensor memory (peak held at once, cached) and the "
                "estimate the run was checked against before it started");
  args.parse(argc, argv);

  Workload w = named_workload(workload);
  if (args.seen("--kind")) w.kind = given.kind;
  const std::pair<const char*, int64_t Workload::*> fields[] = {
      {"--d-model", &Workload::d_model}, {"--heads", &Workload::heads},
      {"--layers", &Workload::layers},   {"--d-ff", &Workload::d_ff},
      {"--seq", &Workload::seq},         {"--batch", &Workload::batch},
      {"--vocab", &Workload::vocab}};
  for (const auto& [name, field] : fields)
    if (args.seen(name)) w.*field = given.*field;

  set_num_threads(threads);
  set_reference_ops(reference);
  nn::ModelConfig config;
  config.vocab = w.vocab;
  config.d_model = w.d_model;
  config.heads = w.heads;
  config.layers = w.layers;
  config.d_ff = w.d_ff;
  config.max_len = w.seq;
  config.validate();  // e.g. d_model not divisible by heads: one line, exit 2
  const examples::MemoryEstimate estimate = examples::estimate_training_memory(
      {.kind = w.kind == "encdec"    ? examples::ModelKind::kEncoderDecoder
               : w.kind == "decoder" ? examples::ModelKind::kDecoder
                                     : examples::ModelKind::kEncoder,
       .config = config,
       .batch = w.batch,
       .src_len = w.seq,
       .tgt_len = w.seq,
       .reference = reference});
  examples::check_memory(estimate, examples::available_memory_bytes());

  Generator gen(static_cast<uint64_t>(seed));
  // The model, and its forward on the (src, tgt) batch as the peer calls it:
  // encoder-decoder reads both, the decoder-only model tgt, the encoder src.
  std::shared_ptr<nn::Module> model;
  std::function<Variable(const Tensor&, const Tensor&)> forward;
  if (w.kind == "encdec") {
    auto m = std::make_shared<nn::EncoderDecoder>(config, gen);
    forward = [m](const Tensor& src, const Tensor& tgt) { return m->forward(src, tgt); };
    model = m;
  } else if (w.kind == "decoder") {
    auto m = std::make_shared<nn::DecoderLM>(config, gen);
    forward = [m](const Tensor&, const Tensor& tgt) { return m->forward(tgt); };
    model = m;
  } else {
    auto m = std::make_shared<nn::EncoderClassifier>(/*classes=*/0, config, gen);
    forward = [m](const Tensor& src, const Tensor&) { return m->forward(src); };
    model = m;
  }
  nn::AdamW opt(model->parameters(), 1e-3, 0.9, 0.999, 1e-8, 0.01);

  // Shapes: src, tgt, y are (B, T) int64 in [0, V).
  const Tensor src = randint(0, w.vocab, {w.batch, w.seq}, gen);
  const Tensor tgt = randint(0, w.vocab, {w.batch, w.seq}, gen);
  const Tensor y = randint(0, w.vocab, {w.batch, w.seq}, gen);
  double last_loss = 0;
  // With --parallel batch, one part of the batch per thread (as many as
  // there are rows), each part's mean loss weighted by its share of the rows
  // so that the parts' losses and gradients add up to the whole batch's.
  const int64_t parts = parallel == "batch" ? std::min<int64_t>(threads, w.batch) : 1;
  auto part_loss = [&](int64_t part) {
    const PartRange r = part_range(w.batch, part, parts);
    auto rows = [&](const Tensor& t) { return t.narrow(0, r.begin, r.end - r.begin); };
    Variable loss = nn::cross_entropy(forward(rows(src), rows(tgt)), rows(y));
    return parts == 1 ? loss : loss * (static_cast<double>(r.end - r.begin) / w.batch);
  };
  auto step = [&] {
    // zero_grad first, as a training loop usually goes: the last step's
    // gradients are then not held through this step's forward.
    opt.zero_grad();
    last_loss = 0;
    for (double loss : backward_in_parallel(parts, part_loss)) last_loss += loss;
    opt.step();
  };

  for (int64_t i = 0; i < warmup; ++i) step();
  const auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < steps; ++i) step();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!std::isfinite(last_loss)) fail("train_bench: the loss is ", last_loss);

  const double steps_per_s = static_cast<double>(steps) / seconds;
  const double tokens_per_s = steps_per_s * static_cast<double>(w.batch * w.seq);
  std::printf(
      "workload=%s params=%lld steps_per_s=%.2f tokens_per_s=%.0f gflops=%.1f "
      "peak_rss_mb=%.0f\n",
      workload.c_str(), static_cast<long long>(model->num_parameters()), steps_per_s, tokens_per_s,
      step_flops(w) * steps_per_s / 1e9, peak_rss_mb());
  if (memory) {
    const MemoryStats m = memory_stats();
    std::fprintf(
        stderr,
        "tensor memory: peak %.1f MB held at once, %.1f MB cached, %llu blocks from the system\n",
        static_cast<double>(m.peak_live_bytes) / 1e6, static_cast<double>(m.cached_bytes) / 1e6,
        static_cast<unsigned long long>(m.system_allocations));
    std::fprintf(stderr,
                 "estimated before the run (examples/common/memory_estimate.h): %.1f MB in all, "
                 "%.1f MB of activations\n",
                 estimate.total_bytes / 1e6, estimate.activation_bytes / 1e6);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return gradflow::cli::run_cli(argc, argv, run); }
