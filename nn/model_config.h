// What defines a model but its weights, and the table of its fields.
//
// Each field is declared twice only in the C++ sense: once in the struct,
// once as a row of model_fields(). Everything else that needs "every field"
// reads the table: validation here, and in the programs the command-line
// flags with their help (--d-model for d_model), the checkpoint metadata
// (config.d_model) and its round trip (nn/io/model_file.h). A new
// option is a member and a row, and the row says what a checkpoint written
// before the option existed meant (`absent`).
//
// The choices among layers are tables of their own, read by the rows:
// scale (scale_modes.h), positional (positional_schemes.h), norm_type
// (norm_kinds.h) and ffn (ffn_kinds.h).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "nn/scale_modes.h"
#include "nn/transformer.h"

namespace gradflow::nn {

struct ModelConfig {
  int64_t vocab = 16;
  int64_t d_model = 64, heads = 4, layers = 2, d_ff = 256;
  int64_t max_len = 64;  // longest sequence (rows of the position table)
  ScaleMode scale = {};  // 1/sqrt(d_k)
  int64_t head_dim = 0;  // 0: d_model / heads; else d_k of every attention layer
  NormPlacement norm = NormPlacement::Pre;
  std::string norm_type = "layernorm";  // a norm, a row of norm_kinds() (norm_kinds.h)
  std::string ffn = "mlp";              // a feed-forward (ffn_kinds.h): "mlp" or "swiglu"
  std::string activation = "gelu";      // the mlp's: or "relu"
  // A positional scheme (positional_schemes.h): "learned" (a table),
  // "sinusoidal" (fixed, no parameters), "rope" (q and k turned in every
  // self-attention layer; d_k even) or "alibi" (a distance bias on its logits).
  std::string positional = "learned";
  double dropout = 0;

  // The block every layer of every stack is built from (cross-attention is
  // set by the model that has it).
  BlockConfig block() const;
  int64_t d_k() const { return head_dim ? head_dim : d_model / heads; }
  // Every field's own check, then those across fields (d_model a multiple of
  // heads, the positional scheme's needs, an activation only for the mlp).
  // Throws a one-line Error naming the bad field.
  void validate() const;
};

// ModelField::absent of a field every checkpoint has written.
inline constexpr const char* kRefuseIfAbsent = nullptr;

// One field: the member it is, under its metadata name ("d_model"; its flag
// is --d-model), what it means, what its absence from an older checkpoint
// means, and its own check.
struct ModelField {
  using Member =
      std::variant<int64_t ModelConfig::*, double ModelConfig::*, std::string ModelConfig::*,
                   ScaleMode ModelConfig::*, NormPlacement ModelConfig::*>;
  const char* name;
  Member member;
  const char* help;
  // A checkpoint written before the field existed: the value it was built
  // with then, as text ("0" for head_dim), which a resume assumes; or
  // kRefuseIfAbsent, for a field every checkpoint has written, so one without
  // it is damaged and refused.
  const char* absent;
  // Set from the data a program trains on (vocab, max_len), not by a flag.
  bool from_data = false;
  // The names a text field may take, or nullptr: any (a scale takes const:<v>).
  std::vector<std::string> (*choices)() = nullptr;
  // Throws an Error with just the problem ("must be positive, got 0").
  void (*check)(const ModelConfig&) = nullptr;
};

// In metadata order.
std::span<const ModelField> model_fields();

}  // namespace gradflow::nn
