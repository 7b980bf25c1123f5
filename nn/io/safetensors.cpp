// safetensors encoding and decoding. decode_safetensors works in two passes: the first reads the
// header into Infos and checks every rule (each check names the rule and the tensor), the second
// allocates the tensors and copies their bytes, and runs only when nothing can fail any more.
#include "nn/io/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <numeric>
#include <optional>
#include <sstream>

#include "nn/io/atomic_file.h"
#include "nn/io/json.h"
#include "nn/io/safetensors_dtypes.h"

namespace gradflow::nn {

std::string_view safetensors_dtype(DType dtype) {
  switch (dtype) {
    case DType::Float32:
      return "F32";
    case DType::Float64:
      return "F64";
    case DType::Int64:
      return "I64";
  }
  return "?";
}

// Tensor bytes are copied as they lie in memory, which is the file's byte order only on a
// little-endian machine. A big-endian port would byte-swap each element in encode and decode.
static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

SafetensorsError::SafetensorsError(std::string problem)
    : Error("safetensors: " + problem), problem_(std::move(problem)) {}

namespace {

constexpr uint64_t kLengthBytes = 8;  // the u64 header length before the header
constexpr std::string_view kMetadataKey = "__metadata__";
constexpr uint64_t kInt64Max = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

template <class... Parts>
[[noreturn]] void reject(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  throw SafetensorsError(out.str());
}

bool is_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t length = json::utf8_sequence_length(s.substr(i));
    if (length == 0) return false;
    i += length;
  }
  return true;
}

// A name from a file, in quotes, made printable and short enough for a one-line message.
std::string quote(std::string_view s) {
  constexpr size_t kMaxShown = 80;
  std::string out = "'";
  for (size_t i = 0; i < s.size();) {
    if (i >= kMaxShown) {
      out += "...";
      break;
    }
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t length = json::utf8_sequence_length(s.substr(i));
    if (c == '\'' || c == '\\') {
      out += {'\\', static_cast<char>(c)};
      i += 1;
    } else if (length == 0 || c < 0x20 || c == 0x7f) {
      constexpr char kHex[] = "0123456789abcdef";
      out += {'\\', 'x', kHex[c >> 4], kHex[c & 15]};
      i += 1;
    } else {
      out += s.substr(i, length);
      i += length;
    }
  }
  return out + "'";
}

// "(2, 3)", or "(16 sizes: 1, ...)" past 8 dimensions: a header may hold millions of them.
std::string shape_text(const Shape& shape) {
  constexpr size_t kMaxShown = 8;
  if (shape.size() <= kMaxShown) return shape_str(shape);
  std::ostringstream out;  // not operator+, which trips g++ 12's -Wrestrict false positive
  out << "(" << shape.size() << " sizes: " << shape[0] << ", ...)";
  return out.str();
}

std::optional<DType> dtype_of_code(std::string_view code) {
  for (DType d : {DType::Float32, DType::Float64, DType::Int64}) {
    if (safetensors_dtype(d) == code) return d;
  }
  return std::nullopt;
}

// ---- writing ----

void check_names(const NamedTensors& tensors, const SafetensorsMetadata& metadata) {
  std::vector<std::string_view> names;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& [name, tensor] = tensors[i];
    if (name.empty()) reject("tensor #", i, " has an empty name");
    if (name == kMetadataKey) reject("tensor name '__metadata__' is reserved for the metadata");
    if (!is_utf8(name)) reject("tensor name ", quote(name), " is not valid UTF-8");
    if (!tensor.defined()) reject("tensor ", quote(name), " is undefined");
    if (tensor.ndim() > static_cast<int64_t>(kMaxSafetensorsRank)) {
      reject("tensor ", quote(name), " has ", tensor.ndim(), " dimensions, more than the ",
             kMaxSafetensorsRank, " a file may hold");
    }
    names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  auto same = std::adjacent_find(names.begin(), names.end());
  if (same != names.end()) reject("duplicate tensor name ", quote(*same));

  std::vector<std::string_view> keys;
  for (const auto& [key, value] : metadata) {
    if (!is_utf8(key)) reject("metadata key ", quote(key), " is not valid UTF-8");
    if (!is_utf8(value)) reject("metadata value for key ", quote(key), " is not valid UTF-8");
    keys.push_back(key);
  }
  std::sort(keys.begin(), keys.end());
  auto same_key = std::adjacent_find(keys.begin(), keys.end());
  if (same_key != keys.end()) reject("duplicate metadata key ", quote(*same_key));
}

