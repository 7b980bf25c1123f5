#include "examples/study/normal_sampler.h"

#include <array>
#include <cmath>

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

}  // namespace gradflow::study
