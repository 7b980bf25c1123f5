// The kernels compiled for each CPU level (tensor/kernels/cpu_dispatch.h)
// give the same results, and pass errors on, at every level this machine can
// run: an AVX-512 machine runs the AVX2 and baseline copies under
// set_cpu_level_cap, as an older CPU would run them.
#include "tensor/kernels/cpu_dispatch.h"

#include <gtest/gtest.h>

#include <vector>

#include "tensor/creation.h"
#include "tensor/elementwise.h"
#include "tensor/matmul.h"
#include "tensor/reduce.h"

namespace gradflow {
namespace {

// The levels this machine runs, highest first.
std::vector<int> runnable_levels() {
  std::vector<int> levels;
  const int top = set_cpu_level_cap(4);
  set_cpu_level_cap(top);
  const int detected = cpu_level();
  for (int level : {4, 3, 1})
    if (level <= detected) levels.push_back(level);
  return levels;
}

// Caps the level for one scope.
class CpuLevelCap {
 public:
  explicit CpuLevelCap(int level) : previous_(set_cpu_level_cap(level)) {}
  ~CpuLevelCap() { set_cpu_level_cap(previous_); }
  CpuLevelCap(const CpuLevelCap&) = delete;
  CpuLevelCap& operator=(const CpuLevelCap&) = delete;

 private:
  int previous_;
};

double max_abs_diff(const Tensor& a, const Tensor& b) { return max(abs(sub(a, b))).item(); }

TEST(CpuDispatch, EveryLevelComputesByHandValues) {
  if (!kCpuDispatch) GTEST_SKIP() << "a native or sanitizer build: nothing is dispatched";
  for (int level : runnable_levels()) {
    SCOPED_TRACE(level);
    CpuLevelCap cap(level);
    EXPECT_EQ(cpu_level(), level);
    // (1 2; 3 4) (5 6; 7 8) = (19 22; 43 50); 1 + 2 + ... + 100 = 5050.
    const Tensor a = from_vector({1, 2, 3, 4}, {2, 2}), b = from_vector({5, 6, 7, 8}, {2, 2});
    EXPECT_EQ(matmul(a, b).to_vector(), (std::vector<double>{19, 22, 43, 50}));
    EXPECT_EQ(sum(arange(1, 101)).item(), 5050);
    EXPECT_EQ(add(a, b).to_vector(), (std::vector<double>{6, 8, 10, 12}));
  }
}

// Shapes that take every dispatched path: an elementwise op and GELU (via
// parallel_for), a softmax along rows, a whole-tensor sum, and a product of
// the size our GEMM tiles take on AVX-512 (and OpenBLAS below it).
TEST(CpuDispatch, EveryLevelAgreesWithTheHighest) {
  if (!kCpuDispatch) GTEST_SKIP() << "a native or sanitizer build: nothing is dispatched";
  Generator gen(0);
  const Tensor x = randn({64, 96}, gen), w = randn({96, 64}, gen);
  std::vector<std::vector<Tensor>> results;
  for (int level : runnable_levels()) {
    CpuLevelCap cap(level);
    results.push_back({gelu(x), mul(x, x), softmax(x, 1), sum(x, {0}), matmul(x, w)});
  }
  for (size_t l = 1; l < results.size(); ++l)
    for (size_t i = 0; i < results[0].size(); ++i) {
      // Fused multiply-adds (AVX2 and up) round differently from a multiply
      // and an add; nothing else may differ.
      const double scale = max(abs(results[0][i])).item();
      EXPECT_LE(max_abs_diff(results[l][i], results[0][i]), 1e-5 * scale) << l << " " << i;
    }
}

TEST(CpuDispatch, ErrorsThrownInsideADispatchedKernelReachTheCaller) {
  if (!kCpuDispatch) GTEST_SKIP() << "a native or sanitizer build: nothing is dispatched";
  for (int level : runnable_levels()) {
    SCOPED_TRACE(level);
    CpuLevelCap cap(level);
    EXPECT_THROW(sum(from_indices({1, 2}, {2})), Error);  // the whole-tensor sum's body throws
  }
}

}  // namespace
}  // namespace gradflow
