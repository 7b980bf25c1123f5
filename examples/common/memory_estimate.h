// How much memory a training run will take, estimated from its sizes before
// anything is allocated, so a configuration that cannot fit is refused in one
// line instead of growing until the machine swaps or the kernel kills it.
//
// The estimate, in bytes (P parameters; C d_model, A = heads x head_dim, F
// d_ff, V the head's outputs, L blocks per stack; N tokens through a stack,
// B x its sequence length):
//
//   parameters  counted as the models build them (equal to
//               Module::num_parameters, tested)
//   step        16 P          weights, gradients and AdamW's two moments
//             + 4 x floats    the activations alive at the backward's peak, per
//                             token: L (4 C + 4 A + F) kept by the blocks,
//                             2 F of one block's gradients, 1.5 C of
//                             embeddings and 2 V of logits and softmax; a
//                             decoder block's cross-attention adds 2 C + 3 A
//                             per target token and 2 A per source token
//   save        36 P          the step's 16 P, the optimizer state copied
//             + cached        (8 P) and the encoded file (12 P), beside the
//                             activations' blocks kept for reuse (up to 1 GiB)
//   total       max(step, save) + 96 MiB of program, threads and buffers
//
// The per-token coefficients were fitted to the peak tensor memory
// (memory_stats) of training steps of about fifteen shapes, which they exceed
// by 5 to 20%; tests/examples/memory_estimate_test.cpp keeps the total within
// [1x, 2x] of the peak resident memory the programs reach.
#pragma once

#include <cstdint>
#include <string>

#include "nn/models.h"

namespace gradflow::examples {

enum class ModelKind { kEncoderDecoder, kDecoder, kEncoder };

// The shapes of one training step.
struct TrainingShape {
  ModelKind kind = ModelKind::kDecoder;
  nn::ModelConfig config;
  int64_t batch = 1;
  int64_t src_len = 0;  // encoder positions (encoder-decoder, encoder)
  int64_t tgt_len = 0;  // decoder positions (encoder-decoder, decoder)
  int64_t classes = 0;  // encoder: the head's outputs (0: one logit per token over the vocab)
};

struct MemoryEstimate {
  double parameters = 0;  // a double: a hostile size need not fit in int64
  double weights_bytes = 0, optimizer_bytes = 0, activation_bytes = 0, total_bytes = 0;
};

double count_parameters(const TrainingShape& shape);
MemoryEstimate estimate_training_memory(const TrainingShape& shape);

// What the machine can give this process: MemAvailable from /proc/meminfo,
// or less when a cgroup (a container) limits the process's memory; 0 if
// neither can be read.
uint64_t available_memory_bytes();

// "1.5 GiB", "320 MiB", "3.2 TiB".
std::string format_bytes(double bytes);

// Throws UsageError when the estimate exceeds `available` (not checked when
// `available` is 0, unknown):
//   the model and batch need about 7.9 GiB (weights 1.2 GiB, gradients and
//   AdamW 3.6 GiB, activations 3.0 GiB), more than the 3.1 GiB available;
//   lower --batch, --d-model, --d-ff or --layers
void check_memory(const MemoryEstimate& estimate, uint64_t available);

}  // namespace gradflow::examples
