// A program with no address-space check of its own (minimal_train, which
// takes no flags and so has no sizes to check) refuses, in one line and with
// exit code 2 as the training programs do, an address-space limit
// (ulimit -v) that cannot hold OpenBLAS's buffer, instead of hanging.
//
// With one OpenBLAS thread (openblas_one_thread.cpp) such a program starts,
// but its first product that reaches OpenBLAS maps a 128 MiB buffer, and
// when the limit cannot give it OpenBLAS tries again forever
// (examples/toolkit/training/address_space.h): minimal_train hung at step 1
// under ulimit -v 60000 to 180000. Just above, where the buffer fitted and
// its tensors did not, it ended on an uncaught out-of-memory error (an abort,
// at ulimit -v 181000 to 183000). So the limit must leave the buffer and
// kRoomBytes besides, beyond what is mapped at start: minimal_train maps
// 7 MiB more than at start (its tensors and the C library's heap, measured
// with OpenBLAS 0.3.21), and kRoomBytes is about twice that.
//
// Nothing calls it: it runs before main, after the libraries' constructors
// (OpenBLAS has started, without a worker), so a program gets it by linking
// it alone (examples/CMakeLists.txt).
#include <errno.h>  // program_invocation_short_name
#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;
// What OpenBLAS maps for the thread's first product (BUFFER_SIZE of its
// x86-64 builds, 0.3.21), as examples/toolkit/training/address_space.h.
constexpr uint64_t kOpenBlasBufferBytes = 128 * kMiB;
constexpr uint64_t kRoomBytes = 16 * kMiB;

// The address space the process maps now (/proc/self/statm's size), or 0.
uint64_t address_space_in_use() {
  std::FILE* statm = std::fopen("/proc/self/statm", "r");
  if (statm == nullptr) return 0;
  unsigned long long pages = 0;
  const bool read = std::fscanf(statm, "%llu", &pages) == 1;
  std::fclose(statm);
  return read ? pages * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE)) : 0;
}

bool refuse_a_limit_openblas_would_hang_on() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return false;
  const uint64_t in_use = address_space_in_use();
  const uint64_t needed = kOpenBlasBufferBytes + kRoomBytes;
  if (in_use + needed <= limit.rlim_cur) return false;
  const auto mib = [](uint64_t bytes) { return static_cast<double>(bytes) / kMiB; };
  std::fprintf(stderr,
               "%s: error: the address-space limit (ulimit -v %llu) is %.0f MiB, %.0f MiB of it in "
               "use, and this program needs about %.0f MiB more (OpenBLAS's %.0f MiB buffer, "
               "which OpenBLAS would wait for forever, and %.0f MiB for its tensors); raise it "
               "with ulimit -v %llu or more, or lift it\n",
               program_invocation_short_name,
               static_cast<unsigned long long>(limit.rlim_cur / 1024), mib(limit.rlim_cur),
               mib(in_use), mib(needed), mib(kOpenBlasBufferBytes), mib(kRoomBytes),
               static_cast<unsigned long long>((in_use + needed + 1023) / 1024));
  std::_Exit(2);  // before main: nothing to flush, no destructor to run
}
[[maybe_unused]] const bool refused_at_start = refuse_a_limit_openblas_would_hang_on();

}  // namespace
