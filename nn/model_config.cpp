#include "nn/model_config.h"

#include <algorithm>

#include "nn/ffn_kinds.h"
#include "nn/norm_kinds.h"
#include "nn/positional_schemes.h"

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
          .norm_type = norm_type,
          .ffn = ffn,
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

// A name of one of the tables: `names` its entries'.
void check_one_of(const std::string& name, const std::vector<std::string>& names) {
  if (std::find(names.begin(), names.end(), name) != names.end()) return;
  std::string list;
  for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
  fail("unknown '", name, "' (expected one of ", list, ")");
}
void check_positional(const ModelConfig& c) { check_one_of(c.positional, positional_names()); }
void check_norm_type(const ModelConfig& c) { check_one_of(c.norm_type, norm_kind_names()); }
void check_ffn(const ModelConfig& c) { check_one_of(c.ffn, ffn_kind_names()); }

void check_dropout(const ModelConfig& c) {
  if (!(c.dropout >= 0 && c.dropout < 1)) fail("must be in [0, 1), got ", c.dropout);
}

using C = ModelConfig;
constexpr const char* kRefuse = kRefuseIfAbsent;
// `absent`: the fields of the first checkpoints are refused if missing;
// those added since read as the model every checkpoint before them built.
const ModelField kFields[] = {
    {.name = "vocab",
     .member = &C::vocab,
     .help = "token ids 0 .. vocab - 1",
     .absent = kRefuse,
     .from_data = true,
     .check = at_least<&C::vocab>},
    {.name = "d_model",
     .member = &C::d_model,
     .help = "model width (a multiple of --heads)",
     .absent = kRefuse,
     .check = at_least<&C::d_model>},
    {.name = "heads",
     .member = &C::heads,
     .help = "attention heads",
     .absent = kRefuse,
     .check = at_least<&C::heads>},
    {.name = "layers",
     .member = &C::layers,
     .help = "transformer layers (per stack)",
     .absent = kRefuse,
     .check = at_least<&C::layers>},
    {.name = "d_ff",
     .member = &C::d_ff,
     .help = "feed-forward width (of swiglu's gated product too)",
     .absent = kRefuse,
     .check = at_least<&C::d_ff>},
    {.name = "max_len",
     .member = &C::max_len,
     .help = "longest sequence (rows of a position table)",
     .absent = kRefuse,
     .from_data = true,
     .check = at_least<&C::max_len>},
    {.name = "head_dim",
     .member = &C::head_dim,
     .help = "d_k of every attention layer (0: d-model / heads; else the Q, K, V projections map "
             "d-model to heads x head-dim)",
     .absent = "0",  // d_k = d_model / heads, as before head_dim
     .check = at_least<&C::head_dim, 0>},
    {.name = "scale",
     .member = &C::scale,
     .help = "attention scale (nn/scale_modes.h)",
     .absent = kRefuse},
    {.name = "norm",
     .member = &C::norm,
     .help = "norm placement: before each sublayer (pre) or after its residual add (post)",
     .absent = kRefuse,
     .choices = norm_placements},
    {.name = "norm_type",
     .member = &C::norm_type,
     .help = "the norm of every sublayer and the final one, a row of nn/norm_kinds.cpp",
     .absent = "layernorm",  // the only norm before norm_type
     .choices = norm_kind_names,
     .check = check_norm_type},
    {.name = "ffn",
     .member = &C::ffn,
     .help = "feed-forward: mlp, fc2(act(fc1(x))), or swiglu, fc2(silu(fc1(x)) * fc3(x)) "
             "(nn/ffn_kinds.h)",
     .absent = "mlp",  // the only feed-forward before ffn
     .choices = ffn_kind_names,
     .check = check_ffn},
    {.name = "activation",
     .member = &C::activation,
     .help = "the mlp feed-forward's activation",
     .absent = kRefuse,
     .choices = activations,
     .check = check_activation},
    {.name = "positional",
     .member = &C::positional,
     .help = "positions: a learned table or fixed sinusoids added to the embeddings, rotary "
             "embeddings turning q and k, or ALiBi's distance bias on the logits, in every "
             "self-attention layer; none for no positions at all (nn/positional_schemes.h)",
     .absent = kRefuse,
     .choices = positional_names,
     .check = check_positional},
    {.name = "dropout",
     .member = &C::dropout,
     .help = "dropout on each sublayer's output (above 0, a batch runs as one part: --threads "
             "then splits the kernels)",
     .absent = kRefuse,
     .check = check_dropout},
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
  try {
    check_ffn_activation(ffn, activation);
  } catch (const Error& e) {
    fail("model config: ", e.what());  // "ffn swiglu takes no activation ..."
  }
  if (const auto check = positional_scheme(positional).check) {
    try {
      check({.d_k = d_k(), .heads = heads});
    } catch (const Error& e) {
      fail("model config: ", e.what());  // "positional rope: ..."
    }
  }
}

}  // namespace gradflow::nn
