// Helpers shared by the tensor tests. Expected values are computed here from
// a tensor's raw (storage, shape, strides, offset) layout, never through the
// library's kernels, so a test compares two independent computations.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "tensor/creation.h"
#include "tensor/error.h"
#include "tensor/tensor.h"

namespace gradflow::testing {

using Index = std::vector<int64_t>;

// Calls fn(index) for every position of `shape` in row-major order.
inline void for_each_index(const Shape& shape, const std::function<void(const Index&)>& fn) {
  if (numel_of(shape) == 0) return;
  Index index(shape.size(), 0);
  while (true) {
    fn(index);
    size_t axis = shape.size();
    while (axis > 0) {
      --axis;
      if (++index[axis] < shape[axis]) break;
      index[axis] = 0;
      if (axis == 0) return;
    }
    if (shape.empty()) return;
  }
}

// The element at `index`, read straight from storage through the strides.
inline double element(const Tensor& t, const Index& index) {
  int64_t offset = t.offset();
  for (size_t a = 0; a < index.size(); ++a) offset += index[a] * t.strides()[a];
  switch (t.dtype()) {
    case DType::Float32:
      return static_cast<const float*>(t.storage()->data())[offset];
    case DType::Float64:
      return static_cast<const double*>(t.storage()->data())[offset];
    case DType::Int64:
      return static_cast<double>(static_cast<const int64_t*>(t.storage()->data())[offset]);
  }
  return 0;
}

// The index into a tensor of `shape` that broadcasting maps `out_index` to.
inline Index broadcast_index(const Index& out_index, const Shape& shape) {
  Index index(shape.size());
  size_t lead = out_index.size() - shape.size();
  for (size_t a = 0; a < shape.size(); ++a) index[a] = shape[a] == 1 ? 0 : out_index[lead + a];
  return index;
}

// Every element of t, row-major, read through the strides.
inline std::vector<double> elements(const Tensor& t) {
  std::vector<double> out;
  for_each_index(t.shape(), [&](const Index& i) { out.push_back(element(t, i)); });
  return out;
}

// Checks shape and values; tol is absolute plus relative to |expected|.
inline void expect_tensor(const Tensor& t, const Shape& shape, const std::vector<double>& expected,
                          double tol = 0) {
  ASSERT_TRUE(t.defined());
  ASSERT_EQ(t.shape(), shape) << shape_str(t.shape()) << " vs " << shape_str(shape);
  std::vector<double> got = elements(t);
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << "at flat index " << i;
    } else if (tol == 0 || std::isinf(expected[i])) {
      EXPECT_EQ(got[i], expected[i]) << "at flat index " << i;
    } else {
      EXPECT_NEAR(got[i], expected[i], tol * (1 + std::abs(expected[i]))) << "at flat index " << i;
    }
  }
}

// Distinct, irregular values (no two equal, mixed signs) for inputs.
inline std::vector<double> sample_values(int64_t n, double scale = 1, int64_t seed = 1) {
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i)
    v[i] = scale * (std::sin(0.7 * static_cast<double>(i + 1) * static_cast<double>(seed)) +
                    0.001 * static_cast<double>(i));
  return v;
}

inline Tensor sample(const Shape& shape, DType dtype = DType::Float64, int64_t seed = 1) {
  return from_vector(sample_values(numel_of(shape), 1, seed), shape, dtype);
}

// The message of the gradflow::Error that fn throws ("" and a failure if none).
template <class F>
std::string error_message(F&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a gradflow::Error";
  return "";
}

inline bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// Same dtype, shape and bytes (NaN payloads included, which == on values cannot check).
inline bool same_bytes(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  Tensor ca = a.contiguous(), cb = b.contiguous();
  auto bytes = [](const Tensor& t) {
    return static_cast<const char*>(t.storage()->data()) + t.offset() * dtype_size(t.dtype());
  };
  return std::memcmp(bytes(ca), bytes(cb), ca.numel() * dtype_size(ca.dtype())) == 0;
}

// The message of the Error that `f` throws, or "" if it returns.
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace gradflow::testing
