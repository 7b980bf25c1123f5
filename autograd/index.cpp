// Lookups by index. Their backwards scatter-add, so a row picked twice (a
// token that appears twice in a batch) receives both gradients.
#include "tensor/index.h"
#include "autograd/ops.h"
#include "tensor/creation.h"

namespace gradflow {

Variable index_select(const Variable& x, int64_t axis, const Tensor& index) {
  const Shape shape = x.shape();
  return make_result(index_select(x.data(), axis, index), "index_select", {x},
                     [shape, axis, index](const Tensor& g) {
                       Tensor gx = zeros(shape, g.dtype());
                       index_add_(gx, axis, index, g);
                       return std::vector<Tensor>{gx};
                     },
                     {index});
}

Variable embedding(const Variable& weight, const Tensor& ids) {
  if (weight.ndim() != 2) fail("embedding: weight must be (V, C), got ", shape_str(weight.shape()));
  if (!ids.defined() || ids.dtype() != DType::Int64) fail("embedding: ids must be an int64 tensor");
  Shape out_shape = ids.shape();
  out_shape.push_back(weight.shape()[1]);
  Variable rows = index_select(weight, 0, ids.reshape({-1}));
  return reshape(rows, out_shape);
}

Variable gather(const Variable& x, int64_t axis, const Tensor& index) {
  const Shape shape = x.shape();
  return make_result(gather(x.data(), axis, index), "gather", {x},
                     [shape, axis, index](const Tensor& g) {
                       Tensor gx = zeros(shape, g.dtype());
                       scatter_add_(gx, axis, index, g);
                       return std::vector<Tensor>{gx};
                     },
                     {index});
}

}  // namespace gradflow
