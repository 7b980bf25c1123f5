#include "nn/data/recall_task.h"

#include <numeric>
#include <vector>

#include "tensor/creation.h"
#include "tensor/error.h"

namespace gradflow::nn {

namespace {
constexpr int64_t kPad = 0, kSep = 1, kFirstKey = 3;
constexpr int64_t kMaxRecallLength = 4096;

void at_least_one(const char* field, int64_t v) {
  if (v < 1) fail("recall task: ", field, " = ", v, " must be at least 1");
}
}  // namespace

void validate_recall_task(const RecallTaskConfig& c) {
  at_least_one("n_keys", c.n_keys);
  at_least_one("n_values", c.n_values);
  at_least_one("pairs", c.pairs);
  at_least_one("queries", c.queries);
  if (c.pairs > c.n_keys)
    fail("recall task: pairs = ", c.pairs, " exceeds n_keys = ", c.n_keys,
         " (keys are distinct within an example)");
  if (c.queries > c.pairs)
    fail("recall task: queries = ", c.queries, " exceeds pairs = ", c.pairs,
         " (each query asks for a different key of the example)");
  if (c.n_keys > kMaxRecallLength || c.n_values > kMaxRecallLength ||
      2 * c.pairs + 2 * c.queries > kMaxRecallLength)
    fail("recall task: n_keys, n_values and the sequence (2 pairs + 2 queries = ",
         2 * c.pairs + 2 * c.queries, ") must be at most ", kMaxRecallLength);
  if (c.fused_pairs && c.n_keys * c.n_values > kMaxRecallLength * kMaxRecallLength / 16)
    fail("recall task: fused pairs need n_keys x n_values tokens (", c.n_keys * c.n_values,
         "), at most ", kMaxRecallLength * kMaxRecallLength / 16);
}

int64_t recall_vocab_size(const RecallTaskConfig& c) {
  validate_recall_task(c);
  return kFirstKey + c.n_keys + c.n_values + (c.fused_pairs ? c.n_keys * c.n_values : 0);
}

int64_t recall_seq_len(const RecallTaskConfig& c) {
  validate_recall_task(c);
  return (c.fused_pairs ? 1 : 2) * c.pairs + 2 * c.queries;
}

RecallBatch make_recall_batch(const RecallTaskConfig& c, int64_t batch, Generator& gen) {
  validate_recall_task(c);
  if (batch < 1) fail("make_recall_batch: batch = ", batch, " must be at least 1");
  const int64_t t = recall_seq_len(c), n = c.pairs;
  std::vector<int64_t> input(static_cast<size_t>(batch * t)), target(input.size(), kPad);
  std::vector<int64_t> keys(static_cast<size_t>(c.n_keys)), values(static_cast<size_t>(n)),
      order(static_cast<size_t>(n)), seq;
  for (int64_t b = 0; b < batch; ++b) {
    // The first N of a partial Fisher-Yates shuffle: N distinct keys.
    std::iota(keys.begin(), keys.end(), 0);
    for (int64_t i = 0; i < n; ++i)
      std::swap(keys[i], keys[i + gen.below(static_cast<uint64_t>(c.n_keys - i))]);
    for (int64_t& v : values) v = gen.below(static_cast<uint64_t>(c.n_values));
    // Which pairs are asked for, in which order: the first M of a shuffle.
    std::iota(order.begin(), order.end(), 0);
    for (int64_t i = 0; i < c.queries; ++i)
      std::swap(order[i], order[i + gen.below(static_cast<uint64_t>(n - i))]);
    seq.clear();
    for (int64_t i = 0; i < n; ++i) {
      if (c.fused_pairs) {
        seq.push_back(kFirstKey + c.n_keys + c.n_values + keys[i] * c.n_values + values[i]);
        continue;
      }
      seq.push_back(kFirstKey + keys[i]);
      seq.push_back(kFirstKey + c.n_keys + values[i]);
    }
    seq.push_back(kSep);
    for (int64_t j = 0; j < c.queries; ++j) {
      seq.push_back(kFirstKey + keys[order[j]]);
      seq.push_back(kFirstKey + c.n_keys + values[order[j]]);
    }
    // Shift for next-token prediction; score only the answers: a_j is
    // seq[P + 2 + 2j], predicted at input position P + 1 + 2j (its query),
    // P = 2N (fused: N) the pairs' tokens.
    const int64_t pair_tokens = (c.fused_pairs ? 1 : 2) * n;
    for (int64_t p = 0; p < t; ++p) input[b * t + p] = seq[p];
    for (int64_t j = 0; j < c.queries; ++j) {
      const int64_t answer = pair_tokens + 2 + 2 * j;
      target[b * t + answer - 1] = seq[answer];
    }
  }
  return {from_indices(input, {batch, t}), from_indices(target, {batch, t})};
}

}  // namespace gradflow::nn
