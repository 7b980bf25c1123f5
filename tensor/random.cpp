#include "tensor/random.h"

#include <cmath>
#include <numbers>

#include "tensor/error.h"

namespace gradflow {

namespace {
uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
}  // namespace

void Generator::manual_seed(uint64_t seed) {
  for (uint64_t& word : s_) word = splitmix64(seed);
}

uint64_t Generator::next_u64() {
  uint64_t result = rotl(s_[1] * 5, 7) * 9;
  uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Generator::uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

int64_t Generator::below(uint64_t n) {
  if (n == 0) fail("Generator::below: empty range");
  // Rejection sampling keeps every value equally likely.
  uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do x = next_u64();
  while (x >= limit);
  return static_cast<int64_t>(x % n);
}

void Generator::normal_pair(double& a, double& b) {
  // Box-Muller; 1 - uniform() is in (0, 1], so the log is finite.
  double r = std::sqrt(-2.0 * std::log(1.0 - uniform()));
  double theta = 2.0 * std::numbers::pi * uniform();
  a = r * std::cos(theta);
  b = r * std::sin(theta);
}

Generator& default_generator() {
  static Generator generator(0);
  return generator;
}

}  // namespace gradflow
