#include "nn/init.h"

#include <cmath>

#include "tensor/creation.h"

namespace gradflow::nn::init {

namespace {

struct Fans {
  double in, out;
};

Fans fans(const Variable& w, const char* op) {
  if (w.ndim() < 2)
    fail(op, ": needs a weight of at least 2 dimensions, got ", shape_str(w.shape()));
  // (out, in, ...): trailing axes (a kernel's window) multiply both fans.
  double receptive = static_cast<double>(w.numel() / (w.shape()[0] * w.shape()[1]));
  return {static_cast<double>(w.shape()[1]) * receptive,
          static_cast<double>(w.shape()[0]) * receptive};
}

void assign(const Variable& w, const Tensor& values) {
  Tensor target = w.data();
  target.copy_(values);
}

}  // namespace

void uniform_(const Variable& w, Generator& gen, double low, double high) {
  assign(w, rand(w.shape(), gen, w.dtype(), low, high));
}

void normal_(const Variable& w, Generator& gen, double mean, double std) {
  assign(w, randn(w.shape(), gen, w.dtype(), mean, std));
}

void constant_(const Variable& w, double value) {
  Tensor target = w.data();
  target.fill_(value);
}

void xavier_uniform_(const Variable& w, Generator& gen, double gain) {
  Fans f = fans(w, "xavier_uniform_");
  double a = gain * std::sqrt(6.0 / (f.in + f.out));
  uniform_(w, gen, -a, a);
}

void xavier_normal_(const Variable& w, Generator& gen, double gain) {
  Fans f = fans(w, "xavier_normal_");
  normal_(w, gen, 0, gain * std::sqrt(2.0 / (f.in + f.out)));
}

void kaiming_uniform_(const Variable& w, Generator& gen, double gain) {
  double bound = std::sqrt(3.0) * gain / std::sqrt(fans(w, "kaiming_uniform_").in);
  uniform_(w, gen, -bound, bound);
}

void kaiming_normal_(const Variable& w, Generator& gen, double gain) {
  normal_(w, gen, 0, gain / std::sqrt(fans(w, "kaiming_normal_").in));
}

}  // namespace gradflow::nn::init
