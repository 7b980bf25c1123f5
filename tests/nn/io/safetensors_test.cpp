#include "nn/io/safetensors.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "tensor/creation.h"

namespace gradflow::nn {
namespace {

// The tensor's elements in row-major order, as raw bytes, for bitwise comparison.
std::string bytes_of(const Tensor& t) {
  const Tensor c = t.contiguous();
  const size_t n = static_cast<size_t>(c.numel()) * dtype_size(c.dtype());
  if (n == 0) return "";
  return std::string(
      static_cast<const char*>(c.storage()->data()) + c.offset() * dtype_size(c.dtype()), n);
}

std::string u64_le(uint64_t v) {
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
  return out;
}

// A file made by hand: the length field, `header` and `data` bytes.
std::string file_of(const std::string& header, size_t data_bytes = 0) {
  return u64_le(header.size()) + header + std::string(data_bytes, '\x01');
}

// The message of the SafetensorsError that decoding throws, or "" if it decodes.
std::string error_of(std::string_view bytes) {
  try {
    decode_safetensors(bytes);
  } catch (const SafetensorsError& e) {
    return e.what();
  }
  return "";
}

// Expects decoding to fail with a one-line message holding `part`.
void expect_rejected(std::string_view bytes, const std::string& part) {
  const std::string message = error_of(bytes);
  EXPECT_EQ(message.rfind("safetensors: ", 0), 0u) << "'" << message << "' for " << part;
  EXPECT_NE(message.find(part), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

// A header of one tensor "x" with the given entry body.
std::string one(const std::string& body) { return "{\"x\":{" + body + "}}"; }

NamedTensors sample_tensors() {
  Tensor f32 = from_vector({1.5, -0.0, 3.25e-40, 7, 8, 9}, {2, 3});
  const uint32_t nan_bits = 0x7fc01234;  // a NaN with a payload must survive bit for bit
  std::memcpy(f32.data<float>() + 5, &nan_bits, 4);
  Tensor f64 =
      from_vector({1.0 / 3, -1e300, std::numeric_limits<double>::infinity()}, {3}, DType::Float64);
  Tensor i64 = from_indices({std::numeric_limits<int64_t>::min(), -1, 0, 1ll << 40}, {2, 2});
  Tensor transposed = arange(12, DType::Float64).view({3, 4}).transpose(0, 1);  // not contiguous
  return {{"layer.weight", f32},
          {"f64", f64},
          {"ids", i64},
          {"scalar", scalar_tensor(2.5)},
          {"empty", zeros({0, 3})},
          {"transposed", transposed},
          {"odd", from_vector({1, 2, 3})}};
}

TEST(Safetensors, RoundTripIsBitwiseAndKeepsOrder) {
  const NamedTensors in = sample_tensors();
  const SafetensorsFile out = decode_safetensors(encode_safetensors(in));
  ASSERT_EQ(out.tensors.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    SCOPED_TRACE(in[i].first);
    EXPECT_EQ(out.tensors[i].first, in[i].first);
    EXPECT_EQ(out.tensors[i].second.dtype(), in[i].second.dtype());
    EXPECT_EQ(out.tensors[i].second.shape(), in[i].second.shape());
    EXPECT_TRUE(out.tensors[i].second.is_contiguous());
    EXPECT_EQ(bytes_of(out.tensors[i].second), bytes_of(in[i].second));
  }
  EXPECT_TRUE(out.metadata.empty());
}

TEST(Safetensors, MetadataRoundTrips) {
  const SafetensorsMetadata meta = {{"format", "pt"}, {"step", "1200"}, {"note", "é \"q\"\n"}};
  const std::string bytes = encode_safetensors({{"w", ones({2})}}, meta);
  EXPECT_EQ(decode_safetensors(bytes).metadata, meta);
  EXPECT_EQ(encode_safetensors({{"w", ones({2})}}).find("__metadata__"), std::string::npos);
}

TEST(Safetensors, DataStartsAlignedAndEveryTensorIsAligned) {
  for (int name_length = 1; name_length <= 16; ++name_length) {
    const NamedTensors in = {{std::string(name_length, 'n'), ones({3})},
                             {"d", ones({5}, DType::Float64)},
                             {"i", zeros({1}, DType::Int64)}};
    const std::string bytes = encode_safetensors(in);
    uint64_t header = 0;
    std::memcpy(&header, bytes.data(), 8);
    EXPECT_EQ((8 + header) % 8, 0u);
    EXPECT_EQ(bytes.find_last_not_of(' ', 8 + header - 1), bytes.find_last_of('}', 8 + header - 1));
    // F64 and I64 data go first, so the odd-sized F32 tensor cannot misalign them.
    EXPECT_NE(bytes.find("\"data_offsets\":[0,40]"), std::string::npos);
    EXPECT_NE(bytes.find("\"data_offsets\":[48,60]"), std::string::npos);
  }
}

TEST(Safetensors, MatchesTheReferenceWriterByteForByte) {
  // Expected bytes from the reference implementation's own tests (safetensors/src/tensor.rs).
  const std::string header = R"({"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}})";
  const std::string bytes = encode_safetensors({{"attn0", arange(6).view({1, 1, 2, 3})}});
  EXPECT_EQ(bytes.substr(0, 8 + 72), u64_le(72) + header + std::string(7, ' '));
  EXPECT_EQ(encode_safetensors({}), u64_le(8) + "{}      ");
  EXPECT_EQ(encode_safetensors({}, {{"framework", "pt"}}),
            u64_le(40) + R"({"__metadata__":{"framework":"pt"}})" + std::string(5, ' '));
}

TEST(Safetensors, AcceptsAnyOffsetOrderAndSharedZeroSizeOffsets) {
  const std::string header =
      R"({"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]},)"
      R"("z":{"dtype":"F64","shape":[0,4611686018427387904],"data_offsets":[4,4]},)"
      R"("a":{"dtype":"F32","shape":[],"data_offsets":[0,4]}})";
  const SafetensorsFile f = decode_safetensors(file_of(header + "  \n ", 8));
  ASSERT_EQ(f.tensors.size(), 3u);
  EXPECT_EQ(f.tensors[0].first, "b");
  EXPECT_EQ(f.tensors[1].second.shape(), (Shape{0, int64_t{1} << 62}));
  EXPECT_EQ(f.tensors[2].second.shape(), Shape{});
}

