#include "tensor/creation.h"

#include <cmath>

namespace gradflow {

Tensor full(const Shape& shape, double value, DType dtype) {
  return Tensor::empty(shape, dtype).fill_(value);
}
Tensor zeros(const Shape& shape, DType dtype) { return full(shape, 0, dtype); }
Tensor ones(const Shape& shape, DType dtype) { return full(shape, 1, dtype); }
Tensor zeros_like(const Tensor& t) { return zeros(t.shape(), t.dtype()); }
Tensor ones_like(const Tensor& t) { return ones(t.shape(), t.dtype()); }
Tensor scalar_tensor(double value, DType dtype) { return full({}, value, dtype); }

Tensor arange(double start, double end, double step, DType dtype) {
  if (step == 0 || !std::isfinite(start) || !std::isfinite(end) || !std::isfinite(step))
    fail("arange: invalid range start=", start, " end=", end, " step=", step);
  int64_t n = std::max<int64_t>(0, static_cast<int64_t>(std::ceil((end - start) / step)));
  Tensor t = Tensor::empty({n}, dtype);
  visit_any(dtype, [&](auto zero) {
    using T = decltype(zero);
    T* p = t.data<T>();
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(start + static_cast<double>(i) * step);
  });
  return t;
}

Tensor from_vector(const std::vector<double>& values, const Shape& shape, DType dtype) {
  if (numel_of(shape) != static_cast<int64_t>(values.size()))
    fail("from_vector: ", values.size(), " values do not fill shape ", shape_str(shape));
  Tensor t = Tensor::empty(shape, dtype);
  visit_any(dtype, [&](auto zero) {
    using T = decltype(zero);
    T* p = t.data<T>();
    for (size_t i = 0; i < values.size(); ++i) p[i] = static_cast<T>(values[i]);
  });
  return t;
}

Tensor from_vector(const std::vector<double>& values, DType dtype) {
  return from_vector(values, {static_cast<int64_t>(values.size())}, dtype);
}

Tensor from_indices(const std::vector<int64_t>& values, const Shape& shape) {
  if (numel_of(shape) != static_cast<int64_t>(values.size()))
    fail("from_indices: ", values.size(), " values do not fill shape ", shape_str(shape));
  Tensor t = Tensor::empty(shape, DType::Int64);
  std::copy(values.begin(), values.end(), t.data<int64_t>());
  return t;
}

Tensor rand(const Shape& shape, Generator& gen, DType dtype, double low, double high) {
  Tensor t = Tensor::empty(shape, dtype);
  visit_float(dtype, "rand", [&](auto zero) {
    using T = decltype(zero);
    T* p = t.data<T>();
    // Rounding can carry the largest draw up to `high`; keep the promise [low, high).
    const T top = std::nextafter(static_cast<T>(high), static_cast<T>(low));
    for (int64_t i = 0; i < t.numel(); ++i)
      p[i] = std::min(static_cast<T>(low + (high - low) * gen.uniform()), top);
  });
  return t;
}

Tensor randn(const Shape& shape, Generator& gen, DType dtype, double mean, double std) {
  Tensor t = Tensor::empty(shape, dtype);
  visit_float(dtype, "randn", [&](auto zero) {
    using T = decltype(zero);
    T* p = t.data<T>();
    int64_t n = t.numel();
    for (int64_t i = 0; i < n; i += 2) {
      double a, b;
      gen.normal_pair(a, b);
      p[i] = static_cast<T>(mean + std * a);
      if (i + 1 < n) p[i + 1] = static_cast<T>(mean + std * b);
    }
  });
  return t;
}

Tensor randint(int64_t low, int64_t high, const Shape& shape, Generator& gen) {
  if (high <= low) fail("randint: empty range [", low, ", ", high, ")");
  Tensor t = Tensor::empty(shape, DType::Int64);
  int64_t* p = t.data<int64_t>();
  // Unsigned arithmetic: high - low can exceed INT64_MAX.
  const uint64_t span = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  for (int64_t i = 0; i < t.numel(); ++i)
    p[i] =
        static_cast<int64_t>(static_cast<uint64_t>(low) + static_cast<uint64_t>(gen.below(span)));
  return t;
}

}  // namespace gradflow