void append_u64_le(std::string& out, uint64_t value) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

uint64_t read_u64_le(std::string_view bytes) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | static_cast<unsigned char>(bytes[i]);
  return value;
}

// ---- reading ----

// One tensor's header entry, checked on its own (the layout of all of them is checked later).
struct Info {
  std::string name;
  const SafetensorsDtypeInfo* type;
  Shape shape;
  uint64_t begin, end;  // data_offsets
};

const SafetensorsDtypeInfo* read_dtype(const json::Value& value, const std::string& q) {
  if (!value.is_string()) reject("dtype of tensor ", q, " is ", json::kind_name(value.kind()));
  const std::string& code = value.as_string();
  if (const SafetensorsDtypeInfo* type = find_safetensors_dtype(code)) return type;
  const bool plain =
      !code.empty() && code.size() <= 16 && std::all_of(code.begin(), code.end(), [](char c) {
        return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
      });
  reject("unsupported dtype ", plain ? code : quote(code), " for tensor ", q,
         " (not a safetensors dtype)");
}

// The shape, and its element count, which fits in int64 like every partial product of the
// non-zero sizes, so Tensor::empty computes numel and strides without overflow.
Shape read_shape(const json::Value& value, const std::string& q, uint64_t& numel) {
  if (!value.is_array()) reject("shape of tensor ", q, " is ", json::kind_name(value.kind()));
  Shape shape;
  uint64_t nonzero_product = 1;
  bool has_zero = false;
  for (const json::Value& size : value.as_array()) {
    const std::optional<uint64_t> n = size.is_number() ? size.as_u64() : std::nullopt;
    if (!n) {
      const std::string shown =
          size.is_number() ? json::dump(size) : std::string(json::kind_name(size.kind()));
      reject("shape of tensor ", q, " holds ", shown, ", not a non-negative integer");
    }
    if (*n > kInt64Max) reject("shape of tensor ", q, " holds ", *n, ", above 2^63 - 1");
    if (*n == 0) {
      has_zero = true;
    } else if (nonzero_product > kInt64Max / *n) {
      reject("shape of tensor ", q, " is too large: its sizes multiply past 2^63 - 1");
    } else {
      nonzero_product *= *n;
    }
    shape.push_back(static_cast<int64_t>(*n));
  }
  numel = has_zero ? 0 : nonzero_product;
  return shape;
}

Info read_info(const std::string& name, const json::Value& entry) {
  const std::string q = quote(name);
  if (!entry.is_object()) {
    reject("entry of tensor ", q, " is ", json::kind_name(entry.kind()), ", not an object");
  }
  for (const auto& [field, value] : entry.as_object()) {
    if (field != "dtype" && field != "shape" && field != "data_offsets") {
      reject("tensor ", q, " has an unexpected field ", quote(field));
    }
  }
  const json::Value* fields[3] = {entry.find("dtype"), entry.find("shape"),
                                  entry.find("data_offsets")};
  const char* field_names[3] = {"dtype", "shape", "data_offsets"};
  for (int i = 0; i < 3; ++i) {
    if (!fields[i]) reject("tensor ", q, " has no \"", field_names[i], "\" field");
  }
  Info info{name, read_dtype(*fields[0], q), {}, 0, 0};
  uint64_t numel = 0;
  info.shape = read_shape(*fields[1], q, numel);

  const json::Value& offsets = *fields[2];
  if (!offsets.is_array() || offsets.as_array().size() != 2) {
    reject("data_offsets of tensor ", q, " is not an array of two integers");
  }
  std::optional<uint64_t> ends[2];
  for (int i = 0; i < 2; ++i) {
    const json::Value& v = offsets.as_array()[i];
    ends[i] = v.is_number() ? v.as_u64() : std::nullopt;
    if (!ends[i]) reject("data_offsets of tensor ", q, " are not two non-negative integers");
  }
  info.begin = *ends[0];
  info.end = *ends[1];
  if (info.begin > info.end) {
    reject("data_offsets [", info.begin, ", ", info.end, "] of tensor ", q,
           " end before they begin");
  }
  const auto bits = static_cast<uint64_t>(info.type->bits);
  if (numel > std::numeric_limits<uint64_t>::max() / bits) {
    reject("tensor ", q, " of shape ", shape_text(info.shape), " has too many bytes to count");
  }
  if (numel * bits % 8 != 0) {
    reject("tensor ", q, " of shape ", shape_text(info.shape), " has ", numel, " elements of ",
           info.type->code, " (", bits, " bits each), which do not fill whole bytes");
  }
  if (info.end - info.begin != numel * bits / 8) {
    reject("tensor ", q, " has data_offsets [", info.begin, ", ", info.end, "] (",
           info.end - info.begin, " bytes) but dtype ", info.type->code, " and shape ",
           shape_text(info.shape), " need ", numel * bits / 8, " bytes");
  }
  return info;
}

