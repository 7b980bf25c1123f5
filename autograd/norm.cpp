// layer_norm over the last axis as one op: a row-wise kernel forward and one
// backward (tensor/kernels/norm.h), in place of the nine ops (mean, sub, mul, mean,
// add, pow, mul, mul, add) it was composed of, each a pass over the whole
// tensor with a tensor of its own. The composed version stays as the
// reference in tests/autograd/norm_test.cpp.
#include "tensor/kernels/norm.h"
#include "autograd/ops.h"

namespace gradflow {

Variable layer_norm(const Variable& x, const Variable& weight, const Variable& bias, double eps) {
  if (!x.defined()) fail("layer_norm: undefined input");
  const Tensor w = weight.defined() ? weight.data() : Tensor();
  const Tensor b = bias.defined() ? bias.data() : Tensor();
  // Contiguous once here, so that forward and backward share the copy.
  const Tensor xc = x.data().contiguous();
  LayerNormForward f = layer_norm_forward(xc, w, b, eps);
  const bool need_x = x.requires_grad();
  const bool need_w = weight.defined() && weight.requires_grad();
  const bool need_b = bias.defined() && bias.requires_grad();
  // Backward keeps x, mean and rstd ((R) each), as llm.c does, and recomputes
  // xhat from them rather than keeping a second (R, C) tensor.
  return make_result(
      f.y, "layer_norm", {x, weight, bias},
      [xc, w, mean = f.mean, rstd = f.rstd, need_x, need_w, need_b](const Tensor& g) {
        LayerNormGrads d = layer_norm_backward(g, xc, mean, rstd, w, need_x, need_w, need_b);
        return std::vector<Tensor>{d.dx, d.dweight, d.dbias};
      });
}

}  // namespace gradflow
