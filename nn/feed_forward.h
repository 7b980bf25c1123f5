// The feed-forward sublayers of a block: position-wise, (B, T, C) -> (B, T, C)
// through a hidden layer of F = d_ff. Which one a model's blocks use is an
// entry of the table in ffn_kinds.h (ModelConfig::ffn).
//
//   Mlp     fc2(act(fc1(x))), act GELU (erf) or ReLU: Vaswani et al.'s, the default
//   SwiGLU  fc2(silu(fc1(x)) * fc3(x)) (Shazeer 2020; LLaMA's): a gate
//
// Every matrix has a bias, as every other Linear of the models does (LLaMA's
// have none); F is the width of SwiGLU's hidden product too, so at one d_ff it
// has 1.5 times the MLP's parameters (LLaMA shrinks F to 2/3 of 4 C to match
// them; here --d-ff says the width, as it does for the MLP).
#pragma once

#include <memory>
#include <string>

#include "nn/linear.h"

namespace gradflow::nn {

// What a block holds either as: fc1 (C -> F) into the hidden layer and fc2
// (F -> C) out of it are common to both.
class FeedForward : public Module {
 public:
  virtual Variable forward(const Variable& x) const = 0;
  std::shared_ptr<Linear> fc1, fc2;
};

class Mlp : public FeedForward {
 public:
  // activation: "gelu" or "relu".
  Mlp(int64_t d_model, int64_t d_ff, const std::string& activation, Init init = {});
  Variable forward(const Variable& x) const override;
  std::string describe() const override { return "Mlp(" + activation_ + ")"; }

 private:
  std::string activation_;
};

// out = fc2(silu(fc1(x)) * fc3(x)): fc1 is W1 of the paper (the gated
// branch), fc3 its W3 (the linear one), fc2 its W2, so the names match
// LLaMA's w1, w2, w3.
class SwiGLU : public FeedForward {
 public:
  SwiGLU(int64_t d_model, int64_t d_ff, Init init = {});
  Variable forward(const Variable& x) const override;
  std::string describe() const override { return "SwiGLU"; }
  std::shared_ptr<Linear> fc3;
};

}  // namespace gradflow::nn
