#include "examples/toolkit/training/memory_estimate.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "examples/toolkit/cli/args.h"
#include "nn/ffn_kinds.h"
#include "nn/norm_kinds.h"
#include "nn/positional_schemes.h"

namespace gradflow::training {
namespace {

// Floats per token (fitted to the peak tensor memory of training steps; see
// the header): kept for the backward by each block; the backward's
// gradients of one block's feed-forward, which are alive at the peak; the
// embeddings; the logits and their softmax. kBlockF is per (tokens, F)
// tensor the feed-forward keeps (ffn_kinds.h: the MLP 1, SwiGLU 4); a
// norm's own kept tensors (norm_kinds.h: RMSNorm 1) add to kBlockC.
constexpr double kBlockC = 4, kBlockA = 4, kBlockF = 1;  // self-attention and feed-forward
constexpr double kCrossC = 2, kCrossA = 3;               // cross-attention, per target token
constexpr double kCrossKV = 2;                           // its keys and values, per source token
constexpr double kBackwardF = 2, kEmbedC = 1.5, kHeadV = 2;
// The composed attention (see the header): (B, H, T, S) tensors kept per
// layer for the backward, with a score transform (scores, transformed
// scores and weights) or with --reference (its one node keeps fewer); and those alive at once in
// the largest layer's backward, or in its forward without gradients (scores, logits, masked,
// weights).
constexpr double kScoresKeptReference = 1.5, kScoresKeptTransformed = 3;
constexpr double kScoresAtOnce = 2;
constexpr double kEvalScoresAtOnce = 4;
// --reference's other composed ops, per token and block.
constexpr double kReferenceC = 6, kReferenceF = 1;
// A forward without gradients, per token: the feed-forward's hidden
// tensors alive at once (kEvalF per one: the MLP's 2, before and after its
// activation, SwiGLU's 4), the residual stream and attention's projections,
// and the logits with their softmax.
constexpr double kEvalF = 1.125, kEvalC = 5, kEvalA = 3, kEvalV = 2;
constexpr double kFloat = 4;                    // bytes: the models train in float32
constexpr double kCachedCap = double(1 << 30);  // tensor/storage.cpp's kMaxCachedBytes
constexpr double kBaseline = 96.0 * (1 << 20);  // program, threads, OpenBLAS buffers

struct Sizes {
  double v, c, a, f, layers, d_k, max_len;
};

Sizes sizes_of(const nn::ModelConfig& c) {
  const double d_k = c.head_dim > 0 ? double(c.head_dim) : double(c.d_model) / double(c.heads);
  return {double(c.vocab),  double(c.d_model), double(c.heads) * d_k,
          double(c.d_ff),   double(c.layers),  d_k,
          double(c.max_len)};
}

// nn/attention.cpp: q, k, v (C -> A with bias), o (A -> C with bias), and
// the scale mode's own (scale_modes.h: a scalar, one per head, or qk_norm's
// LayerNorms).
double attention_parameters(const nn::ModelConfig& config, const Sizes& s) {
  return 4 * s.c * s.a + 3 * s.a + s.c +
         double(config.scale.parameters(config.heads, static_cast<int64_t>(s.d_k)));
}

// The elements of the (B, H, T, S) score tensors of a batch of `b`
// sequences: of every attention layer together, and of the largest one.
struct Attention {
  double all = 0, largest = 0;
};

Attention attention_scores(const TrainingShape& shape, double b) {
  const double h = double(shape.config.heads), layers = double(shape.config.layers);
  const double src = double(shape.src_len), tgt = double(shape.tgt_len);
  switch (shape.kind) {
    case ModelKind::kEncoderDecoder:  // encoder self, decoder self and cross
      return {layers * b * h * (src * src + tgt * tgt + tgt * src),
              b * h * std::max({src * src, tgt * tgt, tgt * src})};
    case ModelKind::kDecoder:
      return {layers * b * h * tgt * tgt, b * h * tgt * tgt};
    case ModelKind::kEncoder:
      return {layers * b * h * src * src, b * h * src * src};
  }
  return {};
}

}  // namespace

double count_parameters(const TrainingShape& shape) {
  const nn::ModelConfig& config = shape.config;
  const Sizes s = sizes_of(config);
  // Each part's count is its table's (norm_kinds.h, ffn_kinds.h,
  // positional_schemes.h, scale_modes.h through attention_parameters), so a
  // new entry brings its own; tested against the models built.
  const double attention = attention_parameters(config, s);
  const double norm = nn::norm_kind(config.norm_type).parameters(s.c);
  const double ff = nn::ffn_kind(config.ffn).parameters(s.c, s.f);
  const auto table = nn::positional_scheme(config.positional).parameters;
  const double block = attention + ff + 2 * norm;       // nn/transformer.cpp
  const double cross_block = block + attention + norm;  // a decoder block with cross-attention
  double p = s.v * s.c + (table ? table(s.max_len, s.c) : 0) + norm;
  switch (shape.kind) {
    case ModelKind::kEncoderDecoder:
      p += s.layers * (block + cross_block) + s.c * s.v + s.v;
      break;
    case ModelKind::kDecoder:
      p += s.layers * block + s.c * s.v + s.v;
      break;
    case ModelKind::kEncoder: {
      const double out = shape.classes > 0 ? double(shape.classes) : s.v;
      p += s.layers * block + s.c * out + out;
      break;
    }
  }
  return p;
}

MemoryEstimate estimate_training_memory(const TrainingShape& shape) {
  const Sizes s = sizes_of(shape.config);
  const double b = double(shape.batch), src = b * double(shape.src_len),
               tgt = b * double(shape.tgt_len);
  const nn::NormKind& norm = nn::norm_kind(shape.config.norm_type);
  const nn::FfnKind& ffn = nn::ffn_kind(shape.config.ffn);
  // A block's two norms, and a cross-attention's third.
  const double block =
      kBlockC * s.c + kBlockA * s.a + kBlockF * ffn.kept * s.f + 2 * norm.kept * s.c;
  const double cross = kCrossC * s.c + kCrossA * s.a + norm.kept * s.c;
  double floats = 0;  // activations alive at the backward's peak
  switch (shape.kind) {
    case ModelKind::kEncoderDecoder:
      floats = s.layers * (src * (block + kCrossKV * s.a) + tgt * (block + cross)) +
               std::max(src, tgt) * kBackwardF * s.f + (src + tgt) * kEmbedC * s.c +
               tgt * kHeadV * s.v;
      break;
    case ModelKind::kDecoder:
      floats = tgt * (s.layers * block + kBackwardF * s.f + kEmbedC * s.c + kHeadV * s.v);
      break;
    case ModelKind::kEncoder: {
      const double head = shape.classes > 0 ? b * double(shape.classes) : src * s.v;
      floats = src * (s.layers * block + kBackwardF * s.f + kEmbedC * s.c) + kHeadV * head;
      break;
    }
  }
  const bool transformed = shape.keeps_attention_weights ||
                           nn::positional_scheme(shape.config.positional).transforms_scores ||
                           shape.config.scale.entry().transforms_scores;
  const bool composed = shape.reference || transformed;
  const Attention scores = attention_scores(shape, b);
  if (composed) {
    // A transform's output is one more tensor a layer keeps; --reference's
    // single node keeps fewer.
    const double kept = transformed ? kScoresKeptTransformed : kScoresKeptReference;
    floats += kept * scores.all + kScoresAtOnce * scores.largest;
  }
  if (shape.reference) floats += (src + tgt) * s.layers * (kReferenceC * s.c + kReferenceF * s.f);

  MemoryEstimate e;
  e.parameters = count_parameters(shape);
  e.weights_bytes = kFloat * e.parameters;
  e.optimizer_bytes = 3 * kFloat * e.parameters;  // gradients and AdamW's two moments
  e.activation_bytes = kFloat * floats;
  if (shape.eval_batch > 0) {
    const double eb = double(shape.eval_batch);
    const double tokens = eb * double(std::max(shape.src_len, shape.tgt_len));
    const double head = shape.kind == ModelKind::kEncoder && shape.classes > 0
                            ? eb * double(shape.classes)
                            : tokens * s.v;
    double eval = tokens * (kEvalF * ffn.alive * s.f + kEvalC * s.c + kEvalA * s.a) + kEvalV * head;
    if (composed) eval += kEvalScoresAtOnce * attention_scores(shape, eb).largest;
    e.eval_bytes = kFloat * eval;
  }
  const double state = e.weights_bytes + e.optimizer_bytes;
  const double step = state + e.activation_bytes;
  const double save = 9 * kFloat * e.parameters + std::min(e.activation_bytes, kCachedCap);
  // The run's page: a step of one sequence with the probes on, beside a second set of
  // gradients (a shape of one sequence that keeps the weights is its own page: no recursion).
  double page = 0;
  if (shape.batch != 1 || !shape.keeps_attention_weights) {
    TrainingShape one = shape;
    one.batch = 1;
    one.keeps_attention_weights = true;
    one.eval_batch = 0;
    page = state + kFloat * e.parameters + estimate_training_memory(one).activation_bytes;
  }
  e.tensor_bytes = std::max({step, state + e.eval_bytes, save, page});
  e.total_bytes = e.tensor_bytes + kBaseline;
  return e;
}

namespace {

double read_number(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text == "max") return -1;  // unreadable, or no limit
  return std::strtod(text.c_str(), nullptr);
}

// The value of `key` in a cgroup's memory.stat, or 0.
double stat_value(const std::string& dir, const std::string& key) {
  std::ifstream in(dir + "/memory.stat");
  std::string k;
  double v = 0;
  while (in >> k >> v)
    if (k == key) return v;
  return 0;
}

// What a cgroup with a memory limit leaves: the limit less its working set
// (usage less inactive file pages, which the kernel reclaims first, as
// docker and the kubelet count it). A negative value: no limit there.
double room_in(const std::string& dir, const char* limit_file, const char* usage_file,
               const char* inactive_key) {
  const double limit = read_number(dir + "/" + limit_file);
  const double usage = read_number(dir + "/" + usage_file);
  if (limit < 0 || usage < 0 || limit >= double(uint64_t{1} << 60)) return -1;
  return std::max(0.0, limit - std::max(0.0, usage - stat_value(dir, inactive_key)));
}

}  // namespace

