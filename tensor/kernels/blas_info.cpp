#include "tensor/kernels/blas_info.h"

#include <cblas.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <sstream>

#include "tensor/error.h"
#include "tensor/kernels/cpu_dispatch.h"

namespace gradflow {

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return s;
}

// OpenBLAS's x86-64 cores with AVX2 (or AVX-512) GEMM kernels. Every other
// core it can pick (Prescott, Core2, Penryn, Nehalem, Sandybridge, Barcelona,
// Bulldozer, ...) runs SSE or AVX code: generic on a CPU that has AVX2.
bool is_modern_core(const std::string& core) {
  const std::string c = lower(core);
  for (const char* modern : {"haswell", "zen", "skylakex", "cooperlake", "sapphirerapids"})
    if (c == modern) return true;
  return false;
}

// The CPU's own vectors, not gradflow's cap (set_cpu_level_cap): OpenBLAS
// picks its kernels from the real CPU.
std::string cpu_vectors() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return "avx512";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "avx2";
  return "sse";
}

// "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Cooperlake MAX_THREADS=64": the
// second word.
std::string version_from_config(const char* config) {
  std::istringstream words(config ? config : "");
  std::string name, version;
  words >> name >> version;
  return version.empty() ? "unknown" : version;
}

// GRADFLOW_GEMM: unset or empty lets the core decide.
GemmPath choose_path(bool generic_core, bool* forced) {
  const char* env = std::getenv("GRADFLOW_GEMM");
  const std::string value = env ? env : "";
  *forced = !value.empty();
  if (value.empty()) return generic_core ? GemmPath::kOwn : GemmPath::kBlas;
  if (value == "own") return GemmPath::kOwn;
  if (value == "blas") return GemmPath::kBlas;
  fail("GRADFLOW_GEMM: expected own or blas, got '", value, "'");
}

BlasInfo detect() {
  BlasInfo info;
  info.openblas_version = version_from_config(openblas_get_config());
  const char* core = openblas_get_corename();
  info.openblas_core = core ? core : "unknown";
  info.cpu_vectors = cpu_vectors();
  info.kernel_level = cpu_level();
  info.generic_core = info.cpu_vectors != "sse" && !is_modern_core(info.openblas_core);
  info.gemm = choose_path(info.generic_core, &info.gemm_forced);
  return info;
}

}  // namespace

const BlasInfo& blas_info() {
  static const BlasInfo info = detect();
  return info;
}

std::string blas_summary() {
  const BlasInfo& info = blas_info();
  std::ostringstream out;
  out << "openblas=" << info.openblas_version << " blas_core=" << info.openblas_core
      << " cpu=" << info.cpu_vectors << " kernels=" << info.kernel_level
      << " gemm=" << (info.gemm == GemmPath::kOwn ? "own" : "blas");
  return out.str();
}

// The cost is gemm_bench's on a 2-core AMD EPYC with AVX-512 (bench/README.md):
// OpenBLAS's Prescott kernels against its native ones, one 2048 product.
std::string generic_core_note() {
  const BlasInfo& info = blas_info();
  if (!info.generic_core) return "";
  std::ostringstream out;
  // Forced by OPENBLAS_CORETYPE (how the tests reproduce it), or OpenBLAS's own choice.
  const char* forced = std::getenv("OPENBLAS_CORETYPE");
  out << "note: OpenBLAS " << info.openblas_version;
  if (forced != nullptr && *forced != '\0')
    out << " runs its generic " << info.openblas_core << " kernels (OPENBLAS_CORETYPE=" << forced
        << ") on this " << info.cpu_vectors << " CPU";
  else
    out << " does not recognise this " << info.cpu_vectors << " CPU and runs its generic "
        << info.openblas_core << " kernels";
  out << ", about 3x slower per matrix product; ";
  if (info.gemm == GemmPath::kOwn) {
    out << "gradflow's own GEMM takes the products instead (GRADFLOW_GEMM=blas to use OpenBLAS "
           "anyway; a newer OpenBLAS may know this CPU)";
  } else {
    out << "they stay with OpenBLAS because GRADFLOW_GEMM=blas (unset it to let gradflow's own "
           "GEMM take them, or use a newer OpenBLAS)";
  }
  return out.str();
}

void note_generic_blas_core() {
  static std::once_flag once;
  std::call_once(once, [] {
    const std::string note = generic_core_note();
    if (!note.empty()) std::fprintf(stderr, "%s\n", note.c_str());
  });
}

}  // namespace gradflow
