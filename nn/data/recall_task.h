// Multi-query associative recall, a decoder-only toy task that needs sharp,
// content-based attention (as in Zoology's MQAR, Arora et al. 2023): a
// sequence lists key-value pairs, then asks for the values of some of its
// keys. No fixed offset finds the answer: the model must match the query
// against every key it has seen and copy the token after the match, which
// takes two attention layers (one to attach each key to its value, one to
// look the query up: an induction circuit, Olsson et al. 2022).
//
// Token ids:
//   PAD = 0 (never scored), SEP = 1 (between the pairs and the queries),
//   2 unused (so ids line up with nn/data/toy_tasks.h's PAD, BOS, EOS),
//   key k in [0, n_keys) is id 3 + k, value v in [0, n_values) is id
//   3 + n_keys + v.  vocab_size = 3 + n_keys + n_values.
//
// One example, with N = pairs and M = queries:
//   sequence = k_1 v_1 ... k_N v_N SEP q_1 a_1 ... q_M a_M
// keys distinct within an example, values drawn with repetition, queries
// distinct keys of the example in random order, a_i the value of q_i. The
// model reads sequence[0 .. L - 2] and predicts sequence[1 .. L - 1]; only
// the answers a_i are scored (every other target is PAD). L = 2N + 1 + 2M.
//
// With fused_pairs each pair is one token instead of two, id
// 3 + n_keys + n_values + k n_values + v, so the sequence is
//   sequence = p_1 ... p_N SEP q_1 a_1 ... q_M a_M,   L = N + 1 + 2M,
// and one attention layer can answer: the query matches the one pair token
// with its key and reads the value from it (a single sharp lookup, no
// induction circuit). vocab_size = 3 + n_keys + n_values + n_keys n_values.
//
// Dimension letters: B = examples per batch, T = L - 1 positions.
#pragma once

#include <cstdint>

#include "tensor/random.h"
#include "tensor/tensor.h"

namespace gradflow::nn {

struct RecallTaskConfig {
  int64_t n_keys = 32;       // keys to draw from
  int64_t n_values = 32;     // values to draw from
  int64_t pairs = 8;         // N, key-value pairs per example (at most n_keys)
  int64_t queries = 4;       // M, keys asked for per example (at most pairs)
  bool fused_pairs = false;  // each pair one token: a single lookup answers
};

struct RecallBatch {
  Tensor input;   // (B, T) int64: the sequence without its last token
  Tensor target;  // (B, T) int64: the answers where they are due, PAD elsewhere
};

// Throws Error with a one-line message naming the field: n_keys, n_values,
// pairs or queries below 1, pairs > n_keys, queries > pairs, or a sequence
// longer than 4096. Every function below calls it.
void validate_recall_task(const RecallTaskConfig& config);

int64_t recall_vocab_size(const RecallTaskConfig& config);
int64_t recall_seq_len(const RecallTaskConfig& config);  // T = 2N + 2M (fused: N + 2M)

// `batch` fresh examples drawn from `gen`. REQUIRES: batch >= 1 (else Error).
RecallBatch make_recall_batch(const RecallTaskConfig& config, int64_t batch, Generator& gen);

}  // namespace gradflow::nn
