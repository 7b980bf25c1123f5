// The safetensors reader on any bytes: read_safetensors_header and decode_safetensors give a file
// or throw SafetensorsError (not another Error: every rule is checked before a JSON accessor
// could throw). When both succeed they agree, and each tensor holds exactly the bytes its
// data_offsets name (F16 and BF16 widened to float32, as load_weights asks).
#include <algorithm>
#include <cstring>
#include <optional>

#include "nn/io/safetensors.h"
#include "tests/fuzz/fuzz_input.h"

using namespace gradflow;
using namespace gradflow::nn;

namespace {

template <class Read>
auto attempt(Read read) -> std::optional<decltype(read())> {
  try {
    return read();
  } catch (const SafetensorsError& e) {
    fuzz::check_one_line(e.what());
    return std::nullopt;
  }
}

void check_agrees(const SafetensorsHeader& header, const SafetensorsFile& file,
                  std::string_view bytes) {
  if (header.metadata != file.metadata || header.tensors.size() != file.tensors.size())
    fuzz::broken("the header and the decoded file differ");
  // The tensors tile the data buffer, which ends the file: it starts where the longest ends.
  uint64_t data_bytes = 0;
  for (const SafetensorsEntry& e : header.tensors) data_bytes = std::max(data_bytes, e.end);
  const size_t data_start = bytes.size() - static_cast<size_t>(data_bytes);
  for (size_t i = 0; i < file.tensors.size(); ++i) {
    const SafetensorsEntry& entry = header.tensors[i];
    const auto& [name, tensor] = file.tensors[i];
    if (name != entry.name || tensor.shape() != entry.shape)
      fuzz::broken("tensor " + name + " differs from its header entry");
    if (entry.dtype == "F16" || entry.dtype == "BF16") continue;
    const size_t n = entry.end - entry.begin;
    if (static_cast<size_t>(tensor.numel()) * dtype_size(tensor.dtype()) != n ||
        (n > 0 &&
         std::memcmp(tensor.storage()->data(), bytes.data() + data_start + entry.begin, n) != 0))
      fuzz::broken("tensor " + name + " does not hold its bytes");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes = fuzz::text_of(data, size);
  const auto header = attempt([&] { return read_safetensors_header(bytes); });
  const auto file = attempt([&] { return decode_safetensors(bytes, HalfPrecision::kToFloat32); });
  if (file && !header) fuzz::broken("decode_safetensors takes a file whose header is refused");
  if (file) check_agrees(*header, *file, bytes);
  // Refusing half precision changes only which dtypes are accepted.
  const auto strict = attempt([&] { return decode_safetensors(bytes); });
  if (strict && !file) fuzz::broken("decoding with kRefuse takes what kToFloat32 refuses");
  return 0;
}
