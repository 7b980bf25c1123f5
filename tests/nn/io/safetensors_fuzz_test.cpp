// Fuzzing decode_safetensors with 104,000 files per run: 26,000 in each of four families, run as
// separate tests so that ctest -j2 runs them side by side. The families: bit flips of valid files;
// framing (truncation, wrong length fields, trailing bytes, headers that are not JSON or UTF-8);
// headers written field by field with random choices (safetensors_fuzz_inputs.h); and those
// headers edited. For every file, decoding either returns tensors that hold exactly the file's
// bytes or throws SafetensorsError, and no single operator-new request is larger than the file
// (or a small constant). CI runs this under ASan and UBSan too.
//
// A failure names its family, seed and case index. Every random case draws from its own
// Generator(seed + index), so one case can be replayed alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <optional>
#include <string>
#include <typeinfo>
#include <vector>

#include "nn/io/json.h"
#include "nn/io/safetensors.h"
#include "tests/nn/io/safetensors_fuzz_inputs.h"

// ---- operator new, instrumented ----
// Replacing operator new is global, so this holds for the whole test program (which is why this
// file is a program of its own): every form forwards to malloc (aligned_alloc) and free, and while
// g_watching is set the largest request is kept. ASan still checks every access, but in this
// program it can no longer tell new from malloc, so it misses a delete of new[]'s pointer. Tensor
// data comes from Storage, not from operator new, and is checked separately.
namespace {
std::atomic<bool> g_watching{false};
std::atomic<size_t> g_largest{0};

void note_request(size_t size) {
  if (!g_watching.load(std::memory_order_relaxed)) return;
  size_t seen = g_largest.load(std::memory_order_relaxed);
  while (size > seen && !g_largest.compare_exchange_weak(seen, size)) {
  }
}

void* allocate(size_t size) {
  note_request(size);
  return std::malloc(size == 0 ? 1 : size);
}

void* allocate(size_t size, std::align_val_t align) {
  note_request(size);
  const size_t a = static_cast<size_t>(align);
  return std::aligned_alloc(a, std::max(a, (size + a - 1) / a * a));  // a multiple of a
}

void* or_throw(void* p) {
  if (!p) throw std::bad_alloc();
  return p;
}

// Out of line, so that GCC, inlining a delete beside its new, sees no free() of a pointer from
// operator new: -Wmismatched-new-delete, a false alarm when new itself calls malloc.
[[gnu::noinline]] void release(void* p) noexcept { std::free(p); }
}  // namespace

