// Activation layers, for models that hold them as modules.
#pragma once

#include "autograd/ops.h"
#include "nn/module.h"
#include "tensor/random.h"

namespace gradflow::nn {

class GELU : public Module {
 public:
  Variable forward(const Variable& x) const { return gelu(x); }
  std::string describe() const override { return "GELU(erf)"; }
};

class ReLU : public Module {
 public:
  Variable forward(const Variable& x) const { return relu(x); }
  std::string describe() const override { return "ReLU"; }
};

}  // namespace gradflow::nn
