// check_parameter_grads: passes a right backward, catches a wrong parameter
// gradient that gradcheck on the input cannot see, names the parameter, and
// refuses what it cannot check.
#include <gtest/gtest.h>

#include "tests/autograd/check.h"

namespace gradflow::testing {
namespace {

// y = w * x elementwise, with dx right and dw doubled on purpose.
Variable scale_with_wrong_weight_grad(const Variable& x, const Variable& w) {
  const Tensor xd = x.data(), wd = w.data();
  return make_result(mul(xd, wd), "scale_with_wrong_weight_grad", {x, w},
                     [xd, wd](const Tensor& g) {
                       return std::vector<Tensor>{mul(g, wd), mul(mul(g, xd), 2.0)};
                     });
}

TEST(CheckParameterGrads, PassesARightBackwardOnEveryLayout) {
  Variable w(dense({3, 4}), true), b(dense({3}), true);
  Variable wt(transposed({3, 4}), true);  // a leaf that is a transposed view
  Variable x(dense({2, 4}));
  GradcheckResult r = check_parameter_grads({{"w", w}, {"b", b}}, [&] { return linear(x, w, b); });
  EXPECT_TRUE(r.ok) << r.message;
  EXPECT_LT(r.max_error, 1e-6);
  Variable y(dense({3, 4}));
  r = check_parameter_grads({wt}, [&] { return y * wt * wt; });
  EXPECT_TRUE(r.ok) << r.message;
}

TEST(CheckParameterGrads, CatchesAWrongParameterGradientTheInputsCheckMisses) {
  Variable w(dense({5}), true);
  EXPECT_GRADCHECK(
      [&](const std::vector<Variable>& v) { return scale_with_wrong_weight_grad(v[0], w); },
      {dense({5})});
  Variable x(dense({5}));
  GradcheckResult r = check_parameter_grads({{"scale.weight", w}},
                                            [&] { return scale_with_wrong_weight_grad(x, w); });
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.message.find("scale.weight[0]"), std::string::npos) << r.message;
}

TEST(CheckParameterGrads, AnUnusedParameterOrAFloat32OneFails) {
  Variable used(dense({3}), true), unused(dense({3}), true);
  Variable x(dense({3}));
  GradcheckResult r = check_parameter_grads({used, unused}, [&] { return x * used; });
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.message.find("parameter 1 got no gradient"), std::string::npos) << r.message;
  Variable single(randn({3}, test_gen()), true);
  EXPECT_THROW(check_parameter_grads({single}, [&] { return single * 2.0; }), Error);
}

}  // namespace
}  // namespace gradflow::testing
