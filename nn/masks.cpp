#include "nn/masks.h"

#include "tensor/creation.h"
#include "tensor/error.h"
#include "tensor/map.h"

namespace gradflow::nn {

#ifndef GRADFLOW_EXERCISES  // exercise 8: docs/exercises/08_causal_mask.md
Tensor causal_mask(int64_t t, int64_t s, DType dtype, int64_t offset) {
  Tensor mask = zeros({t, s}, dtype);
  for (int64_t i = 0; i < t; ++i)
    for (int64_t j = i + offset + 1; j < s; ++j) mask.set({i, j}, 1);
  return mask;
}
#endif

Tensor key_padding_mask(const Tensor& pad) {
  if (!pad.defined()) return Tensor();
  if (pad.ndim() != 2) fail("key_padding_mask: expected (B, S), got ", shape_str(pad.shape()));
  return pad.unsqueeze(1).unsqueeze(1);
}

Tensor combine_masks(const Tensor& a, const Tensor& b) {
  if (!a.defined()) return b;
  if (!b.defined()) return a;
  const DType dtype = a.dtype() == DType::Int64 ? DType::Float32 : a.dtype();
  return map_binary(a.to(dtype), b.to(dtype), "combine_masks", [](auto x, auto y) {
    using T = decltype(x);
    return x != T{0} || y != T{0} ? T{1} : T{0};
  });
}

}  // namespace gradflow::nn