SafetensorsMetadata read_metadata(const json::Value& value) {
  if (!value.is_object()) {
    reject("__metadata__ is ", json::kind_name(value.kind()), ", not an object of strings");
  }
  SafetensorsMetadata metadata;
  for (const auto& [key, v] : value.as_object()) {
    if (!v.is_string()) {
      reject("__metadata__ value for key ", quote(key), " is ", json::kind_name(v.kind()),
             ", not a string");
    }
    metadata.emplace_back(key, v.as_string());
  }
  return metadata;
}

// The tensors' [begin, end) ranges must tile [0, data_bytes) exactly, in some order.
void check_layout(const std::vector<Info>& infos, uint64_t data_bytes) {
  for (const Info& info : infos) {
    if (info.end > data_bytes) {
      reject("data_offsets [", info.begin, ", ", info.end, "] of tensor ", quote(info.name),
             " lie beyond the end of the ", data_bytes, "-byte data buffer");
    }
  }
  std::vector<const Info*> by_offset;
  for (const Info& info : infos) by_offset.push_back(&info);
  std::sort(by_offset.begin(), by_offset.end(), [](const Info* a, const Info* b) {
    return std::pair(a->begin, a->end) < std::pair(b->begin, b->end);
  });
  uint64_t covered = 0;
  const Info* previous = nullptr;
  for (const Info* info : by_offset) {
    if (info->begin < covered) {
      reject("data of tensor ", quote(info->name), " [", info->begin, ", ", info->end,
             ") overlaps that of tensor ", quote(previous->name), " [", previous->begin, ", ",
             previous->end, ")");
    }
    if (info->begin > covered) {
      reject("bytes [", covered, ", ", info->begin, ") of the data buffer belong to no tensor",
             " (a gap before tensor ", quote(info->name), ")");
    }
    covered = info->end;
    previous = info;
  }
  if (covered != data_bytes) {
    reject(data_bytes - covered, " trailing bytes after the last tensor's data (the data buffer",
           " should be ", covered, " bytes, the file has ", data_bytes, ")");
  }
}

}  // namespace

std::string encode_safetensors(const NamedTensors& tensors, const SafetensorsMetadata& metadata) {
  check_names(tensors, metadata);
  json::Object header;
  if (!metadata.empty()) {
    json::Object meta;
    for (const auto& [key, value] : metadata) meta.emplace_back(key, value);
    header.emplace_back(kMetadataKey, std::move(meta));
  }
  // The data of 8-byte dtypes goes first, then F32, each group in the given order: the buffer
  // starts 8-aligned, so every tensor then starts at a multiple of its element size.
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return dtype_size(tensors[a].second.dtype()) > dtype_size(tensors[b].second.dtype());
  });
  std::vector<uint64_t> begin(tensors.size());
  uint64_t data_bytes = 0;
  for (size_t i : order) {
    begin[i] = data_bytes;
    const Tensor& t = tensors[i].second;
    data_bytes += static_cast<uint64_t>(t.numel()) * dtype_size(t.dtype());
  }
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i].second;
    const uint64_t end = begin[i] + static_cast<uint64_t>(t.numel()) * dtype_size(t.dtype());
    json::Array shape(t.shape().begin(), t.shape().end());
    header.emplace_back(tensors[i].first,
                        json::Object{{"dtype", safetensors_dtype(t.dtype())},
                                     {"shape", std::move(shape)},
                                     {"data_offsets", json::Array{begin[i], end}}});
  }
  std::string text = json::dump(header);
  text.append((8 - text.size() % 8) % 8, ' ');

  std::string out;
  out.reserve(kLengthBytes + text.size() + data_bytes);
  append_u64_le(out, text.size());
  out += text;
  for (size_t i : order) {
    const Tensor t = tensors[i].second.contiguous();
    const size_t bytes = static_cast<size_t>(t.numel()) * dtype_size(t.dtype());
    if (bytes == 0) continue;
    const char* first = static_cast<const char*>(t.storage()->data()) +
                        static_cast<size_t>(t.offset()) * dtype_size(t.dtype());
    out.append(first, bytes);
  }
  return out;
}

