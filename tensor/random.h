// A small, seedable random generator (xoshiro256**, seeded by splitmix64).
//
// Numbers are drawn one after another in row-major order, never split across
// threads, so the same seed gives the same tensor on any thread count. The
// whole state is four words, so a training checkpoint can save and restore it.
#pragma once

#include <array>
#include <cstdint>

namespace gradflow {

class Generator {
 public:
  explicit Generator(uint64_t seed = 0) { manual_seed(seed); }
  void manual_seed(uint64_t seed);

  uint64_t next_u64();
  double uniform();                        // [0, 1), 53 random bits
  int64_t below(uint64_t n);               // uniform integer in [0, n), unbiased
  void normal_pair(double& a, double& b);  // two independent N(0, 1) draws

  std::array<uint64_t, 4> state() const { return s_; }
  void set_state(const std::array<uint64_t, 4>& s) { s_ = s; }

 private:
  std::array<uint64_t, 4> s_;
};

// The generator used when none is passed.
Generator& default_generator();
inline void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

}  // namespace gradflow
