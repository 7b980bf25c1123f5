// How much memory a training run will take, estimated from its sizes before
// anything is allocated, so a configuration that cannot fit is refused in one
// line instead of growing until the machine swaps or the kernel kills it.
//
// The estimate, in bytes (P parameters; C d_model, A = heads x head_dim, F
// d_ff, V the head's outputs, L blocks per stack; N tokens through a stack,
// B x its sequence length):
//
//   parameters  summed from the tables' own counts, each part's from its
//               entry (norm_kinds.h, ffn_kinds.h, scale_modes.h,
//               positional_schemes.h); equal to Module::num_parameters for
//               every combination of entries, tested
//   step        16 P          weights, gradients and AdamW's two moments
//             + 4 x floats    the activations alive at the backward's peak, per
//                             token: L (4 C + 4 A + k F + 2 n C) kept by the
//                             blocks, k the (tokens, F) tensors the
//                             feed-forward keeps (the MLP 1, SwiGLU 4) and n
//                             those a norm keeps beyond its input (LayerNorm
//                             0, RMSNorm 1); 2 F of one block's gradients,
//                             1.5 C of embeddings and 2 V of logits and
//                             softmax; a decoder block's cross-attention adds
//                             2 C + 3 A + n C per target token and 2 A per
//                             source token
//             + 4 x scores    the composed attention's (B, H, T, S) tensors, when
//                             attention is composed (--scale learned,
//                             --reference, a variant that transforms the scores,
//                             a probe): per attention layer 2.25 of them kept for
//                             the backward (1.5 with --reference's one node, 3
//                             with a transform or probe), and 2 more of the
//                             largest layer's alive at once
//             + 4 x reference with --reference, L (6 C + F) more per token: the
//                             composed layer norms, GELU and cross-entropy
//   evaluation  16 P          the step's weights, gradients and moments, alive
//             + 4 x floats    a forward without gradients of eval_batch
//                             sequences: 1.125 a F + 5 C + 3 A + 2 V per token,
//                             a the (tokens, F) tensors the feed-forward has
//                             alive at once (the MLP 2, SwiGLU 4), and
//                             4 (B, H, T, S) tensors of the largest attention
//                             when it is composed
//   save        36 P          the step's 16 P, the optimizer state copied
//             + cached        (8 P) and the encoded file (12 P), beside the
//                             activations' blocks kept for reuse (up to 1 GiB)
//   page        20 P          the run's page (run_page.h) measures the gradient
//             + a step of one at the scores a sequence at a time with the probes on
//               sequence      (page_probes.h): the step's 16 P and a second set of
//                             gradients, beside the activations of a step of batch
//                             1 that keeps the attention weights; larger than the
//                             step only when the (H, T, S) scores dominate (a long
//                             context and a small batch)
//   total       max(step, evaluation, save, page) + 96 MiB of program, threads
//               and buffers (the page's text among them: a few MB)
//
// The per-token coefficients were fitted to the peak tensor memory
// (memory_stats) of training steps of about fifteen shapes, which they exceed
// by 5 to 20%; the attention, --reference and evaluation terms to the peak
// resident memory of charlm and classify runs whose memory those terms
// dominate. tests/examples/memory_estimate_test.cpp keeps the total within
// [1x, 2x] of the peak resident memory the programs reach, for every scale
// mode, norm, feed-forward, --reference and evaluation, and the tensor part
// within [1x, 2x] of a step's peak tensor memory with a variant that
// transforms the scores and for every norm and feed-forward. RMSNorm's and
// SwiGLU's columns were measured so: a step of C 256, F 1024, T 128, B 16
// keeps 2.9 F per token and layer more with SwiGLU than with the MLP
// (columns: 3) and 2 C more with RMSNorm (its two norms), and an evaluation
// has 2 F more alive at once with SwiGLU (columns: 2.25).
#pragma once

#include <cstdint>
#include <string>

#include "nn/models.h"

namespace gradflow::training {

enum class ModelKind { kEncoderDecoder, kDecoder, kEncoder };

// The shapes of one training step.
struct TrainingShape {
  ModelKind kind = ModelKind::kDecoder;
  nn::ModelConfig config = {};
  int64_t batch = 1;
  int64_t src_len = 0;     // encoder positions (encoder-decoder, encoder)
  int64_t tgt_len = 0;     // decoder positions (encoder-decoder, decoder)
  int64_t classes = 0;     // encoder: the head's outputs (0: one logit per token over the vocab)
  bool reference = false;  // --reference: every fused op runs as its composed reference
  // A probe or a variant that transforms the scores: attention is composed
  // (as it is for --positional alibi and --reference), keeping (B, H, T, S) tensors.
  bool keeps_attention_weights = false;
  int64_t eval_batch = 0;  // the most sequences evaluated at once, without gradients (0: none)
};

struct MemoryEstimate {
  double parameters = 0;  // a double: a hostile size need not fit in int64
  double weights_bytes = 0, optimizer_bytes = 0, activation_bytes = 0, total_bytes = 0;
  double eval_bytes = 0;    // an evaluation's activations
  double tensor_bytes = 0;  // total_bytes without its 96 MiB of program, threads and buffers
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

}  // namespace gradflow::training