namespace {

// The header and the data buffer of a file, every rule checked.
struct Parsed {
  std::vector<Info> infos;
  SafetensorsMetadata metadata;
  std::string_view data;
};

// The header of a file of `file_bytes` bytes whose first bytes are `head`: the length field and,
// when that length is valid, the whole header. The data buffer is not needed: its size is
// `file_bytes` less the two, which the tensors' offsets are checked against.
Parsed parse_header(std::string_view head, uint64_t file_bytes) {
  if (file_bytes < kLengthBytes) {
    reject("file is ", file_bytes, " bytes, too short for the 8-byte header length");
  }
  const uint64_t header_bytes = read_u64_le(head);
  const uint64_t after_length = file_bytes - kLengthBytes;  // no overflow: checked above
  if (header_bytes == 0) reject("header length is 0");
  if (header_bytes > after_length) {
    reject("header length ", header_bytes, " exceeds the ", after_length,
           " bytes after the length field");
  }
  if (header_bytes > kMaxSafetensorsHeaderBytes) {
    reject("header length ", header_bytes, " exceeds the limit of ", kMaxSafetensorsHeaderBytes);
  }
  const std::string_view text = head.substr(kLengthBytes, header_bytes);
  Parsed parsed;
  if (!is_utf8(text)) reject("header is not valid UTF-8");
  if (text.front() != '{') reject("header does not start with '{'");
  json::Value root;
  try {
    // Accepts the trailing spaces that pad the header. No array of a valid header is longer than
    // a shape of kMaxSafetensorsRank sizes.
    root = json::parse(text, kMaxSafetensorsRank);
  } catch (const json::ParseError& e) {
    reject("cannot parse the header: ", e.what());
  }
  if (!root.is_object()) reject("header is ", json::kind_name(root.kind()), ", not an object");
  for (const auto& [key, value] : root.as_object()) {
    if (key == kMetadataKey) {
      parsed.metadata = read_metadata(value);
    } else {
      parsed.infos.push_back(read_info(key, value));
    }
  }
  check_layout(parsed.infos, after_length - header_bytes);
  return parsed;
}

Parsed parse(std::string_view bytes) {
  Parsed parsed = parse_header(bytes, bytes.size());
  parsed.data = bytes.substr(kLengthBytes + read_u64_le(bytes));
  return parsed;
}

SafetensorsHeader header_of(Parsed parsed) {
  SafetensorsHeader header;
  header.metadata = std::move(parsed.metadata);
  for (Info& info : parsed.infos)
    header.tensors.push_back({std::move(info.name), std::string(info.type->code),
                              std::move(info.shape), info.begin, info.end});
  return header;
}

// Reads `n` bytes at `offset` of the file open as `fd`, or fewer at its end.
std::string read_at(int fd, const std::string& path, uint64_t offset, uint64_t n) {
  std::string out(n, '\0');
  uint64_t got = 0;
  while (got < n) {
    const ssize_t r = ::pread(fd, out.data() + got, n - got, static_cast<off_t>(offset + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) fail("load_safetensors_header: cannot read \"", path, "\": ", std::strerror(errno));
    if (r == 0) break;
    got += static_cast<uint64_t>(r);
  }
  out.resize(got);
  return out;
}

// F16 or BF16 data as a float32 tensor.
Tensor widened(const Info& info, std::string_view data) {
  Tensor t = Tensor::empty(info.shape, DType::Float32);
  float* out = t.data<float>();
  const bool bf16 = info.type->code == "BF16";
  for (int64_t i = 0, n = t.numel(); i < n; ++i) {
    uint16_t bits = 0;
    std::memcpy(&bits, data.data() + info.begin + 2 * static_cast<size_t>(i), 2);
    out[i] = bf16 ? bfloat16_to_float(bits) : half_to_float(bits);
  }
  return t;
}

}  // namespace

SafetensorsHeader read_safetensors_header(std::string_view bytes) {
  return header_of(parse(bytes));
}

SafetensorsFile decode_safetensors(std::string_view bytes, HalfPrecision half) {
  Parsed parsed = parse(bytes);
  const bool widen = half == HalfPrecision::kToFloat32;
  for (const Info& info : parsed.infos) {
    const bool is_half = info.type->code == "F16" || info.type->code == "BF16";
    if (!dtype_of_code(info.type->code) && !(widen && is_half))
      reject("unsupported dtype ", info.type->code, " for tensor ", quote(info.name),
             widen ? " (gradflow reads F32, F64, I64, and F16 and BF16 as F32)"
                   : " (gradflow reads F32, F64 and I64)");
  }
  // Every check has passed: the tensors together take exactly data.size() bytes (twice that for
  // F16 and BF16 widened to F32).
  SafetensorsFile file;
  file.metadata = std::move(parsed.metadata);
  for (const Info& info : parsed.infos) {
    const std::optional<DType> dtype = dtype_of_code(info.type->code);
    if (!dtype) {
      file.tensors.emplace_back(info.name, widened(info, parsed.data));
      continue;
    }
    Tensor t = Tensor::empty(info.shape, *dtype);
    if (info.end > info.begin) {
      std::memcpy(t.storage()->data(), parsed.data.data() + info.begin, info.end - info.begin);
    }
    file.tensors.emplace_back(info.name, std::move(t));
  }
  return file;
}

void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const SafetensorsMetadata& metadata) {
  write_file_atomic(path, encode_safetensors(tensors, metadata));
}

