#include "examples/toolkit/training/address_space.h"

#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "examples/toolkit/cli/args.h"
#include "examples/toolkit/training/memory_estimate.h"

namespace gradflow::training {

std::optional<uint64_t> address_space_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return std::nullopt;
  return static_cast<uint64_t>(limit.rlim_cur);
}

uint64_t address_space_in_use() {
  std::ifstream statm("/proc/self/statm");
  uint64_t pages = 0;
  if (!(statm >> pages)) return 0;
  return pages * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

uint64_t address_space_needed(int threads, double model_bytes, bool main_too) {
  const auto n = static_cast<uint64_t>(threads < 1 ? 1 : threads);
  return static_cast<uint64_t>(model_bytes) + (n + (main_too ? 1 : 0)) * kOpenBlasBufferBytes +
         (n - 1 + (main_too ? 1 : 0)) * kThreadBytes;
}

void check_address_space(int threads, double model_bytes, std::optional<uint64_t> limit,
                         uint64_t in_use, bool main_too) {
  if (!limit) return;
  const uint64_t needed = address_space_needed(threads, model_bytes, main_too);
  if (in_use + needed <= *limit) return;
  const uint64_t at_least_kib = (in_use + needed + 1023) / 1024;
  throw cli::UsageError(
      "the address-space limit (ulimit -v " + std::to_string(*limit / 1024) + ") is " +
      format_bytes(double(*limit)) + ", " + format_bytes(double(in_use)) +
      " of it in use, and this run needs about " + format_bytes(double(needed)) +
      " more (the model's tensors " + format_bytes(model_bytes) + ", OpenBLAS's " +
      format_bytes(double(kOpenBlasBufferBytes)) + " buffer for each of --threads " +
      std::to_string(threads) + (main_too ? " and the main thread" : "") +
      ", which OpenBLAS would wait for forever); raise it with " + "ulimit -v " +
      std::to_string(at_least_kib) + " or more, or lift it");
}

}  // namespace gradflow::training
