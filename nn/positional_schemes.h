// The positional schemes, as one table: how a model tells positions apart.
// A scheme is either a table the embeddings add to the tokens (learned or
// fixed sinusoids, nn/positional.h) or an AttentionVariant every
// self-attention layer adds (rope, alibi), or neither. Model building,
// validation, the flags' choices, the metadata and the memory estimate read
// the table, so a new scheme is one entry here and its variant's file.
//
//   learned      a table of max_len rows added to the embeddings
//   sinusoidal   fixed sinusoids added to the embeddings (no parameters)
//   rope         q and k turned by their positions (rope.h); d_k even
//   alibi        a bias of -m_h |i - j| on the logits, m_h a fixed slope per
//                head (alibi.cpp, Press et al. 2022)
//   none         nothing: without a causal mask, permuting the tokens then
//                permutes the outputs, so an encoder cannot tell "a b" from
//                "b a" (a baseline; docs/lessons/12_position.md)
//
// Cross-attention takes no scheme's variant: its queries and keys are
// positions of two different sequences, so their distance means nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nn/attention_variant.h"

namespace gradflow::nn {

struct PositionalContext {
  int64_t d_k = 0, heads = 1;
};

struct PositionalScheme {
  enum class Table { None, Learned, Sinusoidal };
  const char* name;
  const char* summary;  // one line, for --help and docs
  Table table = Table::None;
  // The variant each self-attention layer adds, as the child named after
  // the scheme; null if none.
  std::shared_ptr<AttentionVariant> (*variant)(const PositionalContext&) = nullptr;
  // Throws Error (one line) if the scheme cannot serve this layer shape.
  void (*check)(const PositionalContext&) = nullptr;
  // Its variant changes the logits, so the layer leaves the fused kernel and
  // keeps the (B, H, T, S) weights for the backward (the memory estimate).
  bool transforms_scores = false;
  // The parameters of its embeddings' table (max_len x d_model for learned);
  // null if none. For the memory estimate (tested against the models
  // built), in a double: a hostile size's count need not fit in int64.
  double (*parameters)(double max_len, double d_model) = nullptr;
};

const std::vector<PositionalScheme>& positional_schemes();
// The scheme called `name`; throws Error listing the names if none is.
const PositionalScheme& positional_scheme(const std::string& name);
std::vector<std::string> positional_names();

// The variants, each defined in its own file.
std::shared_ptr<AttentionVariant> make_rope(const PositionalContext& context);   // rope.cpp
std::shared_ptr<AttentionVariant> make_alibi(const PositionalContext& context);  // alibi.cpp

}  // namespace gradflow::nn