SafetensorsFile load_safetensors(const std::string& path, uint64_t max_bytes, HalfPrecision half) {
  const std::string bytes = read_file(path, max_bytes);
  try {
    return decode_safetensors(bytes, half);
  } catch (const SafetensorsError& e) {
    throw SafetensorsError("\"" + path + "\": " + e.problem());
  }
}

SafetensorsHeader load_safetensors_header(const std::string& path, uint64_t max_bytes) {
  int fd = -1;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) fail("load_safetensors_header: cannot open \"", path, "\": ", std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat info {};
  if (::fstat(fd, &info) != 0)
    fail("load_safetensors_header: cannot stat \"", path, "\": ", std::strerror(errno));
  try {
    if (!S_ISREG(info.st_mode)) {
      // A pipe or device has no length to check the offsets against: read it all (up to max_bytes).
      return read_safetensors_header(read_file(path, max_bytes));
    }
    // A regular file: only its length field and header are read, whatever its size; the
    // offsets are checked against the file's length.
    const uint64_t file_bytes = static_cast<uint64_t>(info.st_size);
    std::string head = read_at(fd, path, 0, kLengthBytes);
    if (head.size() < kLengthBytes) return header_of(parse_header(head, head.size()));
    // A length parse_header refuses is refused before anything more is read.
    const uint64_t header_bytes = read_u64_le(head);
    if (header_bytes > 0 && header_bytes <= kMaxSafetensorsHeaderBytes &&
        header_bytes <= file_bytes - kLengthBytes) {
      head += read_at(fd, path, kLengthBytes, header_bytes);
      if (head.size() != kLengthBytes + header_bytes)
        reject("the file shrank while its header was read");
    }
    return header_of(parse_header(head, file_bytes));
  } catch (const SafetensorsError& e) {
    throw SafetensorsError("\"" + path + "\": " + e.problem());
  }
}

}  // namespace gradflow::nn
