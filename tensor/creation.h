// Making tensors: constants, ranges, copies of host data and random fills.
#pragma once

#include <concepts>
#include <vector>

#include "tensor/random.h"
#include "tensor/tensor.h"

namespace gradflow {

Tensor zeros(const Shape& shape, DType dtype = DType::Float32);
Tensor ones(const Shape& shape, DType dtype = DType::Float32);
Tensor full(const Shape& shape, double value, DType dtype = DType::Float32);
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor scalar_tensor(double value, DType dtype = DType::Float32);  // shape ()

// [start, start + step, ...) up to but excluding end.
Tensor arange(double start, double end, double step = 1, DType dtype = DType::Float32);
inline Tensor arange(double end, DType dtype = DType::Float32) { return arange(0, end, 1, dtype); }

// Row-major values; the shape defaults to 1-D.
Tensor from_vector(const std::vector<double>& values, const Shape& shape,
                   DType dtype = DType::Float32);
Tensor from_vector(const std::vector<double>& values, DType dtype = DType::Float32);
Tensor from_indices(const std::vector<int64_t>& values, const Shape& shape);  // Int64
// Integers give an Int64 tensor (token ids, labels): from_vector(ids, {B, T}).
// A template so that a braced list, from_vector({1, 2, 3}, ...), still means
// the double overload above and is not ambiguous.
template <std::same_as<std::vector<int64_t>> Ints>
Tensor from_vector(const Ints& values, const Shape& shape) {
  return from_indices(values, shape);
}
template <std::same_as<std::vector<int64_t>> Ints>
Tensor from_vector(const Ints& values) {
  return from_indices(values, {static_cast<int64_t>(values.size())});
}

// Uniform in [low, high), standard normal times std plus mean, integers in [low, high).
Tensor rand(const Shape& shape, Generator& gen = default_generator(), DType dtype = DType::Float32,
            double low = 0, double high = 1);
Tensor randn(const Shape& shape, Generator& gen = default_generator(), DType dtype = DType::Float32,
             double mean = 0, double std = 1);
Tensor randint(int64_t low, int64_t high, const Shape& shape, Generator& gen = default_generator());

}  // namespace gradflow
