// The format's dtypes beyond gradflow's own: headers with any of them are
// read and checked; F16 and BF16 widen exactly to F32 when asked, and a model
// loads half-precision weights.
#include "nn/io/safetensors_dtypes.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "nn/io/atomic_file.h"
#include "nn/io/checkpoint.h"
#include "nn/io/safetensors.h"
#include "nn/models.h"

namespace gradflow::nn {
namespace {

// A file of one tensor per (dtype, shape, byte count), data filled with 0x11.
std::string file_of(const std::vector<std::tuple<std::string, std::string, int>>& tensors) {
  std::string json = "{", data;
  for (const auto& [dtype, shape, bytes] : tensors) {
    json += std::string(json.size() > 1 ? "," : "") + "\"t_" + dtype + "\":{\"dtype\":\"" + dtype +
            "\",\"shape\":" + shape + ",\"data_offsets\":[" + std::to_string(data.size()) + "," +
            std::to_string(data.size() + static_cast<size_t>(bytes)) + "]}";
    data += std::string(static_cast<size_t>(bytes), '\x11');
  }
  json += "}";
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((json.size() >> (8 * i)) & 0xff);
  return out + json + data;
}

std::string error_of(std::string_view bytes) {
  try {
    read_safetensors_header(bytes);
  } catch (const SafetensorsError& e) {
    return e.what();
  }
  return "";
}

TEST(SafetensorsDtypes, EveryDtypeOfTheFormatHasItsWidth) {
  EXPECT_EQ(safetensors_dtypes().size(), 20u);
  for (const char* code : {"BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "F8_E8M0"})
    EXPECT_EQ(find_safetensors_dtype(code)->bits, 8) << code;
  for (const char* code : {"I16", "U16", "F16", "BF16"})
    EXPECT_EQ(find_safetensors_dtype(code)->bits, 16) << code;
  for (const char* code : {"I32", "U32", "F32"})
    EXPECT_EQ(find_safetensors_dtype(code)->bits, 32) << code;
  for (const char* code : {"I64", "U64", "F64", "C64"})
    EXPECT_EQ(find_safetensors_dtype(code)->bits, 64) << code;
  EXPECT_EQ(find_safetensors_dtype("F4")->bits, 4);
  EXPECT_EQ(find_safetensors_dtype("F6_E2M3")->bits, 6);
  EXPECT_EQ(find_safetensors_dtype("F6_E3M2")->bits, 6);
  EXPECT_EQ(find_safetensors_dtype("bf16"), nullptr);
  EXPECT_EQ(find_safetensors_dtype("F8"), nullptr);
}

TEST(SafetensorsDtypes, HeadersOfAnyDtypeAreReadAndChecked) {
  const std::string bytes = file_of({{"BF16", "[2,3]", 12},
                                     {"I8", "[5]", 5},
                                     {"BOOL", "[]", 1},
                                     {"F4", "[2,2]", 2},
                                     {"F6_E3M2", "[4]", 3},
                                     {"F32", "[1]", 4}});
  const SafetensorsHeader header = read_safetensors_header(bytes);
  ASSERT_EQ(header.tensors.size(), 6u);
  EXPECT_EQ(header.tensors[0].name, "t_BF16");
  EXPECT_EQ(header.tensors[0].dtype, "BF16");
  EXPECT_EQ(header.tensors[0].shape, (Shape{2, 3}));
  EXPECT_EQ(header.tensors[0].end, 12u);
  EXPECT_EQ(header.tensors[3].dtype, "F4");
  EXPECT_EQ(header.tensors[5].begin, 23u);
  // Sizes are checked with each dtype's width, sub-byte types in whole bytes.
  EXPECT_NE(error_of(file_of({{"BF16", "[3]", 4}})).find("need 6 bytes"), std::string::npos);
  EXPECT_NE(error_of(file_of({{"F4", "[3]", 2}})).find("do not fill whole bytes"),
            std::string::npos);
  EXPECT_NE(error_of(file_of({{"F6_E2M3", "[4]", 4}})).find("need 3 bytes"), std::string::npos);
  EXPECT_NE(error_of(file_of({{"Q4_K", "[4]", 4}})).find("unsupported dtype Q4_K"),
            std::string::npos);
  EXPECT_NE(error_of(file_of({{"I8", "[4]", 5}})).find("need 4 bytes"), std::string::npos);
}

TEST(SafetensorsDtypes, HalfAndBfloat16WidenExactlyWhenAsked) {
  const uint16_t half[] = {0x3c00, 0xc000, 0x0001, 0x03ff, 0x7bff, 0x7c00, 0xfc00, 0x8000};
  const float want_half[] = {1.0f,     -2.0f,    0x1p-24f,  0x3ffp-24f,
                             65504.0f, INFINITY, -INFINITY, -0.0f};
  const uint16_t bf16[] = {0x3f80, 0x4049, 0x0001, 0xff80};
  const float want_bf16[] = {1.0f, 3.140625f, std::bit_cast<float>(0x00010000u), -INFINITY};
  std::string bytes = file_of({{"F16", "[8]", 16}, {"BF16", "[4]", 8}});
  const size_t data = bytes.size() - 24;
  std::memcpy(bytes.data() + data, half, sizeof half);
  std::memcpy(bytes.data() + data + 16, bf16, sizeof bf16);

  try {
    decode_safetensors(bytes);
    FAIL() << "no throw";
  } catch (const SafetensorsError& e) {
    EXPECT_NE(std::string(e.what()).find("unsupported dtype F16 for tensor 't_F16'"),
              std::string::npos)
        << e.what();
  }
  const SafetensorsFile file = decode_safetensors(bytes, HalfPrecision::kToFloat32);
  ASSERT_EQ(file.tensors.size(), 2u);
  const Tensor& h = file.tensors[0].second;
  ASSERT_EQ(h.dtype(), DType::Float32);
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(std::bit_cast<uint32_t>(h.data<float>()[i]), std::bit_cast<uint32_t>(want_half[i]))
        << "half " << std::hex << half[i];
  const Tensor& b = file.tensors[1].second;
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(std::bit_cast<uint32_t>(b.data<float>()[i]), std::bit_cast<uint32_t>(want_bf16[i]));
  EXPECT_TRUE(std::isnan(half_to_float(0x7e00)));
  EXPECT_TRUE(std::isnan(bfloat16_to_float(0x7fc1)));
}

// A model's weights exported in bfloat16 (as from another framework) load,
// each the float32 whose top half it is.
TEST(SafetensorsDtypes, LoadWeightsTakesBfloat16) {
  ModelConfig c;
  c.vocab = 7, c.d_model = 8, c.heads = 2, c.layers = 1, c.d_ff = 16, c.max_len = 5;
  Generator gen(1);
  DecoderLM source(c, gen), target(c, gen);
  std::string json = "{", data;
  std::vector<std::vector<float>> want;
  for (const auto& [name, t] : source.state_dict()) {
    std::string shape;
    for (int64_t s : t.shape()) shape += (shape.empty() ? "" : ",") + std::to_string(s);
    json += std::string(json.size() > 1 ? "," : "") + "\"" + name +
            "\":{\"dtype\":\"BF16\",\"shape\":[" + shape + "],\"data_offsets\":[" +
            std::to_string(data.size()) + "," + std::to_string(data.size() + 2 * t.numel()) + "]}";
    want.emplace_back();
    for (double v : t.to_vector()) {
      const auto bits = static_cast<uint16_t>(std::bit_cast<uint32_t>(static_cast<float>(v)) >> 16);
      data.append(reinterpret_cast<const char*>(&bits), 2);
      want.back().push_back(bfloat16_to_float(bits));
    }
  }
  json += "}";
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((json.size() >> (8 * i)) & 0xff);
  const std::string path =
      (std::filesystem::temp_directory_path() / ("gradflow_bf16_" + std::to_string(::getpid())))
          .string();
  write_file_atomic(path, bytes + json + data);
  load_weights(path, target);
  std::filesystem::remove(path);
  size_t i = 0;
  for (const auto& [name, t] : target.state_dict()) {
    std::vector<float> got;
    for (double v : t.to_vector()) got.push_back(static_cast<float>(v));
    EXPECT_EQ(got, want[i++]) << name;
  }
}

}  // namespace
}  // namespace gradflow::nn
