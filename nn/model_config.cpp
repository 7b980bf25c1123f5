#include "nn/model_config.h"

#include "nn/positional_schemes.h"

#include <algorithm>

namespace gradflow::nn {

BlockConfig ModelConfig::block() const {
  return {.d_model = d_model,
          .d_ff = d_ff,
          .attention = {.heads = heads,
                        .head_dim = head_dim,
                        .scale = scale,
                        .positional = positional,
                        .max_len = max_len},
          .norm = norm,
          .activation = activation,
          .dropout = dropout};
}

namespace {

// A size: at least 1 (head_dim: at least 0, where 0 means d_model / heads).
template <int64_t ModelConfig::*M, int64_t Min = 1>
void at_least(const ModelConfig& c) {
  if (c.*M < Min) fail("must be ", Min == 1 ? "positive" : ">= 0", ", got ", c.*M);
}

std::vector<std::string> activations() { return {"gelu", "relu"}; }
std::vector<std::string> norm_placements() { return {"pre", "post"}; }

void check_activation(const ModelConfig& c) {
  const std::vector<std::string> names = activations();
  if (std::find(names.begin(), names.end(), c.activation) == names.end())
    fail("must be gelu or relu, got '", c.activation, "'");
}

void check_positional(const ModelConfig& c) {
  const std::vector<std::string> names = positional_names();
  if (std::find(names.begin(), names.end(), c.positional) != names.end()) return;
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
  fail("unknown '", c.positional, "' (expected one of ", list, ")");
}

void check_dropout(const ModelConfig& c) {
  if (!(c.dropout >= 0 && c.dropout < 1)) fail("must be in [0, 1), got ", c.dropout);
}

using C = ModelConfig;
const ModelField kFields[] = {
    {"vocab", &C::vocab, "token ids 0 .. vocab - 1", true, nullptr, at_least<&C::vocab>},
    {"d_model", &C::d_model, "model width (a multiple of --heads)", false, nullptr,
     at_least<&C::d_model>},
    {"heads", &C::heads, "attention heads", false, nullptr, at_least<&C::heads>},
    {"layers", &C::layers, "transformer layers (per stack)", false, nullptr, at_least<&C::layers>},
    {"d_ff", &C::d_ff, "feed-forward width", false, nullptr, at_least<&C::d_ff>},
    {"max_len", &C::max_len, "longest sequence (rows of a position table)", true, nullptr,
     at_least<&C::max_len>},
    {"head_dim", &C::head_dim,
     "d_k of every attention layer (0: d-model / heads; else the Q, K, V projections map "
     "d-model to heads x head-dim)",
     false, nullptr, at_least<&C::head_dim, 0>},
    {"scale", &C::scale, "attention scale (nn/scale_modes.h)", false, nullptr, nullptr},
    {"norm", &C::norm,
     "LayerNorm placement: before each sublayer (pre) or after its residual add (post)", false,
     norm_placements, nullptr},
    {"activation", &C::activation, "feed-forward activation", false, activations, check_activation},
    {"positional", &C::positional,
     "positions: a learned table or fixed sinusoids added to the embeddings, rotary embeddings "
     "turning q and k, or ALiBi's distance bias on the logits, in every self-attention layer; "
     "none for no positions at all (nn/positional_schemes.h)",
     false, positional_names, check_positional},
    {"dropout", &C::dropout,
     "dropout on each sublayer's output (above 0, a batch runs as one part: --threads then "
     "splits the kernels)",
     false, nullptr, check_dropout},
};

}  // namespace

std::span<const ModelField> model_fields() { return kFields; }

void ModelConfig::validate() const {
  for (const ModelField& field : kFields) {
    if (!field.check) continue;
    try {
      field.check(*this);
    } catch (const Error& e) {
      fail("model config: ", field.name, " ", e.what());
    }
  }
  if (head_dim == 0 && d_model % heads != 0)
    fail("model config: d_model (", d_model, ") must be divisible by heads (", heads,
         ") unless head_dim is set");
  if (const auto check = positional_scheme(positional).check) {
    try {
      check({.d_k = d_k(), .heads = heads});
    } catch (const Error& e) {
      fail("model config: ", e.what());  // "positional rope: ..."
    }
  }
}

}  // namespace gradflow::nn
