// Fast N(0, 1) samples for Part A's many random draws.
//
// Why not randn: Part A draws about a billion normal numbers (256 draws of
// up to 512 keys of up to 1024 dimensions, for every mode and size), and
// randn's Box-Muller (a log, a sqrt and a sincos per pair) spends about 19 ns
// on each. The ziggurat method (Marsaglia and Tsang 2000) needs one random
// word, a table lookup and a comparison for 99% of its samples: about 2 ns.
// Unlike their original code, the layer index and the sample's bits come
// from different bits of a 64-bit word, so they are independent.
#pragma once

#include <cstdint>
#include <span>

#include "tensor/random.h"

namespace gradflow::study {

// Fills `out` with independent N(0, 1) samples from a stream seeded by four
// words of `gen` (so one call advances `gen` by four words, whatever its size).
void fill_normal(std::span<float> out, Generator& gen);

}  // namespace gradflow::study
