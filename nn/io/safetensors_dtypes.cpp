#include "nn/io/safetensors_dtypes.h"

#include <array>
#include <bit>
#include <cmath>

namespace gradflow::nn {
namespace {

constexpr std::array<SafetensorsDtypeInfo, 20> kDtypes = {
    {{"BOOL", 8}, {"F4", 4},      {"F6_E2M3", 6}, {"F6_E3M2", 6}, {"U8", 8},
     {"I8", 8},   {"F8_E5M2", 8}, {"F8_E4M3", 8}, {"F8_E8M0", 8}, {"I16", 16},
     {"U16", 16}, {"F16", 16},    {"BF16", 16},   {"I32", 32},    {"U32", 32},
     {"F32", 32}, {"F64", 64},    {"I64", 64},    {"U64", 64},    {"C64", 64}}};

}  // namespace

std::span<const SafetensorsDtypeInfo> safetensors_dtypes() { return kDtypes; }

const SafetensorsDtypeInfo* find_safetensors_dtype(std::string_view code) {
  for (const SafetensorsDtypeInfo& d : kDtypes)
    if (d.code == code) return &d;
  return nullptr;
}

// binary16: 1 sign bit, 5 exponent bits (bias 15), 10 fraction bits. Every
// value is a float32 value, so the conversion is exact.
float half_to_float(uint16_t bits) {
  const float sign = (bits & 0x8000) ? -1.0f : 1.0f;
  const int exponent = (bits >> 10) & 0x1f;
  const int fraction = bits & 0x3ff;
  if (exponent == 0x1f)  // infinity, or NaN with its payload
    return std::bit_cast<float>(uint32_t(bits & 0x8000) << 16 | 0x7f800000u |
                                uint32_t(fraction) << 13);
  if (exponent == 0) return sign * std::ldexp(static_cast<float>(fraction), -24);  // subnormal
  return sign * std::ldexp(static_cast<float>(fraction | 0x400), exponent - 25);
}

// bfloat16 is the top half of a float32.
float bfloat16_to_float(uint16_t bits) { return std::bit_cast<float>(uint32_t(bits) << 16); }

}  // namespace gradflow::nn
