#include "nn/feed_forward.h"

#include "autograd/ops.h"
#include "nn/layer_checks.h"

namespace gradflow::nn {

Mlp::Mlp(int64_t d_model, int64_t d_ff, const std::string& activation, Init init)
    : activation_(activation) {
  if (activation != "gelu" && activation != "relu")
    fail("Mlp: activation must be gelu or relu, got '", activation, "'");
  check_positive("Mlp", d_model, "d_model");
  check_positive("Mlp", d_ff, "d_ff");
  fc1 = register_module("fc1", std::make_shared<Linear>(d_model, d_ff, LinearOptions{}, init));
  fc2 = register_module("fc2", std::make_shared<Linear>(d_ff, d_model, LinearOptions{}, init));
}

Variable Mlp::forward(const Variable& x) const {
  const GraphScope scope = graph_scope();
  Variable h = fc1->forward(x);
  if (activation_ != "gelu") return fc2->forward(relu(h));
  // fc2(gelu(h)), with gelu(h) recomputed in the backward rather than kept.
  return gelu_linear(h, fc2->weight, fc2->bias);
}

SwiGLU::SwiGLU(int64_t d_model, int64_t d_ff, Init init) {
  check_positive("SwiGLU", d_model, "d_model");
  check_positive("SwiGLU", d_ff, "d_ff");
  fc1 = register_module("fc1", std::make_shared<Linear>(d_model, d_ff, LinearOptions{}, init));
  fc2 = register_module("fc2", std::make_shared<Linear>(d_ff, d_model, LinearOptions{}, init));
  fc3 = register_module("fc3", std::make_shared<Linear>(d_model, d_ff, LinearOptions{}, init));
}

Variable SwiGLU::forward(const Variable& x) const {
  const GraphScope scope = graph_scope();
  return fc2->forward(silu(fc1->forward(x)) * fc3->forward(x));
}

}  // namespace gradflow::nn