TEST(Safetensors, RejectsBadLengthFields) {
  for (size_t n = 0; n < 8; ++n) expect_rejected(std::string(n, '\0'), "too short");
  expect_rejected(u64_le(0) + "{}", "header length is 0");
  expect_rejected(u64_le(7) + "{}    ", "header length 7 exceeds the 6 bytes");
  const std::string ok = file_of("{}      ");
  expect_rejected(u64_le(ok.size()) + ok.substr(8), "exceeds");
  expect_rejected(u64_le(uint64_t{1} << 63) + "{}", "header length 9223372036854775808 exceeds");
  expect_rejected(u64_le(std::numeric_limits<uint64_t>::max()) + "{}", "exceeds");
  std::string huge = u64_le(kMaxSafetensorsHeaderBytes + 1);
  huge.resize(8 + kMaxSafetensorsHeaderBytes + 1, ' ');
  expect_rejected(huge, "exceeds the limit of 100000000");
}

TEST(Safetensors, RejectsHeadersThatAreNotJsonObjects) {
  expect_rejected(file_of("{\"a\xff\":1}"), "not valid UTF-8");
  expect_rejected(file_of("{\"a\":"), "cannot parse the header: json: ");
  expect_rejected(file_of("[]"), "does not start with '{'");
  expect_rejected(file_of(" {}"), "does not start with '{'");
  expect_rejected(file_of(R"({"x":1})"), "entry of tensor 'x' is a number, not an object");
  const std::string entry = R"({"dtype":"F32","shape":[],"data_offsets":[0,4]})";
  expect_rejected(file_of("{\"a\":" + entry + ",\"a\":" + entry + "}", 8), "duplicate key \"a\"");
}

