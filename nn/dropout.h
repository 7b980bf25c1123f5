// Dropout, seeded.
#pragma once

#include "autograd/variable.h"
#include "nn/module.h"
#include "tensor/random.h"

namespace gradflow::nn {

// Zeroes each element with probability p and scales the rest by 1/(1-p) in
// training; the identity in eval mode or when p = 0. Draws from the
// generator of its Init, which must outlive the layer (a training checkpoint
// saves its state).
class Dropout : public Module {
 public:
  explicit Dropout(double p, Init init = {});
  Variable forward(const Variable& x) const;
  std::string describe() const override;

 private:
  double p_;
  Generator* gen_;
};

}  // namespace gradflow::nn
