// The reference switch: what it routes, that the guard puts it back, and
// that every thread sees it.
#include "autograd/reference.h"

#include <thread>

#include "check.h"

namespace gradflow {
namespace {
using namespace testing;

// The name of the op that made each fused op's output.
std::vector<std::string> makers() {
  Variable x(dense({2, 3, 4}), true), w(dense({5, 4}), true), b(dense({5}), true);
  Variable q(dense({2, 3, 4}), true), k(dense({2, 6, 4}), true), v(dense({2, 6, 2}), true);
  Variable nw(dense({4}), true), nb(dense({4}), true);
  return {linear(x, w, b).grad_fn_name(), gelu_linear(x, w, b).grad_fn_name(),
          layer_norm(x, nw, nb, 1e-5).grad_fn_name(),
          fused_attention(q, k, v, 0.5, zeros({3, 6})).grad_fn_name()};
}

TEST(ReferenceOps, OffByDefaultAndRoutesEveryFusedOpWhenOn) {
  EXPECT_FALSE(reference_ops());
  EXPECT_EQ(makers(),
            (std::vector<std::string>{"linear", "gelu_linear", "layer_norm", "fused_attention"}));
  ReferenceOpsGuard on;
  EXPECT_TRUE(reference_ops());
  // The references end in a reshape back to (..., N), the bias added, and
  // the product with v.
  EXPECT_EQ(makers(), (std::vector<std::string>{"reshape", "reshape", "add", "matmul"}));
}

TEST(ReferenceOps, GuardRestoresThePreviousValue) {
  {
    ReferenceOpsGuard on(true);
    {
      ReferenceOpsGuard off(false);
      EXPECT_FALSE(reference_ops());
    }
    EXPECT_TRUE(reference_ops());
  }
  EXPECT_FALSE(reference_ops());
  set_reference_ops(true);
  EXPECT_TRUE(reference_ops());
  set_reference_ops(false);
}

TEST(ReferenceOps, EveryThreadSeesTheSwitch) {
  // Process-wide, not per thread: the study and backward_in_parallel run
  // models on threads of their own.
  ReferenceOpsGuard on;
  bool seen = false;
  std::thread([&] { seen = reference_ops(); }).join();
  EXPECT_TRUE(seen);
}

}  // namespace
}  // namespace gradflow