void* operator new(size_t n) { return or_throw(allocate(n)); }
void* operator new[](size_t n) { return or_throw(allocate(n)); }
void* operator new(size_t n, std::align_val_t a) { return or_throw(allocate(n, a)); }
void* operator new[](size_t n, std::align_val_t a) { return or_throw(allocate(n, a)); }
void* operator new(size_t n, const std::nothrow_t&) noexcept { return allocate(n); }
void* operator new[](size_t n, const std::nothrow_t&) noexcept { return allocate(n); }
void* operator new(size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate(n, a);
}
void* operator new[](size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate(n, a);
}
void operator delete(void* p) noexcept { release(p); }
void operator delete[](void* p) noexcept { release(p); }
void operator delete(void* p, size_t) noexcept { release(p); }
void operator delete[](void* p, size_t) noexcept { release(p); }
void operator delete(void* p, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { release(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { release(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { release(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { release(p); }

namespace gradflow::nn {
namespace {
using namespace gradflow::testing;

constexpr int64_t kCasesPerFamily = 26'000;

// Requests up to this size are allowed whatever the file's size: the JSON parser's stack of open
// containers (up to json::kMaxDepth of about 80 bytes each), a shape's array, error messages.
// The files here are small. In a large header an object of many members can take 9 times its
// text, and a long string twice (still proportional, as json.h promises); only arrays took more,
// 40 times, before the header's arrays were capped at kMaxSafetensorsRank.
constexpr size_t kSmallRequest = 16 * 1024;

// Records the largest operator-new request made during its lifetime.
class WatchRequests {
 public:
  WatchRequests() {
    g_largest = 0;
    g_watching = true;
  }
  ~WatchRequests() { g_watching = false; }
  size_t largest() const { return g_largest; }
};

// Up to 400 bytes of a file, with anything unprintable as \xNN, for a failure message.
std::string printable(std::string_view bytes) {
  std::string out;
  for (size_t i = 0; i < bytes.size() && i < 400; ++i) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    char hex[8];
    std::snprintf(hex, sizeof hex, "\\x%02x", c);
    out += (c >= 0x20 && c < 0x7f && c != '\\') ? std::string(1, static_cast<char>(c)) : hex;
  }
  return bytes.size() > 400 ? out + "..." : out;
}

// Why a decoded file disagrees with its bytes, or "" if it agrees: the tensors come in the
// header's order with its names, dtypes and shapes, each holds the bytes at its data_offsets,
// and their storage together is no larger than the file.
std::string inconsistency(std::string_view bytes, const SafetensorsFile& file) {
  const uint64_t n = header_length(bytes);
  const std::string_view data = bytes.substr(8 + n);
  const json::Value header = json::parse(bytes.substr(8, n));
  SafetensorsMetadata metadata;
  size_t i = 0;
  uint64_t stored = 0;
  for (const auto& [name, entry] : header.as_object()) {
    if (name == "__metadata__") {
      for (const auto& [k, v] : entry.as_object()) metadata.emplace_back(k, v.as_string());
      continue;
    }
    if (i == file.tensors.size()) return "fewer tensors than the header names";
    const auto& [decoded_name, t] = file.tensors[i++];
    const json::Array& offsets = entry.find("data_offsets")->as_array();
    const uint64_t begin = *offsets[0].as_u64();
    const uint64_t end = *offsets[1].as_u64();
    const uint64_t size = static_cast<uint64_t>(t.numel()) * dtype_size(t.dtype());
    Shape shape;
    for (const json::Value& s : entry.find("shape")->as_array()) shape.push_back(*s.as_i64());
    if (decoded_name != name) return "tensor '" + decoded_name + "' for '" + name + "'";
    if (safetensors_dtype(t.dtype()) != entry.find("dtype")->as_string()) return "dtype of " + name;
    if (t.shape() != shape) return "shape of " + name;
    if (!t.is_contiguous() || t.offset() != 0) return name + " is a view";
    if (size != end - begin || end > data.size()) return "size of " + name;
    if (t.storage()->bytes() != size) return "storage size of " + name;
    if (size > 0 && std::memcmp(t.storage()->data(), data.data() + begin, size) != 0) {
      return "bytes of " + name;
    }
    stored += t.storage()->bytes();
  }
  if (i != file.tensors.size()) return "more tensors than the header names";
  if (metadata != file.metadata) return "metadata";
  if (stored > bytes.size()) return "tensors hold more bytes than the file";
  return "";
}

// One family of cases: checks each file and counts what happened.
struct Family {
  const char* name;
  uint64_t seed;
  int64_t cases = 0;
  int64_t decoded = 0;
  int64_t deep = 0;  // rejected by a check past the framing and the JSON parser
  int64_t failures = 0;

  Generator rng_for(int64_t index) const { return Generator(seed + static_cast<uint64_t>(index)); }
  void check(std::string_view bytes);
  void report() const {
    std::printf("%s: %lld cases, %lld decoded, %lld rejected past the parser\n", name,
                static_cast<long long>(cases), static_cast<long long>(decoded),
                static_cast<long long>(deep));
  }
};

// The contract: a consistent file or SafetensorsError, and no request larger than the file.
void Family::check(std::string_view bytes) {
  const int64_t index = cases++;
  std::optional<SafetensorsFile> file;
  std::string failure;
  size_t largest = 0;
  {
    WatchRequests watch;
    try {
      file = decode_safetensors(bytes);
    } catch (const SafetensorsError& e) {
      const std::string& p = e.problem();
      const bool shallow =
          p.starts_with("file is") || p.starts_with("header ") || p.starts_with("cannot parse");
      deep += shallow ? 0 : 1;
    } catch (const std::exception& e) {
      failure = std::string("threw ") + typeid(e).name() + ": " + e.what();
    } catch (...) {
      failure = "threw something that is not a std::exception";
    }
    largest = watch.largest();
  }
  if (failure.empty() && largest > std::max(bytes.size(), kSmallRequest)) {
    failure = "operator new was asked for " + std::to_string(largest) + " bytes";
  }
  if (failure.empty() && file) {
    ++decoded;
    try {
      failure = inconsistency(bytes, *file);
    } catch (const std::exception& e) {
      failure = std::string("checking the decoded file threw: ") + e.what();
    }
  }
  if (!failure.empty() && ++failures <= 10) {
    ADD_FAILURE() << name << " (seed " << seed << ") case " << index << ": " << failure << "\n  "
                  << bytes.size() << "-byte file: " << printable(bytes);
  }
}

// ---- the families ----

// The bound is only as good as the instrument: under ASan too, operator new must be ours.
TEST(SafetensorsFuzz, OperatorNewIsWatched) {
  WatchRequests watch;
  void* p = ::operator new(5000);  // called as functions, which the compiler may not elide
  void* q = ::operator new[](6000, std::align_val_t{64});
  ::operator delete(p);
  ::operator delete[](q, std::align_val_t{64});
  EXPECT_EQ(watch.largest(), 6000u);
}

TEST(SafetensorsFuzz, BitFlips) {
  Family family{"bit flips", 0xb17f11b5};
  const std::vector<std::string> bases = base_files();
  for (const std::string& base : bases) {  // every single bit of every base file
    for (size_t bit = 0; bit < 8 * base.size(); ++bit) {
      std::string bytes = base;
      bytes[bit / 8] = static_cast<char>(bytes[bit / 8] ^ (1 << (bit % 8)));
      family.check(bytes);
    }
  }
  while (family.cases < kCasesPerFamily) {  // 2 to 8 flips, most of them in the header
    Generator rng = family.rng_for(family.cases);
    std::string bytes = chance(rng, 0.5) ? bases[below(rng, bases.size())] : generated_file(rng);
    const size_t header_end = 8 + header_length(bytes);
    for (size_t flips = 2 + below(rng, 7); flips > 0; --flips) {
      const size_t at = below(rng, chance(rng, 0.75) ? header_end : bytes.size());
      bytes[at] = static_cast<char>(bytes[at] ^ (1 << below(rng, 8)));
    }
    family.check(bytes);
  }
  family.report();
  EXPECT_GE(family.cases, kCasesPerFamily);
  EXPECT_EQ(family.failures, 0);
}

TEST(SafetensorsFuzz, Framing) {
  Family family{"framing", 0xf4a11e5};
  const std::vector<std::string> bases = base_files();
  for (const std::string& base : bases) {  // every prefix of every base file, and the whole
    for (size_t n = 0; n <= base.size(); ++n) family.check(std::string_view(base).substr(0, n));
  }
  while (family.cases < kCasesPerFamily) {
    Generator rng = family.rng_for(family.cases);
    std::string bytes = chance(rng, 0.3) ? bases[below(rng, bases.size())] : generated_file(rng);
    const uint64_t n = header_length(bytes);
    switch (below(rng, 4)) {
      case 0:  // cut short
        bytes.resize(below(rng, bytes.size()));
        break;
      case 1: {  // a wrong length field
        const uint64_t size = bytes.size();
        const uint64_t huge[] = {1ull << 63, ~0ull, kMaxSafetensorsHeaderBytes + 1};
        const uint64_t lengths[] = {
            0, 7, size, size - 8, n - 1, n + 1, pick(rng, huge), below(rng, size), rng.next_u64()};
        bytes.replace(0, 8, u64_le(pick(rng, lengths)));
        break;
      }
      case 2:  // bytes after the data
        for (size_t i = 1 + below(rng, 16); i > 0; --i) bytes += static_cast<char>(rng.next_u64());
        break;
      default: {  // a header that is not JSON or not UTF-8
        std::string header;
        if (chance(rng, 0.5)) {
          header = pick(rng, kNotJson);
        } else {
          header = bytes.substr(8, n);
          for (size_t i = 1 + below(rng, 3); i > 0; --i) {
            header[below(rng, header.size())] = static_cast<char>(0x80 + below(rng, 0x80));
          }
        }
        bytes = u64_le(header.size()) + header + bytes.substr(8 + n);
      }
    }
    family.check(bytes);
  }
  family.report();
  EXPECT_GE(family.cases, kCasesPerFamily);
  EXPECT_EQ(family.failures, 0);
}

TEST(SafetensorsFuzz, GeneratedHeaders) {
  Family family{"generated headers", 0x9e4e7a7ed};
  while (family.cases < kCasesPerFamily) {
    Generator rng = family.rng_for(family.cases);
    family.check(generated_file(rng));
  }
  family.report();
  EXPECT_GE(family.cases, kCasesPerFamily);
  // Most files must get past the parser, or the checks behind it go untested.
  EXPECT_GT(family.decoded, family.cases / 5);
  EXPECT_GT(family.deep, family.cases / 4);
  EXPECT_EQ(family.failures, 0);
}

TEST(SafetensorsFuzz, MutatedHeaders) {
  Family family{"mutated headers", 0x3d7a7ed};
  const std::vector<std::string> bases = base_files();
  while (family.cases < kCasesPerFamily) {
    Generator rng = family.rng_for(family.cases);
    const std::string file =
        chance(rng, 0.2) ? bases[below(rng, bases.size())] : generated_file(rng);
    const uint64_t n = header_length(file);
    std::string header = file.substr(8, n);
    for (size_t edits = 1 + below(rng, 3); edits > 0; --edits) mutate(rng, header);
    // Mostly with the length field made right again, so that the edit reaches the parser.
    const uint64_t length = chance(rng, 0.9) ? header.size() : n;
    family.check(u64_le(length) + header + file.substr(8 + n));
  }
  family.report();
  EXPECT_GE(family.cases, kCasesPerFamily);
  EXPECT_GT(family.deep, family.cases / 10);
  EXPECT_EQ(family.failures, 0);
}

// The file of one empty F32 tensor whose shape is `rank` sizes of 0: valid at any rank but for
// gradflow's limit, and its parse builds one array of `rank` values.
std::string zeros_shape_file(size_t rank) {
  std::string shape;
  for (size_t i = 0; i < rank; ++i) shape += i ? ",0" : "0";
  const std::string header =
      R"({"a":{"dtype":"F32","shape":[)" + shape + R"(],"data_offsets":[0,0]}})";
  return u64_le(header.size()) + header;
}

TEST(SafetensorsFuzz, LongShapesAndDeepNestingStayWithinTheFileSize) {
  Family family{"large headers", 0};
  for (size_t rank : {64, 65, 1000, 1'000'000}) family.check(zeros_shape_file(rank));
  const size_t depth = json::kMaxDepth - 1;
  const std::string deep = "{\"a\":" + std::string(depth, '[') + std::string(depth, ']') + "}";
  family.check(u64_le(deep.size()) + deep);
  EXPECT_EQ(family.failures, 0);
}

}  // namespace
}  // namespace gradflow::nn
