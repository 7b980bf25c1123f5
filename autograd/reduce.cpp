// Reductions. The gradient of a sum is the output gradient spread back over
// the reduced axes: an expanded view (stride 0), so nothing is copied here.
#include "tensor/reduce.h"
#include "autograd/ops.h"
#include "tensor/creation.h"
#include "tensor/elementwise.h"
#include "tensor/index.h"

namespace gradflow {

namespace {

// g has the reduced shape; give it back the size-1 axes keepdim would have.
Tensor restore_axes(const Tensor& g, const Shape& input, const Axes& axes, bool keepdim) {
  if (keepdim) return g;
  if (axes.empty()) return g.reshape(Shape(input.size(), 1));
  Shape kept = input;
  for (int64_t axis : axes) kept[normalize_axis(axis, input.size(), "sum")] = 1;
  return g.reshape(kept);
}

}  // namespace

Variable sum(const Variable& x, const Axes& axes, bool keepdim) {
  const Shape shape = x.shape();
  return make_result(
      sum(x.data(), axes, keepdim), "sum", {x}, [shape, axes, keepdim](const Tensor& g) {
        return std::vector<Tensor>{restore_axes(g, shape, axes, keepdim).expand(shape)};
      });
}

Variable mean(const Variable& x, const Axes& axes, bool keepdim) {
  const Shape shape = x.shape();
  Tensor out = mean(x.data(), axes, keepdim);
  const double count = out.numel() == 0 ? 1.0 : static_cast<double>(x.numel() / out.numel());
  return make_result(out, "mean", {x}, [shape, axes, keepdim, count](const Tensor& g) {
    return std::vector<Tensor>{div(restore_axes(g, shape, axes, keepdim), count).expand(shape)};
  });
}

Variable var(const Variable& x, const Axes& axes, bool keepdim, int64_t correction) {
  Variable centered = x - mean(x, axes, true);
  Variable total = sum(centered * centered, axes, keepdim);
  const double count = static_cast<double>(x.numel() / std::max<int64_t>(1, total.numel()));
  return total / std::max(count - static_cast<double>(correction), 0.0);
}

MaxVariable max(const Variable& x, int64_t axis, bool keepdim) {
  MaxResult r = max(x.data(), axis, keepdim);
  const Shape shape = x.shape();
  const int ax = normalize_axis(axis, x.ndim(), "max");
  Tensor kept_indices = keepdim ? r.indices : r.indices.unsqueeze(ax);
  Variable values = make_result(r.values, "max", {x},
                                [shape, ax, kept_indices, keepdim](const Tensor& g) {
                                  Tensor gx = zeros(shape, g.dtype());
                                  scatter_add_(gx, ax, kept_indices, keepdim ? g : g.unsqueeze(ax));
                                  return std::vector<Tensor>{gx};
                                },
                                {kept_indices});
  return {values, r.indices};
}

}  // namespace gradflow