TEST(Safetensors, RejectsBadFields) {
  expect_rejected(file_of(one(R"("dtype":"F32","shape":[])")),
                  "tensor 'x' has no \"data_offsets\"");
  expect_rejected(file_of(one(R"("shape":[],"data_offsets":[0,0])")), "no \"dtype\"");
  expect_rejected(file_of(one(R"("dtype":"F32","shape":[],"data_offsets":[0,4],"foo":1)"), 4),
                  "tensor 'x' has an unexpected field 'foo'");
  expect_rejected(file_of(one(R"("dtype":"BF16","shape":[],"data_offsets":[0,2])"), 2),
                  "unsupported dtype BF16 for tensor 'x'");
  expect_rejected(file_of(one(R"("dtype":"f32","shape":[],"data_offsets":[0,4])"), 4),
                  "unsupported dtype 'f32'");
  expect_rejected(file_of(one(R"("dtype":5,"shape":[],"data_offsets":[0,4])"), 4),
                  "dtype of tensor 'x' is a number");
}

TEST(Safetensors, RejectsBadShapes) {
  const auto with_shape = [](const std::string& shape) {
    return file_of(one(R"("dtype":"F64","shape":)" + shape + R"(,"data_offsets":[0,8])"), 8);
  };
  expect_rejected(with_shape("3"), "shape of tensor 'x' is a number");
  expect_rejected(with_shape("[-1]"), "holds -1, not a non-negative integer");
  expect_rejected(with_shape("[1.0]"), "holds 1.0, not a non-negative integer");
  expect_rejected(with_shape("[\"1\"]"), "holds a string");
  expect_rejected(with_shape("[9223372036854775808]"), "above 2^63 - 1");
  expect_rejected(with_shape("[4611686018427387904,4]"), "multiply past 2^63 - 1");
  expect_rejected(with_shape("[4611686018427387904,4611686018427387904,0]"), "multiply past");
  expect_rejected(with_shape("[2305843009213693952]"), "too many bytes");  // 2^61 * 8 = 2^64
  expect_rejected(with_shape("[2]"), "(8 bytes) but dtype F64 and shape (2) need 16 bytes");
}

TEST(Safetensors, ShapesUpToTheRankLimit) {
  const auto zeros_shape = [](size_t rank) {
    std::string shape;
    for (size_t i = 0; i < rank; ++i) shape += i ? ",0" : "0";
    return file_of(one(R"("dtype":"F32","shape":[)" + shape + R"(],"data_offsets":[0,0])"));
  };
  const SafetensorsFile f = decode_safetensors(zeros_shape(kMaxSafetensorsRank));
  EXPECT_EQ(f.tensors.at(0).second.shape(), Shape(kMaxSafetensorsRank, 0));
  expect_rejected(zeros_shape(kMaxSafetensorsRank + 1), "array of more than 64 elements");
  expect_rejected(zeros_shape(1'000'000), "array of more than 64 elements at byte 157");
  const Shape ones_64(kMaxSafetensorsRank, 1);
  EXPECT_EQ(
      decode_safetensors(encode_safetensors({{"x", ones(ones_64)}})).tensors.at(0).second.shape(),
      ones_64);
}

TEST(Safetensors, RejectsBadOffsets) {
  const auto with_offsets = [](const std::string& offsets, size_t data) {
    return file_of(one(R"("dtype":"F32","shape":[1],"data_offsets":)" + offsets), data);
  };
  expect_rejected(with_offsets("4", 4), "not an array of two integers");
  expect_rejected(with_offsets("[0,4,8]", 4), "not an array of two integers");
  expect_rejected(with_offsets("[-4,0]", 4), "not two non-negative integers");
  expect_rejected(with_offsets("[0,4.0]", 4), "not two non-negative integers");
  expect_rejected(with_offsets("[8,4]", 8), "end before they begin");
  expect_rejected(with_offsets("[18446744073709551612,18446744073709551615]", 4),
                  "need 4 bytes");  // 3 bytes: a wrapped-around end must not pass as 4
  expect_rejected(with_offsets("[0,4]", 2), "beyond the end of the 2-byte data buffer");
  expect_rejected(with_offsets("[4,8]", 8), "bytes [0, 4) of the data buffer belong to no tensor");
  expect_rejected(with_offsets("[0,4]", 12), "8 trailing bytes");
  const std::string two = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                          R"("b":{"dtype":"F32","shape":[2],"data_offsets":)";
  expect_rejected(file_of(two + "[4,12]}}", 12), "tensor 'b' [4, 12) overlaps that of tensor 'a'");
  expect_rejected(file_of(two + "[12,20]}}", 20), "bytes [8, 12)");
}

