// Under an address-space limit (ulimit -v), OpenBLAS's start-up worker
// retries a failing 128 MiB mmap forever, and gradflow's start-up code
// waits for it: the program hangs before main
// (examples/toolkit/training/address_space.h). With OPENBLAS_NUM_THREADS=1
// OpenBLAS starts no worker, which gradflow would stop anyway. The variable
// must be in place before OpenBLAS's constructor reads it, and setenv here
// would not do: the C library's own constructor, which runs after this,
// resets the environment to the one the process started with. So the
// program starts itself again (execve, same arguments) with the variable
// set, once. This runs before any library's constructor: the C library
// calls an executable's .preinit_array first.
//
// Nothing calls it, so a program gets it by linking it alone: every program
// that links gradflow_cli, and minimal_train (examples/CMakeLists.txt).
#include <sys/resource.h>
#include <unistd.h>

#include <cstddef>
#include <cstring>
#include <iterator>

namespace {

void no_openblas_worker_under_a_limit(int, char** argv, char** envp) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return;
  static char kOne[] = "OPENBLAS_NUM_THREADS=1";
  constexpr size_t kName = sizeof "OPENBLAS_NUM_THREADS=" - 1;
  static char* env[4096];
  size_t n = 0;
  for (char** e = envp; *e != nullptr; ++e) {
    if (std::strncmp(*e, kOne, kName) == 0) {
      if (std::strcmp(*e, kOne) == 0) return;  // already so: this is the second start
      continue;
    }
    if (n + 2 >= std::size(env)) return;  // an environment too large to copy: start as it is
    env[n++] = *e;
  }
  env[n++] = kOne;
  env[n] = nullptr;
  ::execve("/proc/self/exe", argv, env);  // returns only if it failed: start as it is
}
[[gnu::used, gnu::section(".preinit_array")]] void (*const kPreinit)(int, char**, char**) =
    no_openblas_worker_under_a_limit;

}  // namespace
