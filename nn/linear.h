// Linear: the fully connected layer. Constructed as every layer is
// (module.h): sizes, options, then Init (generator and dtype; the initial
// values' distributions are in init.h).
#pragma once

#include "autograd/variable.h"
#include "nn/module.h"
#include "tensor/random.h"

namespace gradflow::nn {

struct LinearOptions {
  bool bias = true;  // false: y = x W^T, no bias parameter
};

// y = x W^T + b, W (out, in) as in PyTorch, so checkpoints map one to one.
// W^T is a transposed view: GEMM reads it with a transpose flag.
class Linear : public Module {
 public:
  Linear(int64_t in, int64_t out, LinearOptions options = {}, Init init = {});
  Variable forward(const Variable& x) const;  // (..., in) -> (..., out)
  std::string describe() const override;
  Variable weight, bias;  // bias undefined when disabled

 private:
  int64_t in_, out_;
};

}  // namespace gradflow::nn
