// Embedding: a learned table of vectors looked up by integer id.
// Constructed as every layer is (module.h): sizes, then Init (generator and
// dtype; the initial values' distributions are in init.h).
#pragma once

#include "autograd/variable.h"
#include "nn/module.h"
#include "tensor/random.h"

namespace gradflow::nn {

// Rows of a (num, dim) table picked by int64 ids of any shape: (ids..., dim).
class Embedding : public Module {
 public:
  Embedding(int64_t num, int64_t dim, Init init = {});
  Variable forward(const Tensor& ids) const;
  std::string describe() const override;
  Variable weight;

 private:
  int64_t num_, dim_;
};

}  // namespace gradflow::nn
