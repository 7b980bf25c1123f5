// Embedding: a learned table of vectors looked up by integer id.
// Every constructor ends with (Generator& gen, DType dtype) where it draws
// values: the generator seeds the initial values (defaults in init.h), and
// float64 is used by the gradient checks.
#pragma once

#include "autograd/ops.h"
#include "nn/module.h"
#include "tensor/random.h"

namespace gradflow::nn {

// Rows of a (num, dim) table picked by int64 ids of any shape: (ids..., dim).
class Embedding : public Module {
 public:
  Embedding(int64_t num, int64_t dim, Generator& gen = default_generator(),
            DType dtype = DType::Float32);
  Variable forward(const Tensor& ids) const;
  std::string describe() const override;
  Variable weight;

 private:
  int64_t num_, dim_;
};

}  // namespace gradflow::nn
