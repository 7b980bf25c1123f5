// The scaling study's metrics against hand-computed values, and its claim
// verdicts on rows built to pass or fail each criterion.
#include <gtest/gtest.h>

#include <cmath>

#include "examples/study/metrics.h"
#include "examples/study/report.h"
#include "tensor/ops.h"

namespace gradflow::study {
namespace {

TEST(StudyMetrics, JacobianNormMatchesTheExplicitMatrix) {
  const double p[3] = {0.5, 0.3, 0.2};
  double f2 = 0;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      double entry = (i == j ? p[i] : 0) - p[i] * p[j];
      f2 += entry * entry;
    }
  EXPECT_NEAR(softmax_jacobian_norm(p, 3), std::sqrt(f2), 1e-12);
  const double one_hot[3] = {1, 0, 0};
  EXPECT_NEAR(softmax_jacobian_norm(one_hot, 3), 0, 1e-12);
}

TEST(StudyMetrics, UniformAndOneHotRows) {
  // Row 0 uniform over 4 keys; row 1 one-hot; row 2 has two keys masked.
  Tensor w =
      from_vector({0.25, 0.25, 0.25, 0.25, 1, 0, 0, 0, 0.5, 0.5, 0, 0}, {3, 4}, DType::Float64);
  Tensor logits = from_vector({1, 1, 1, 1, 9, -3, 0, 0, 2, 2, 50, 50}, {3, 4}, DType::Float64);
  Tensor mask = from_vector({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1}, {3, 4}, DType::Float64);
  AttentionStats s = attention_stats(w, logits, mask);
  EXPECT_EQ(s.rows, 3);
  EXPECT_NEAR(s.entropy_norm, (1 + 0 + 1) / 3.0, 1e-12);  // row 2: uniform over its 2 visible keys
  EXPECT_NEAR(s.max_weight, (0.25 + 1 + 0.5) / 3.0, 1e-12);
  EXPECT_EQ(s.max_logit, 9);  // the masked 50s do not count
  double uniform4 = std::sqrt(0.25 - 2 * 4 * std::pow(0.25, 3) + 0.0625);
  double half2 = std::sqrt(0.5 - 2 * 0.25 + 0.25);
  EXPECT_NEAR(s.jacobian_norm, (uniform4 + 0 + half2) / 3.0, 1e-12);
}

TEST(StudyMetrics, SampleVariance) {
  EXPECT_NEAR(sample_variance(from_vector({1, 2, 3, 4}, DType::Float64)), 5.0 / 3.0, 1e-12);
}

// Rows where each constant mode's variance is exactly d_k s^2.
std::vector<InitRow> ideal_rows(double none_error) {
  std::vector<InitRow> rows;
  for (const std::string& mode : study_modes())
    for (int64_t d : {4, 1024}) {
      InitRow r;
      r.mode = mode, r.d_k = d, r.n_keys = 64;
      double s = mode == "none"           ? 1
                 : mode == "inv_dk"       ? 1.0 / d
                 : mode == "inv_2sqrt_dk" ? 0.5 / std::sqrt(d)
                                          : 1 / std::sqrt(d);
      r.logit_var = d * s * s * (mode == "none" ? 1 + none_error : 1);
      r.entropy_norm = mode == "inv_dk" && d == 1024 ? 0.9999
                       : mode == "none" && d == 1024 ? 0.03
                                                     : 0.9;
      r.max_weight = mode == "inv_dk" && d == 1024 ? 0.017
                     : mode == "none" && d == 1024 ? 0.95
                                                   : 0.1;
      r.jacobian_norm = mode == "inv_dk" && d == 1024 ? std::sqrt(1.0 / 64 - 1.0 / 4096)
                        : mode == "none" && d == 1024 ? 0.06
                                                      : 0.18;
      r.grad_norm_wq = 1;
      rows.push_back(r);
    }
  return rows;
}

TEST(StudyVerdicts, FollowTheNumbers) {
  PartBResult none_trained;
  std::vector<Verdict> ok = judge_claims(ideal_rows(0.01), none_trained);
  EXPECT_EQ(ok[0].verdict, "holds");  // C1 within 5%
  EXPECT_EQ(ok[1].verdict, "holds");
  EXPECT_EQ(ok[2].verdict, "holds");
  EXPECT_EQ(ok[5].verdict, "holds");  // C6
  std::vector<Verdict> off = judge_claims(ideal_rows(0.2), none_trained);
  EXPECT_EQ(off[0].verdict, "does not hold");  // a 20% error fails C1
  EXPECT_NE(off[0].why.find("20"), std::string::npos) << off[0].why;
}

}  // namespace
}  // namespace gradflow::study
