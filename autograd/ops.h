// The differentiable ops. Each sits with its backward in the .cpp named in
// its section; shapes are checked before any work, and a wrong call throws
// gradflow::Error naming the op and the shapes. Each fused op (linear,
// gelu_linear, layer_norm, fused_attention) has a `_reference` beside it:
// the same formula composed from the other ops here, written to be read;
// reference_ops() switches every call to it (autograd/reference.h).
//
// Broadcasting follows NumPy; a backward sums the gradient back down to each
// input's shape. Letters in shape comments: B batch, T (query) positions,
// S key positions, C channels, H heads, D head size, V vocabulary.
#pragma once

#include <functional>
#include <vector>

#include "autograd/variable.h"

namespace gradflow {

// ---- arithmetic.cpp: a + b, a - b, a * b, a / b (broadcasting), -a -------
Variable add(const Variable& a, const Variable& b);  // d/da = 1, d/db = 1
Variable sub(const Variable& a, const Variable& b);  // d/da = 1, d/db = -1
Variable mul(const Variable& a, const Variable& b);  // d/da = b, d/db = a
Variable div(const Variable& a, const Variable& b);  // d/da = 1/b, d/db = -a/b^2
Variable add(const Variable& a, double s);
Variable sub(const Variable& a, double s);
Variable sub(double s, const Variable& a);
Variable mul(const Variable& a, double s);
Variable div(const Variable& a, double s);
Variable div(double s, const Variable& a);  // d/da = -s/a^2
Variable neg(const Variable& a);

// ---- unary.cpp ----------------------------------------------------------
Variable exp(const Variable& x);            // d/dx = exp(x)
Variable log(const Variable& x);            // d/dx = 1/x
Variable sqrt(const Variable& x);           // d/dx = 1/(2 sqrt(x))
Variable pow(const Variable& x, double p);  // d/dx = p x^(p-1)
Variable tanh(const Variable& x);           // d/dx = 1 - tanh(x)^2
Variable relu(const Variable& x);           // d/dx = [x > 0]
Variable gelu(const Variable& x);           // x Phi(x); d/dx = Phi(x) + x phi(x)
// x sigmoid(x) (SiLU, swish); with s = sigmoid(x), d/dx = s (1 + x (1 - s)).
Variable silu(const Variable& x);

// ---- where.cpp: selection by a (non-differentiable) mask ------------------
Variable where(const Tensor& cond, const Variable& a, const Variable& b);  // cond ? a : b
Variable masked_fill(const Variable& x, const Tensor& mask, double value);

// ---- reduce.cpp ---------------------------------------------------------
Variable sum(const Variable& x, const Axes& axes = {}, bool keepdim = false);
Variable mean(const Variable& x, const Axes& axes = {}, bool keepdim = false);
Variable var(const Variable& x, const Axes& axes = {}, bool keepdim = false,
             int64_t correction = 1);  // composed from mean, sub, mul, sum
struct MaxVariable {
  Variable values;  // the gradient flows to the (first) maximum only
  Tensor indices;
};
MaxVariable max(const Variable& x, int64_t axis, bool keepdim = false);

// ---- softmax.cpp: along one axis, numerically stable ---------------------
Variable softmax(const Variable& x, int64_t axis);      // dx = y (g - sum(g y))
Variable log_softmax(const Variable& x, int64_t axis);  // dx = g - softmax(x) sum(g)

// ---- norm.cpp: LayerNorm over the last axis, fused ------------------------
// (x - mean) / sqrt(var + eps) * weight + bias over the last axis, var the
// biased variance (as PyTorch). x is (..., C); weight and bias are (C) or
// undefined (1 and 0). With xhat the normalised x and g = dy * weight:
// dx = (g - mean(g) - xhat mean(g xhat)) / sqrt(var + eps), dweight = sum(dy xhat),
// dbias = sum(dy), the sums over every axis but the last.
Variable layer_norm(const Variable& x, const Variable& weight, const Variable& bias, double eps);
// The same composed: (x - mean(x)) / sqrt(var(x, correction 0) + eps) * weight + bias.
Variable layer_norm_reference(const Variable& x, const Variable& weight, const Variable& bias,
                              double eps);

// ---- matmul.cpp: (..., M, K) @ (..., K, N) -> (..., M, N) ------------------
Variable matmul(const Variable& a, const Variable& b);  // dA = g B^T, dB = A^T g

// ---- linear.cpp: x (..., K), weight (N, K), bias (N) or undefined ----------
// x weight^T + bias -> (..., N), the bias added inside GEMM.
// dx = g weight, dweight = g^T x, dbias = g summed over every axis but the last.
Variable linear(const Variable& x, const Variable& weight, const Variable& bias);
// The same composed: matmul(x, weight^T) + bias.
Variable linear_reference(const Variable& x, const Variable& weight, const Variable& bias);
// linear(gelu(h), weight, bias), recomputing gelu(h) in the backward instead
// of keeping it (a feed-forward's memory).
Variable gelu_linear(const Variable& h, const Variable& weight, const Variable& bias);
// The same composed: linear_reference(gelu(h), weight, bias).
Variable gelu_linear_reference(const Variable& h, const Variable& weight, const Variable& bias);

// ---- attention.cpp: scaled dot-product attention, fused -------------------
// out = softmax(scale * q k^T, masked keys -inf) v along the last axis, with
// q (..., T, D), k (..., S, D), v (..., S, Dv) -> (..., T, Dv); the batch axes
// broadcast. `mask` (any dtype, non-zero = hidden) is undefined or broadcasts
// to (..., T, S); a query with every key hidden gets zero weights, a zero
// output and zero gradients. Keeps only q, k and v: the backward recomputes
// the (..., T, S) weights. With P the weights: dv = P^T g, dP = g v^T,
// dlogits = P (dP - rowsum(P dP)), dq = scale dlogits k, dk = scale dlogits^T q.
Variable fused_attention(const Variable& q, const Variable& k, const Variable& v, double scale,
                         const Tensor& mask);
// The same composed: matmul(softmax(masked_fill(scale * matmul(q, k^T), mask,
// -inf)), v), that is composed_attention without a transform.
Variable fused_attention_reference(const Variable& q, const Variable& k, const Variable& v,
                                   double scale, const Tensor& mask);
// The composed attention, the one formula of every path that is not the
// fused kernel: logits = transform(scale * q k^T) (no transform: as they
// are), hidden keys set to -inf, softmax, times v. A transform is what
// changes the scores themselves (ALiBi's distance bias); `kept`, if given,
// receives the logits (before the mask) and the weights as graph nodes, for
// a probe's gradient hooks.
struct ComposedAttention {
  Variable logits, weights;  // (..., T, S)
};
Variable composed_attention(const Variable& q, const Variable& k, const Variable& v, double scale,
                            const Tensor& mask,
                            const std::function<Variable(const Variable&)>& transform = nullptr,
                            ComposedAttention* kept = nullptr);

// ---- index.cpp ----------------------------------------------------------
Variable index_select(const Variable& x, int64_t axis, const Tensor& index);
// Rows of weight (V, C) picked by ids of any shape: (ids..., C).
Variable embedding(const Variable& weight, const Tensor& ids);
Variable gather(const Variable& x, int64_t axis, const Tensor& index);

// ---- shape_ops.cpp: views (no copy) and joins -----------------------------
Variable reshape(const Variable& x, const Shape& shape);
Variable transpose(const Variable& x, int64_t a, int64_t b);
Variable permute(const Variable& x, const std::vector<int64_t>& order);
Variable narrow(const Variable& x, int64_t axis, int64_t start, int64_t length);
Variable slice(const Variable& x, int64_t axis, int64_t start, int64_t end, int64_t step = 1);
Variable select(const Variable& x, int64_t axis, int64_t index);
Variable squeeze(const Variable& x, int64_t axis);
Variable unsqueeze(const Variable& x, int64_t axis);
Variable expand(const Variable& x, const Shape& shape);
Variable contiguous(const Variable& x);
Variable cat(const std::vector<Variable>& parts, int64_t axis);
std::vector<Variable> split(const Variable& x, const std::vector<int64_t>& sizes, int64_t axis);

inline Variable operator+(const Variable& a, const Variable& b) { return add(a, b); }
inline Variable operator-(const Variable& a, const Variable& b) { return sub(a, b); }
inline Variable operator*(const Variable& a, const Variable& b) { return mul(a, b); }
inline Variable operator/(const Variable& a, const Variable& b) { return div(a, b); }
inline Variable operator+(const Variable& a, double s) { return add(a, s); }
inline Variable operator-(const Variable& a, double s) { return sub(a, s); }
inline Variable operator*(const Variable& a, double s) { return mul(a, s); }
inline Variable operator/(const Variable& a, double s) { return div(a, s); }
inline Variable operator+(double s, const Variable& a) { return add(a, s); }
inline Variable operator-(double s, const Variable& a) { return sub(s, a); }
inline Variable operator*(double s, const Variable& a) { return mul(a, s); }
inline Variable operator/(double s, const Variable& a) { return div(s, a); }
inline Variable operator-(const Variable& a) { return neg(a); }

}  // namespace gradflow
