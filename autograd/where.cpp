// Selection by a mask. The mask is a plain Tensor: it carries no gradient.
#include "autograd/ops.h"
#include "tensor/creation.h"
#include "tensor/elementwise.h"
#include "tensor/reduce.h"

namespace gradflow {

Variable where(const Tensor& cond, const Variable& a, const Variable& b) {
  const Shape sa = a.shape(), sb = b.shape();
  const bool need_a = a.requires_grad(), need_b = b.requires_grad();
  Tensor out = where(cond, a.data(), b.data());
  return make_result(out, "where", {a, b},
                     [cond, sa, sb, need_a, need_b](const Tensor& g) {
                       Tensor zero = zeros({}, g.dtype());
                       return std::vector<Tensor>{
                           need_a ? sum_to(where(cond, g, zero), sa) : Tensor(),
                           need_b ? sum_to(where(cond, zero, g), sb) : Tensor()};
                     },
                     {cond});
}

Variable masked_fill(const Variable& x, const Tensor& mask, double value) {
  return make_result(
      masked_fill(x.data(), mask, value), "masked_fill", {x},
      [mask](const Tensor& g) { return std::vector<Tensor>{masked_fill(g, mask, 0)}; }, {mask});
}

}  // namespace gradflow
