// Reading and writing the safetensors format (huggingface/safetensors), so checkpoints move
// between gradflow, PyTorch and the other frameworks that read it.
//
// Layout of a file:
//   8 bytes   N, the header length, a little-endian u64
//   N bytes   a UTF-8 JSON object, possibly padded with trailing spaces:
//               {"__metadata__": {"k": "v", ...},                      (optional)
//                "<name>": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...}
//             offsets count bytes from the start of the data buffer below
//   the rest  the data buffer: each tensor's elements, little-endian, row-major; the tensors'
//             [begin, end) ranges tile it from 0 to its end with no gap, overlap or extra byte
//
// The header of a file with any of the format's dtypes (safetensors_dtypes.h) can be read and
// checked; tensors are decoded in the dtypes gradflow has, F32, F64 and I64, and on request F16
// and BF16 widened to F32. Files come from anywhere, so reading checks every rule above before
// it allocates a tensor, and never trusts a length.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tensor/error.h"
#include "tensor/tensor.h"

namespace gradflow::nn {

using SafetensorsMetadata = std::vector<std::pair<std::string, std::string>>;

// A decoded file: tensors in the order of the header's keys, metadata in its order.
struct SafetensorsFile {
  NamedTensors tensors;
  SafetensorsMetadata metadata;
};

// A tensor's entry in the header: its dtype as the file names it ("BF16") and where its bytes
// lie in the data buffer.
struct SafetensorsEntry {
  std::string name, dtype;
  Shape shape;
  uint64_t begin = 0, end = 0;  // data_offsets
};

// A file's header, in the header's order.
struct SafetensorsHeader {
  std::vector<SafetensorsEntry> tensors;
  SafetensorsMetadata metadata;
};

// What decoding does with F16 and BF16 tensors: refuse them by name, or widen them to F32
// (exactly: every half and bfloat16 value is a float).
enum class HalfPrecision { kRefuse, kToFloat32 };

// Thrown for a file that breaks the format, or tensors that cannot be written. One line:
//   safetensors: unsupported dtype BF16 for tensor 'w' (gradflow reads F32, F64 and I64)
class SafetensorsError : public Error {
 public:
  explicit SafetensorsError(std::string problem);
  const std::string& problem() const { return problem_; }  // the message without the prefix

 private:
  std::string problem_;
};

// The reference implementation's limit on N: larger headers are refused before being read.
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;
// The most dimensions a tensor may have, as in NumPy 2. The header is parsed with this limit on
// its arrays (shapes and offsets), so that a shape of a million zeros, a valid empty tensor but
// for the limit, is refused before the parser holds 40 bytes of memory for each 2 bytes of it.
inline constexpr size_t kMaxSafetensorsRank = 64;
// load_safetensors reads no bigger file, so a wrong path (/dev/zero) cannot exhaust memory.
inline constexpr uint64_t kMaxSafetensorsFileBytes = uint64_t{64} << 30;

// The format's name for a dtype: "F32", "F64" or "I64".
std::string_view safetensors_dtype(DType dtype);

// The bytes of a safetensors file holding `tensors` (made contiguous when they are not), with
// their names as keys in the given order. "__metadata__" is written only if `metadata` is not
// empty. The header is padded with spaces so the data buffer starts at a multiple of 8 bytes,
// and the data of 8-byte dtypes comes before that of F32 so every tensor is aligned to its
// element size, as in the reference writer.
// REQUIRES (else SafetensorsError): defined tensors of at most kMaxSafetensorsRank dimensions;
// names and metadata keys non-empty, unique, valid UTF-8 and not "__metadata__"; metadata values
// valid UTF-8.
std::string encode_safetensors(const NamedTensors& tensors,
                               const SafetensorsMetadata& metadata = {});

// Reads and checks the header of a whole file held in memory, with tensors of any of the
// format's dtypes, against the file's length; allocates no tensor. Throws SafetensorsError
// naming the first broken rule (and the tensor, where there is one).
SafetensorsHeader read_safetensors_header(std::string_view bytes);

// Decodes a whole file held in memory; throws SafetensorsError naming the first broken rule
// (and the tensor, where there is one), or a dtype gradflow does not compute in. Allocates only
// after every check has passed, and then no more than bytes.size() for the tensors (twice that
// for F16 and BF16 widened to F32).
SafetensorsFile decode_safetensors(std::string_view bytes,
                                   HalfPrecision half = HalfPrecision::kRefuse);

// encode_safetensors, then write_file_atomic: `path` holds the old file or the new, never a mix.
void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const SafetensorsMetadata& metadata = {});

// read_file (Error if unreadable or above max_bytes), then decode_safetensors; the
// SafetensorsError message then names the file too.
SafetensorsFile load_safetensors(const std::string& path,
                                 uint64_t max_bytes = kMaxSafetensorsFileBytes,
                                 HalfPrecision half = HalfPrecision::kRefuse);

// The header of the file at `path`, checked as read_safetensors_header does. Of a regular file
// only the length field and the header are read (a 3 GiB checkpoint costs its header's bytes),
// and the tensors' offsets are checked against the file's length; anything else (a pipe) is read
// whole, up to max_bytes.
SafetensorsHeader load_safetensors_header(const std::string& path,
                                          uint64_t max_bytes = kMaxSafetensorsFileBytes);

}  // namespace gradflow::nn
