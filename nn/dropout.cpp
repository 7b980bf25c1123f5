#include "nn/dropout.h"

#include "autograd/ops.h"

#include "autograd/data_parallel.h"
#include "nn/layer_checks.h"
#include "tensor/creation.h"
#include "tensor/map.h"

namespace gradflow::nn {

Dropout::Dropout(double p, Init init) : p_(p), gen_(&init.generator()) {
  if (!(p >= 0 && p < 1)) fail("Dropout: p must be in [0, 1), got ", p);
}

Variable Dropout::forward(const Variable& x) const {
  if (!is_training() || p_ == 0) return x;
  // Parts of a batch run at once would draw from the one generator in an
  // order that changes from run to run (and race on its state).
  if (in_parallel_part())
    fail("Dropout: p = ", p_, " draws from a shared generator, which the parts of ",
         "backward_in_parallel cannot share; train with dropout 0 or with one part");
  // keep / (1 - p): a mask with the scale folded in, so one multiply does both.
  Tensor keep = rand(x.shape(), *gen_, x.dtype());
  double scale = 1.0 / (1.0 - p_);
  Tensor mask = map_unary(keep, "dropout", [this, scale](auto u) {
    return u >= static_cast<decltype(u)>(p_) ? static_cast<decltype(u)>(scale) : decltype(u){0};
  });
  return x * Variable(mask);
}

std::string Dropout::describe() const { return "Dropout(p=" + std::to_string(p_) + ")"; }

}  // namespace gradflow::nn
