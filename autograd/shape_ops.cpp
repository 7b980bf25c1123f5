// Views and joins. A view's backward is the inverse view of the gradient; a
// view that keeps only part of its input (narrow, slice, select) writes the
// gradient into the matching part of a zero tensor.
#include <numeric>

#include "autograd/ops.h"
#include "tensor/creation.h"
#include "tensor/index.h"
#include "tensor/reduce.h"

namespace gradflow {

namespace {

// The gradient of "take part of x": zeros of x's shape with g copied into the
// same part, chosen by `part` applied to the zeros.
template <class Part>
Variable take_part(const Variable& x, const char* name, Part part) {
  const Shape shape = x.shape();
  return make_result(part(x.data()), name, {x}, [shape, part](const Tensor& g) {
    Tensor gx = zeros(shape, g.dtype());
    part(gx).copy_(g);
    return std::vector<Tensor>{gx};
  });
}

}  // namespace

Variable reshape(const Variable& x, const Shape& shape) {
  const Shape in = x.shape();
  return make_result(x.data().reshape(shape), "reshape", {x},
                     [in](const Tensor& g) { return std::vector<Tensor>{g.reshape(in)}; });
}

Variable transpose(const Variable& x, int64_t a, int64_t b) {
  return make_result(x.data().transpose(a, b), "transpose", {x},
                     [a, b](const Tensor& g) { return std::vector<Tensor>{g.transpose(a, b)}; });
}

Variable permute(const Variable& x, const std::vector<int64_t>& order) {
  Tensor out = x.data().permute(order);  // validates the order
  std::vector<int64_t> inverse(order.size());
  for (size_t i = 0; i < order.size(); ++i)
    inverse[normalize_axis(order[i], x.ndim(), "permute")] = static_cast<int64_t>(i);
  return make_result(out, "permute", {x}, [inverse](const Tensor& g) {
    return std::vector<Tensor>{g.permute(inverse)};
  });
}

Variable narrow(const Variable& x, int64_t axis, int64_t start, int64_t length) {
  return take_part(x, "narrow", [=](const Tensor& t) { return t.narrow(axis, start, length); });
}

Variable slice(const Variable& x, int64_t axis, int64_t start, int64_t end, int64_t step) {
  return take_part(x, "slice", [=](const Tensor& t) { return t.slice(axis, start, end, step); });
}

Variable select(const Variable& x, int64_t axis, int64_t index) {
  return take_part(x, "select", [=](const Tensor& t) { return t.select(axis, index); });
}

Variable squeeze(const Variable& x, int64_t axis) {
  const int ax = normalize_axis(axis, x.ndim(), "squeeze");
  return make_result(x.data().squeeze(ax), "squeeze", {x},
                     [ax](const Tensor& g) { return std::vector<Tensor>{g.unsqueeze(ax)}; });
}

Variable unsqueeze(const Variable& x, int64_t axis) {
  const int ax = normalize_axis(axis, x.ndim() + 1, "unsqueeze");
  return make_result(x.data().unsqueeze(ax), "unsqueeze", {x},
                     [ax](const Tensor& g) { return std::vector<Tensor>{g.squeeze(ax)}; });
}

Variable expand(const Variable& x, const Shape& shape) {
  const Shape in = x.shape();
  return make_result(x.data().expand(shape), "expand", {x},
                     [in](const Tensor& g) { return std::vector<Tensor>{sum_to(g, in)}; });
}

Variable contiguous(const Variable& x) {
  return make_result(x.data().contiguous(), "contiguous", {x},
                     [](const Tensor& g) { return std::vector<Tensor>{g}; });
}

Variable cat(const std::vector<Variable>& parts, int64_t axis) {
  std::vector<Tensor> data;
  std::vector<int64_t> sizes;
  for (const Variable& p : parts) {
    if (!p.defined()) fail("cat: undefined variable");
    data.push_back(p.data());
  }
  Tensor out = cat(data, axis);  // validates shapes and axis
  const int ax = normalize_axis(axis, out.ndim(), "cat");
  for (const Tensor& d : data) sizes.push_back(d.shape()[ax]);
  return make_result(out, "cat", parts, [sizes, ax](const Tensor& g) {
    std::vector<Tensor> grads;
    int64_t start = 0;
    for (int64_t n : sizes) {
      grads.push_back(g.narrow(ax, start, n));
      start += n;
    }
    return grads;
  });
}

std::vector<Variable> split(const Variable& x, const std::vector<int64_t>& sizes, int64_t axis) {
  const int ax = normalize_axis(axis, x.ndim(), "split");
  if (std::accumulate(sizes.begin(), sizes.end(), int64_t{0}) != x.shape()[ax])
    fail("split: sizes add up to ", std::accumulate(sizes.begin(), sizes.end(), int64_t{0}),
         " but axis ", ax, " of ", shape_str(x.shape()), " has ", x.shape()[ax]);
  std::vector<Variable> out;
  int64_t start = 0;
  for (int64_t n : sizes) {
    out.push_back(narrow(x, ax, start, n));
    start += n;
  }
  return out;
}

}  // namespace gradflow
