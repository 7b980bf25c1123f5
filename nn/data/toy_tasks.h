// Seeded seq2seq toy tasks for training and testing encoder-decoder transformers: copy, reverse,
// sort and multi-digit addition. Each task is small enough to learn in minutes on a CPU, and its
// answer is checkable by hand, so a wrong mask or an off-by-one in teacher forcing shows at once.
//
// Token ids (the same for every task):
//   PAD = 0, BOS = 1, EOS = 2.
//   copy / reverse / sort: symbol s in [0, n_symbols) is id 3 + s.  vocab_size = 3 + n_symbols.
//   addition: digit d in [0, 9] is id 3 + d, '+' is id 13.          vocab_size = 14.
//
// One example, with L content tokens in the source and M in the target:
//   src     = c_1 ... c_L EOS PAD ... PAD    (length S)
//   tgt_in  = BOS t_1 ... t_M PAD ... PAD    (length T, the decoder's input: teacher forcing)
//   tgt_out = t_1 ... t_M EOS PAD ... PAD    (length T, what the decoder must predict)
// so tgt_in[i + 1] == tgt_out[i] for i < M, and positions where tgt_out is PAD carry no loss.
//
// Tasks, with L drawn uniformly from [min_len, max_len] per example and symbols uniform:
//   copy:     target = source.                       S = T = max_len + 1
//   reverse:  target = source reversed.              S = T = max_len + 1
//   sort:     target = source in ascending order.    S = T = max_len + 1
//   addition: source = "a+b", each operand with a digit count drawn uniformly from
//             [1, max_digits] and no leading zero; target = the digits of a + b, most significant
//             first.                                 S = 2 * max_digits + 2, T = max_digits + 2
// S and T depend only on the config, so batches of one config always stack.
//
// Dimension letters: B = examples per batch, S = source length, T = target length.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tensor/random.h"
#include "tensor/tensor.h"

namespace gradflow::nn {

inline constexpr int64_t kPadToken = 0;
inline constexpr int64_t kBosToken = 1;
inline constexpr int64_t kEosToken = 2;
inline constexpr int64_t kFirstContentToken = 3;  // symbol 0, or digit 0 for addition
inline constexpr int64_t kPlusToken = 13;         // addition only

// The longest max_len or max_digits accepted, so a typo cannot ask for gigabyte batches.
inline constexpr int64_t kMaxToyLength = 4096;

struct ToyTaskConfig {
  std::string task;        // "copy", "reverse", "sort" or "addition"
  int64_t n_symbols = 10;  // copy, reverse, sort
  int64_t min_len = 1;     // copy, reverse, sort
  int64_t max_len = 8;     // copy, reverse, sort
  int64_t max_digits = 3;  // addition
};

struct Seq2SeqBatch {
  Tensor src;      // (B, S) int64: content tokens then EOS, PAD-padded to S
  Tensor tgt_in;   // (B, T) int64: BOS + target, PAD-padded (decoder input, teacher forcing)
  Tensor tgt_out;  // (B, T) int64: target + EOS, PAD-padded (what the decoder must predict)
  Tensor src_pad;  // (B, S) float32 1 where src is PAD, else 0 (key-padding mask)
};

// Throws Error with a one-line message for an unknown task or a field the task uses that is out
// of range: n_symbols < 1, min_len < 1, min_len > max_len, max_digits < 1, or a length above
// kMaxToyLength. Fields a task does not use are not checked. Every function below calls it.
void validate_toy_task(const ToyTaskConfig& config);

int64_t vocab_size(const ToyTaskConfig& config);
int64_t src_len(const ToyTaskConfig& config);  // S
int64_t tgt_len(const ToyTaskConfig& config);  // T

// `batch` fresh examples drawn from `gen`. REQUIRES: batch >= 1 (else Error).
Seq2SeqBatch make_batch(const ToyTaskConfig& config, int64_t batch, Generator& gen);

// A fixed held-out set of n_batches batches of `batch` examples: the same for the same arguments.
// It draws from its own Generator, seeded from `seed` mixed with a constant, so it neither
// advances the training generator nor replays the training stream even when both use the same
// seed. Examples are not deduplicated against training: in small tasks (copy of length 1 has only
// n_symbols examples) the same example may appear in both by chance, as it would in any random
// split. REQUIRES: n_batches >= 0, batch >= 1.
std::vector<Seq2SeqBatch> make_eval_set(const ToyTaskConfig& config, int64_t n_batches,
                                        int64_t batch, uint64_t seed);

// Readable text of token ids: symbols as decimal numbers separated by spaces ("3 1 4"), addition
// as digits and '+' without spaces ("12+345"); PAD, BOS and EOS print as <pad>, <bos>, <eos>.
// Throws Error for an id outside [0, vocab_size).
std::string tokens_to_string(const ToyTaskConfig& config, std::span<const int64_t> ids);

// The content of row `row` of a (B, L) int64 tensor (src, tgt_in, tgt_out or a model's output):
// the ids after an optional leading BOS, up to but excluding the first EOS or PAD.
std::vector<int64_t> row_content(const Tensor& ids, int64_t row);

// "3 1 4 -> 4 1 3", or "12+345=357" for addition, from source and target content ids.
std::string format_example(const ToyTaskConfig& config, std::span<const int64_t> src,
                           std::span<const int64_t> tgt);

// format_example for row `row` of a batch (its src and tgt_out).
std::string example_to_string(const ToyTaskConfig& config, const Seq2SeqBatch& batch, int64_t row);

}  // namespace gradflow::nn
