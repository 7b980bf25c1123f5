// The element types of the safetensors format, as the reference implementation
// (huggingface/safetensors, its Dtype enum) lists them, with their widths:
//
//   BOOL U8 I8 F8_E5M2 F8_E4M3 F8_E8M0   8 bits      F4          4 bits
//   I16 U16 F16 BF16                     16 bits     F6_E2M3     6 bits
//   I32 U32 F32                          32 bits     F6_E3M2     6 bits
//   I64 U64 F64 C64                      64 bits
//
// A tensor of n elements of b bits takes n b / 8 bytes, and n b must be a
// multiple of 8 (the packed 4- and 6-bit types fill whole bytes). gradflow
// computes in F32, F64 and I64; the rest can be listed (inspect_checkpoint),
// and F16 and BF16 widened to F32 exactly when loading weights.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace gradflow::nn {

struct SafetensorsDtypeInfo {
  std::string_view code;  // as in the header: "BF16"
  int bits;               // per element
};

// Every dtype above, in the reference's order.
std::span<const SafetensorsDtypeInfo> safetensors_dtypes();

// The dtype named `code` (case-sensitive, as the format is), or nullptr.
const SafetensorsDtypeInfo* find_safetensors_dtype(std::string_view code);

// IEEE 754 binary16 and bfloat16 to float32: exact, NaN and infinity kept.
float half_to_float(uint16_t bits);
float bfloat16_to_float(uint16_t bits);

}  // namespace gradflow::nn
