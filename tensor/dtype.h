// Element types. Float32 is the default for training; Float64 is for the
// finite-difference gradient checks; Int64 holds indices (token ids, argmax).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tensor/error.h"

namespace gradflow {

enum class DType { Float32, Float64, Int64 };

inline size_t dtype_size(DType t) { return t == DType::Float32 ? 4 : 8; }

inline std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::Float32:
      return "float32";
    case DType::Float64:
      return "float64";
    case DType::Int64:
      return "int64";
  }
  return "?";
}

template <class T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() {
  return DType::Float32;
}
template <>
constexpr DType dtype_of<double>() {
  return DType::Float64;
}
template <>
constexpr DType dtype_of<int64_t>() {
  return DType::Int64;
}

// Calls fn(T{}) with T the C++ type of a floating dtype, so one templated
// kernel body serves float and double. `op` names the caller in the error.
template <class Fn>
decltype(auto) visit_float(DType t, std::string_view op, Fn&& fn) {
  switch (t) {
    case DType::Float32:
      return fn(float{});
    case DType::Float64:
      return fn(double{});
    default:
      fail(op, ": expected a floating dtype, got ", dtype_name(t));
  }
}

// Same for every dtype, for kernels that only move data (copy, cast, index).
template <class Fn>
decltype(auto) visit_any(DType t, Fn&& fn) {
  switch (t) {
    case DType::Float32:
      return fn(float{});
    case DType::Float64:
      return fn(double{});
    case DType::Int64:
      return fn(int64_t{});
  }
  return fn(float{});
}

}  // namespace gradflow
