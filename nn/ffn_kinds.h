// The feed-forward sublayers, as one table: what every block's ff is
// (ModelConfig::ffn). Model building, validation, the flags' choices (--ffn),
// the metadata and the memory estimate read the table, so a new feed-forward
// is one entry here and its layer (feed_forward.h).
//
//   mlp     fc2(act(fc1(x))), act = --activation (gelu or relu); the default
//   swiglu  fc2(silu(fc1(x)) * fc3(x)) (Shazeer 2020), F = d_ff wide
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nn/feed_forward.h"

namespace gradflow::nn {

// What a feed-forward is built from: C, F, the activation (for those that
// take one) and where the initial values come from.
struct FfnContext {
  int64_t d_model = 0, d_ff = 0;
  std::string activation = "gelu";
  Init init = {};
};

struct FfnKind {
  const char* name;     // as in flags and files
  const char* summary;  // one line, for --help and docs
  std::shared_ptr<FeedForward> (*make)(const FfnContext&);
  // Its parameters. For the memory estimate (tested against the models
  // built), in a double: a hostile size's count need not fit in int64.
  double (*parameters)(double d_model, double d_ff);
  // Whether --activation picks its nonlinearity; swiglu's is silu, always.
  bool takes_activation = false;
  // For the memory estimate, in (tokens, F) tensors: those its forward keeps
  // for the backward (the MLP fc1's output, as gelu_linear recomputes the
  // GELU; SwiGLU fc1's and fc3's outputs, silu of the first and the
  // product), and those alive at once in a forward without gradients (the
  // MLP's fc1 output and its GELU; SwiGLU's four).
  double kept = 1, alive = 2;
};

const std::vector<FfnKind>& ffn_kinds();
// The feed-forward called `name`; throws Error listing the names if none is.
const FfnKind& ffn_kind(const std::string& name);
std::vector<std::string> ffn_kind_names();
// Throws Error (one line) unless `activation` means something to the
// feed-forward `name`: any of the MLP's; only the default, gelu, for one
// that takes none, so --activation relu is not silently ignored.
void check_ffn_activation(const std::string& name, const std::string& activation);

}  // namespace gradflow::nn
