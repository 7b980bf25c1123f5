// layer_norm over the last axis as one op, a row-wise kernel each way
// (tensor/kernels/norm.h), and its composed reference below it.
//
// One kernel reads a row two or three times while it sits in cache and
// writes it once; composed, each of the ops is a pass over the whole tensor
// with a tensor of its own.
#include "tensor/kernels/norm.h"
#include "autograd/ops.h"
#include "autograd/reference.h"

namespace gradflow {

namespace {

// x (..., C); weight and bias (C) in x's dtype, or undefined.
void check_layer_norm(const char* op, const Variable& x, const Variable& weight,
                      const Variable& bias) {
  if (!x.defined() || x.ndim() == 0)
    fail(op, ": expected an input (..., C), got ",
         x.defined() ? shape_str(x.shape()) : "an undefined input");
  for (const auto& [p, what] : {std::pair{&weight, "weight"}, std::pair{&bias, "bias"}}) {
    if (!p->defined()) continue;
    if (p->ndim() != 1 || p->shape()[0] != x.shape().back())
      fail(op, ": expected ", what, " (", x.shape().back(), ") for input ", shape_str(x.shape()),
           ", got ", shape_str(p->shape()));
    if (p->dtype() != x.dtype())
      fail(op, ": ", what, " is ", dtype_name(p->dtype()), " but the input is ",
           dtype_name(x.dtype()));
  }
}

}  // namespace

Variable layer_norm(const Variable& x, const Variable& weight, const Variable& bias, double eps) {
  check_layer_norm("layer_norm", x, weight, bias);
  if (reference_ops()) return layer_norm_reference(x, weight, bias, eps);
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

Variable layer_norm_reference(const Variable& x, const Variable& weight, const Variable& bias,
                              double eps) {
  check_layer_norm("layer_norm_reference", x, weight, bias);
  // Shape: x (..., C); the mean and the variance (..., 1), broadcast back over C.
  Variable centered = x - mean(x, {-1}, true);
  Variable variance = var(x, {-1}, true, /*correction=*/0);  // biased, as PyTorch
  Variable y = centered / sqrt(variance + eps);
  if (weight.defined()) y = y * weight;
  return bias.defined() ? y + bias : y;
}

}  // namespace gradflow
