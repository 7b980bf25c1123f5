// Linear: the fully connected layer.
// Every constructor ends with (Generator& gen, DType dtype) where it draws
// values: the generator seeds the initial values (defaults in init.h), and
// float64 is used by the gradient checks.
#pragma once

#include "autograd/ops.h"
#include "nn/module.h"
#include "tensor/random.h"

namespace gradflow::nn {

// y = x W^T + b, W (out, in) as in PyTorch, so checkpoints map one to one.
// W^T is a transposed view: GEMM reads it with a transpose flag.
class Linear : public Module {
 public:
  Linear(int64_t in, int64_t out, bool bias = true, Generator& gen = default_generator(),
         DType dtype = DType::Float32);
  Variable forward(const Variable& x) const;  // (..., in) -> (..., out)
  std::string describe() const override;
  Variable weight, bias;  // bias undefined when disabled

 private:
  int64_t in_, out_;
};

}  // namespace gradflow::nn
