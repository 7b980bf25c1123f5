// Indexing by tensors of Int64 indices, their scatter-add reverses, and
// concatenation. Out-of-range indices throw, naming the op and the index.
#pragma once

#include <vector>

#include "tensor/tensor.h"

namespace gradflow {

// out has x's shape with `axis` replaced by index.numel(); out's slice i along
// the axis is x's slice index[i]. index is 1-D Int64.
Tensor index_select(const Tensor& x, int64_t axis, const Tensor& index);
// dst's slice index[i] along `axis` += src's slice i (repeated indices add up).
void index_add_(Tensor& dst, int64_t axis, const Tensor& index, const Tensor& src);

// torch.gather: out has index's shape; along `axis`, out[..., j, ...] =
// x[..., index[..., j, ...], ...]. index has x's rank and is no larger than x
// on the other axes.
Tensor gather(const Tensor& x, int64_t axis, const Tensor& index);
// The reverse of gather: dst[..., index[..., j, ...], ...] += src[..., j, ...].
void scatter_add_(Tensor& dst, int64_t axis, const Tensor& index, const Tensor& src);

// Joins tensors along `axis`; all other sizes must agree.
Tensor cat(const std::vector<Tensor>& parts, int64_t axis);

}  // namespace gradflow