TEST(Safetensors, RejectsBadMetadataAndQuotesNames) {
  expect_rejected(file_of(R"({"__metadata__":"x"})"), "__metadata__ is a string");
  expect_rejected(file_of(R"({"__metadata__":{"k":1}})"), "value for key 'k' is a number");
  expect_rejected(file_of(R"({"__metadata__":{"k":{}}})"), "is an object, not a string");
  expect_rejected(file_of(R"({"a\nb'":1})"), "tensor 'a\\x0ab\\'' is a number");
}

// Every prefix of a valid file, and every single-byte change, is rejected or read: never a crash.
TEST(Safetensors, TruncatedAndCorruptedFilesNeverCrash) {
  const std::string bytes =
      encode_safetensors({{"a", arange(3)}, {"b", ones({2}, DType::Int64)}}, {{"k", "v"}});
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_THROW(decode_safetensors(std::string_view(bytes).substr(0, n)), SafetensorsError) << n;
  }
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (int v : {0x00, 0x20, 0x22, 0x30, 0x39, 0x7b, 0x7d, 0x80, 0xff}) {
      std::string bad = bytes;
      bad[i] = static_cast<char>(v);
      try {
        decode_safetensors(bad);
      } catch (const SafetensorsError&) {
      }
    }
  }
}

TEST(Safetensors, RejectsWhatCannotBeWritten) {
  const auto write_error = [](const NamedTensors& t, const SafetensorsMetadata& m = {}) {
    try {
      encode_safetensors(t, m);
    } catch (const SafetensorsError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(write_error({{"a", ones({1})}, {"a", ones({2})}}).find("duplicate tensor name 'a'"),
            std::string::npos);
  EXPECT_NE(write_error({{"", ones({1})}}).find("empty name"), std::string::npos);
  EXPECT_NE(write_error({{"__metadata__", ones({1})}}).find("reserved"), std::string::npos);
  EXPECT_NE(write_error({{"a", Tensor()}}).find("undefined"), std::string::npos);
  EXPECT_NE(write_error({{"\xff", ones({1})}}).find("not valid UTF-8"), std::string::npos);
  EXPECT_NE(write_error({{"r", ones(Shape(kMaxSafetensorsRank + 1, 1))}})
                .find("tensor 'r' has 65 dimensions, more than the 64 a file may hold"),
            std::string::npos);
  EXPECT_NE(write_error({}, {{"k", "1"}, {"k", "2"}}).find("duplicate metadata key 'k'"),
            std::string::npos);
}

TEST(Safetensors, SavesAndLoadsFiles) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("gradflow_st_" + std::to_string(::getpid()) + ".safetensors"))
                               .string();
  save_safetensors(path, {{"w", from_vector({1, 2, 3, 4}, {2, 2})}}, {{"format", "pt"}});
  const SafetensorsFile f = load_safetensors(path);
  ASSERT_EQ(f.tensors.size(), 1u);
  EXPECT_EQ(f.tensors[0].second.to_vector(), (std::vector<double>{1, 2, 3, 4}));
  EXPECT_EQ(f.metadata, (SafetensorsMetadata{{"format", "pt"}}));
  EXPECT_THROW(load_safetensors(path, 16), Error);  // above the size limit
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 1);
  try {
    load_safetensors(path);
    ADD_FAILURE() << "a truncated file loaded";
  } catch (const SafetensorsError& e) {
    EXPECT_NE(std::string(e.what()).find("\"" + path + "\": "), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace gradflow::nn