uint64_t available_memory_bytes() {
  double available = -1;
  auto take = [&available](double room) {
    if (room >= 0) available = available < 0 ? room : std::min(available, room);
  };
  std::ifstream meminfo("/proc/meminfo");
  for (std::string line; std::getline(meminfo, line);)
    if (line.rfind("MemAvailable:", 0) == 0)
      take(1024 * std::strtod(line.c_str() + 13, nullptr));  // "MemAvailable: 123456 kB"
  // The process's cgroups: v2 ("0::/path", limits on it and its parents) and
  // v1 ("4:memory:/path"; in a container its own group is the mount's root).
  std::ifstream cgroup("/proc/self/cgroup");
  for (std::string line; std::getline(cgroup, line);) {
    if (line.rfind("0::", 0) == 0) {
      for (std::string group = line.substr(3);;) {
        take(room_in("/sys/fs/cgroup" + (group == "/" ? std::string() : group), "memory.max",
                     "memory.current", "inactive_file"));
        const size_t slash = group.find_last_of('/');
        if (group.empty() || group == "/" || slash == std::string::npos) break;
        group = slash == 0 ? "/" : group.substr(0, slash);
      }
    } else if (const size_t at = line.find(":memory:"); at != std::string::npos) {
      for (const std::string& dir :
           {"/sys/fs/cgroup/memory" + line.substr(at + 8), std::string("/sys/fs/cgroup/memory")})
        take(room_in(dir, "memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file"));
    }
  }
  return available < 0 ? 0 : static_cast<uint64_t>(available);
}

std::string format_bytes(double bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 6) bytes /= 1024, ++unit;
  char buf[64];
  if (unit == 6 && bytes >= 1024)
    std::snprintf(buf, sizeof buf, "%.2g EiB", bytes);
  else
    std::snprintf(buf, sizeof buf, bytes < 10 && unit > 0 ? "%.1f %s" : "%.0f %s", bytes,
                  units[unit]);
  return buf;
}

void check_memory(const MemoryEstimate& e, uint64_t available) {
  if (available == 0 || e.total_bytes <= double(available)) return;
  throw cli::UsageError(
      "the model and batch need about " + format_bytes(e.total_bytes) + " (weights " +
      format_bytes(e.weights_bytes) + ", gradients and AdamW " + format_bytes(e.optimizer_bytes) +
      ", activations " + format_bytes(e.activation_bytes) +
      (e.eval_bytes > e.activation_bytes
           ? ", an evaluation's activations " + format_bytes(e.eval_bytes)
           : std::string()) +
      "), more than the " + format_bytes(double(available)) +
      " available; lower --batch, --d-model, --d-ff, --layers or the sequence length" +
      (e.eval_bytes > e.activation_bytes ? " (or the evaluation's size)" : std::string()));
}

}  // namespace gradflow::training
