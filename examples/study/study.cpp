// What the study's parts share (study.h): the arms, the control's
// initialisation, the job runner, the attention metrics, the fast normal
// sampler and the verdict words.
#include <array>
#include <atomic>
#include <cmath>
#include <mutex>
#include <system_error>
#include <thread>

#include "autograd/ops.h"
#include "examples/study/study.h"
#include "examples/toolkit/cli/signals.h"
#include "tensor/ops.h"
#include "tensor/parallel.h"

namespace gradflow::study {

namespace {

// 128 layers of equal area under exp(-x^2 / 2) (the density without its
// constant), Marsaglia and Tsang's constants: the base layer's right edge
// r and the area v of each layer.
constexpr int kLayers = 128;
constexpr double kR = 3.442619855899, kArea = 9.91256303526217e-3;
constexpr double kScale = 2147483648.0;  // 2^31: samples start as signed 32-bit integers

struct Tables {
  std::array<uint32_t, kLayers> k;  // |j| < k[i]: inside layer i's rectangle, accept at once
  std::array<double, kLayers> w;    // x = j w[i]
  std::array<double, kLayers> f;    // the density at layer i's right edge
};

Tables make_tables() {
  Tables t{};
  double d = kR, previous = kR;
  const double q = kArea / std::exp(-0.5 * d * d);
  t.k[0] = static_cast<uint32_t>((d / q) * kScale);
  t.k[1] = 0;
  t.w[0] = q / kScale;
  t.w[kLayers - 1] = d / kScale;
  t.f[0] = 1.0;
  t.f[kLayers - 1] = std::exp(-0.5 * d * d);
  for (int i = kLayers - 2; i >= 1; --i) {
    d = std::sqrt(-2.0 * std::log(kArea / d + std::exp(-0.5 * d * d)));
    t.k[i + 1] = static_cast<uint32_t>((d / previous) * kScale);
    previous = d;
    t.f[i] = std::exp(-0.5 * d * d);
    t.w[i] = d / kScale;
  }
  return t;
}

const Tables& tables() {
  static const Tables t = make_tables();
  return t;
}

// xoshiro256** (as Generator's), here so the hot loop can inline it.
struct Bits {
  uint64_t s[4];
  explicit Bits(Generator& gen) {
    for (uint64_t& word : s) word = gen.next_u64();
  }
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t next() {
    const uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0], s[3] ^= s[1], s[1] ^= s[2], s[0] ^= s[3], s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
};

// The rare slow path: a sample outside its layer's rectangle, or in the tail.
double slow_sample(int64_t j, int layer, Bits& gen) {
  const Tables& t = tables();
  for (;;) {
    const double x = static_cast<double>(j) * t.w[layer];
    if (layer == 0) {  // the tail beyond r, by Marsaglia's exponential method
      double tail, y;
      do {
        tail = -std::log(1.0 - gen.uniform()) / kR;
        y = -std::log(1.0 - gen.uniform());
      } while (y + y < tail * tail);
      return j > 0 ? kR + tail : -kR - tail;
    }
    if (t.f[layer] + gen.uniform() * (t.f[layer - 1] - t.f[layer]) < std::exp(-0.5 * x * x))
      return x;
    const uint64_t bits = gen.next();
    layer = static_cast<int>(bits & (kLayers - 1));
    j = static_cast<int32_t>(bits >> 32);
    if (static_cast<uint64_t>(j < 0 ? -j : j) < t.k[layer])
      return static_cast<double>(j) * t.w[layer];
  }
}

}  // namespace

Interrupted::Interrupted(int signal, std::string part, size_t done, size_t count)
    : signal_(signal),
      message_(cli::signal_name(signal) + " in " + part + " (" + std::to_string(done) + " of " +
               std::to_string(count) + " done)") {}

void check_stop() {
  if (cli::stop_signal() != 0) throw Error("stopped by a signal");
}

void run_jobs(const std::string& part, size_t count, int threads,
              const std::function<void(size_t)>& job, const ProgressFn& progress) {
  std::atomic<size_t> next{0};
  std::mutex lock;
  std::string error;
  size_t done = 0, completed = 0;        // jobs ended; jobs ended without an error
  const bool flush = flush_denormals();  // the jobs take the caller's mode
  auto worker = [&] {
    set_flush_denormals(flush);
    for (size_t i; cli::stop_signal() == 0 && (i = next++) < count;) {
      bool ok = true;
      try {
        job(i);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> guard(lock);
        if (error.empty()) error = e.what();
        ok = false;
      }
      std::lock_guard<std::mutex> guard(lock);
      completed += ok;
      if (progress) progress(++done, count);
    }
  };
  if (progress) progress(0, count);  // the start: a display can start its clock
  std::vector<std::thread> pool;
  try {
    for (int t = 0; t < std::max(1, threads); ++t) pool.emplace_back(worker);
  } catch (const std::system_error&) {
    // The system would start no more threads (a process limit): the jobs run
    // on those that did start, or on this one. (Leaving the vector holding a
    // joinable thread would abort the program.)
    if (pool.empty()) worker();
  }
  for (std::thread& t : pool) t.join();
  // A job that saw the signal ended early and threw: not its error.
  if (const int signal = cli::stop_signal(); signal != 0)
    throw Interrupted(signal, part, completed, count);
  if (!error.empty()) throw Error("scaling_study: " + part + " failed: " + error);
}

double softmax_jacobian_norm(const double* p, int64_t n) {
  double s2 = 0, s3 = 0;
  for (int64_t j = 0; j < n; ++j) {
    s2 += p[j] * p[j];
    s3 += p[j] * p[j] * p[j];
  }
  return std::sqrt(std::max(0.0, s2 - 2 * s3 + s2 * s2));
}

double sample_variance(const Tensor& t) {
  std::vector<double> v = t.to_vector();
  if (v.size() < 2) return 0;
  double mean = 0;
  for (double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return ss / static_cast<double>(v.size() - 1);
}

double visible_std(const Tensor& values, const Tensor& mask) {
  std::vector<double> v = values.to_vector();
  std::vector<double> m =
      mask.defined() ? mask.expand(values.shape()).to_vector() : std::vector<double>(v.size(), 0.0);
  double sum = 0, n = 0;
  for (size_t i = 0; i < v.size(); ++i)
    if (m[i] == 0) sum += v[i], ++n;
  if (n < 2) return 0;
  const double mean = sum / n;
  double ss = 0;
  for (size_t i = 0; i < v.size(); ++i)
    if (m[i] == 0) ss += (v[i] - mean) * (v[i] - mean);
  return std::sqrt(ss / (n - 1));
}

AttentionStats attention_stats(const Tensor& weights, const Tensor& logits, const Tensor& mask) {
  if (weights.shape() != logits.shape() || weights.ndim() < 2)
    fail("attention_stats: weights ", shape_str(weights.shape()), " and logits ",
         shape_str(logits.shape()), " must be (..., T, S) alike");
  const int64_t s = weights.shape().back();
  const int64_t rows = weights.numel() / std::max<int64_t>(s, 1);
  std::vector<double> w = weights.to_vector(), l = logits.to_vector();
  std::vector<double> m = mask.defined() ? mask.expand(weights.shape()).to_vector()
                                         : std::vector<double>(w.size(), 0.0);
  AttentionStats out;
  std::vector<double> p;
  for (int64_t r = 0; r < rows; ++r) {
    p.clear();
    for (int64_t j = 0; j < s; ++j) {
      size_t i = static_cast<size_t>(r * s + j);
      if (m[i] != 0) continue;
      p.push_back(w[i]);
      out.max_logit = std::max(out.max_logit, std::abs(l[i]));
    }
    if (p.size() < 2) continue;  // one visible key: no choice to measure
    double h = 0;
    for (double x : p)
      if (x > 0) h -= x * std::log(x);
    out.entropy_norm += h / std::log(static_cast<double>(p.size()));
    out.max_weight += *std::max_element(p.begin(), p.end());
    out.jacobian_norm += softmax_jacobian_norm(p.data(), static_cast<int64_t>(p.size()));
    ++out.rows;
  }
  if (out.rows > 0) {
    double n = static_cast<double>(out.rows);
    out.entropy_norm /= n;
    out.max_weight /= n;
    out.jacobian_norm /= n;
  }
  return out;
}

double grad_norm(const Variable& w) {
  return w.grad().defined() ? std::sqrt(sum(mul(w.grad(), w.grad())).item()) : 0.0;
}

void fill_normal(std::span<float> out, Generator& gen) {
  const Tables& t = tables();
  Bits bits_of(gen);
  for (float& value : out) {
    const uint64_t bits = bits_of.next();
    const int layer = static_cast<int>(bits & (kLayers - 1));
    const int64_t j = static_cast<int32_t>(bits >> 32);  // sign and magnitude
    const uint64_t magnitude = static_cast<uint64_t>(j < 0 ? -j : j);
    value = static_cast<float>(magnitude < t.k[layer] ? static_cast<double>(j) * t.w[layer]
                                                      : slow_sample(j, layer, bits_of));
  }
}

std::string verdict_of(int passed, int parts) {
  return passed == parts ? "holds" : passed == 0 ? "does not hold" : "partly holds";
}

const char* yes_no(bool b) { return b ? "yes" : "no"; }

bool has_interval(const Interval& i) {
  return i.n >= 2 && std::isfinite(i.lo) && std::isfinite(i.hi);
}

}  // namespace gradflow::study
