// The length part's measurements without training (examples/study/
// length_probe.h): the weights (float32, as measured) and angles by hand, the power-law fit, the
// claims on rows made by hand, the CSV columns, and determinism on small
// options.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "examples/study/length_probe.h"
#include "tensor/error.h"

namespace gradflow::study {
namespace {

constexpr double kDeg = 180 / 3.14159265358979323846;

// q = (1, 1, 1, 1) against key 0 = q (q.k = 4) and key 1 = (-1, -1, 0, 0)
// (q.k = -2), d_k = 4: a sign or an offset in the factor would show.
const std::vector<double> kQuery = {1, 1, 1, 1};
const std::vector<std::vector<double>> kKeys = {{1, 1, 1, 1}, {-1, -1, 0, 0}};

TEST(StudyLength, WeightsOfTwoKeysByHandPerMode) {
  // inv_sqrt_dk: logits 4/2 = 2 and -1: p0 = e^3 / (e^3 + 1).
  std::vector<double> w = length_weights("inv_sqrt_dk", kQuery, kKeys, 64);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_NEAR(w[0], std::exp(3.0) / (std::exp(3.0) + 1), 1e-6);
  EXPECT_NEAR(w[1], 1 / (std::exp(3.0) + 1), 1e-6);
  // log_n at n = 2: logits 2 log 2 = log 4 and -log 2: weights 4 : 1/2, p0 = 8/9.
  w = length_weights("log_n", kQuery, kKeys, 64);
  EXPECT_NEAR(w[0], 8.0 / 9, 1e-6);
  // ssmax built for L = 4: s log 2 = log 2 / (2 log 4) = 1/4: logits 1 and -1/2.
  w = length_weights("ssmax", kQuery, kKeys, 4);
  EXPECT_NEAR(w[0], std::exp(1.5) / (std::exp(1.5) + 1), 1e-6);
  // Built for L = 2 = n it equals 1/sqrt(d_k).
  EXPECT_NEAR(length_weights("ssmax", kQuery, kKeys, 2)[0], std::exp(3.0) / (std::exp(3.0) + 1),
              1e-6);
  // none: logits 4 and -2; inv_dk: 1 and -1/2.
  EXPECT_NEAR(length_weights("none", kQuery, kKeys, 64)[0], std::exp(6.0) / (std::exp(6.0) + 1),
              1e-6);
  EXPECT_NEAR(length_weights("inv_dk", kQuery, kKeys, 64)[0], std::exp(1.5) / (std::exp(1.5) + 1),
              1e-6);
  EXPECT_THROW(length_weights("inv_sqrt_dk", kQuery, {{1, 2}}, 64), Error);
  EXPECT_THROW(length_weights("no_such_mode", kQuery, kKeys, 64), Error);
}

LengthInitOptions small_init() {
  return {.d_k = 8,
          .built_len = 16,
          .ns = {4, 16, 64},
          .draws = 40,
          .modes = {"inv_sqrt_dk", "log_n", "ssmax"}};
}

const LengthInitRow& row_of(const std::vector<LengthInitRow>& rows, const std::string& mode,
                            int64_t n) {
  for (const LengthInitRow& r : rows)
    if (r.mode == mode && r.n == n) return r;
  throw std::runtime_error("no row " + mode);
}

TEST(StudyLength, MeasuredRowsAreDeterministicBoundedAndPaired) {
  const std::vector<LengthInitRow> a = measure_length_init(small_init(), 7);
  const std::vector<LengthInitRow> b = measure_length_init(small_init(), 7);
  ASSERT_EQ(a.size(), 9u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].mode, b[i].mode);
    EXPECT_EQ(a[i].planted_mass.mean, b[i].planted_mass.mean);
    EXPECT_EQ(a[i].max_weight.mean, b[i].max_weight.mean);
    EXPECT_EQ(a[i].entropy_norm.mean, b[i].entropy_norm.mean);
    EXPECT_EQ(a[i].draws, 40);
    // The top weight lies between 1/n and 1, the entropy between 0 and 1.
    EXPECT_GE(a[i].max_weight.mean, 1.0 / double(a[i].n) - 1e-6);
    EXPECT_LE(a[i].max_weight.mean, 1.0 + 1e-6);
    EXPECT_GE(a[i].entropy_norm.mean, 0.0);
    EXPECT_LE(a[i].entropy_norm.mean, 1.0 + 1e-6);
  }
  // Every mode sees the same draws, and ssmax at n = L is 1/sqrt(d_k): the
  // same weights, up to float32 rounding.
  const LengthInitRow& s = row_of(a, "ssmax", 16);
  const LengthInitRow& t = row_of(a, "inv_sqrt_dk", 16);
  EXPECT_NEAR(s.max_weight.mean, t.max_weight.mean, 1e-5);
  EXPECT_NEAR(s.planted_mass.mean, t.planted_mass.mean, 1e-5);
  // Another seed, other draws.
  EXPECT_NE(measure_length_init(small_init(), 8)[0].max_weight.mean, a[0].max_weight.mean);
  LengthInitOptions bad = small_init();
  bad.ns = {1};
  EXPECT_THROW(measure_length_init(bad, 0), Error);
  bad = small_init();
  bad.modes = {"nope"};
  EXPECT_THROW(measure_length_init(bad, 0), Error);
}

// Rows whose three fields follow c n^slope, with 1% standard errors.
std::vector<LengthInitRow> power_rows(const std::string& mode, double slope) {
  std::vector<LengthInitRow> rows;
  for (int64_t n : {8, 64, 512, 4096}) {
    const double v = 0.9 * std::pow(double(n) / 8, slope);
    const Interval e = mean_and_se(v, 0.01 * v, 1000);
    rows.push_back({mode, n, 1000, e, mean_and_se(0.5, 0.001, 1000), e});
  }
  return rows;
}

std::vector<LengthInitRow> joined(std::vector<LengthInitRow> a,
                                  const std::vector<LengthInitRow>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(StudyLength, PowerFitRecoversTheExponentAndItsInterval) {
  const std::vector<LengthInitRow> rows = power_rows("inv_dk", -0.9);
  EXPECT_EQ(upper_half_start(rows), 512);  // log 8 .. log 4096, middle at sqrt(8 * 4096) = 181
  const PowerFit f = power_fit(rows, "inv_dk", &LengthInitRow::planted_mass, 512);
  EXPECT_EQ(f.points, 2);
  EXPECT_NEAR(f.slope, -0.9, 1e-9);
  // Two points a log 8 apart, each log-sd 0.01: sd of the slope sqrt(2) 0.01 / log 8.
  EXPECT_NEAR(f.hi - f.slope, 1.96 * std::sqrt(2.0) * 0.01 / std::log(8.0), 1e-9);
  EXPECT_TRUE(std::isnan(power_fit(rows, "none", &LengthInitRow::planted_mass, 8).slope));
}

TEST(StudyLength, DispersionClaimHoldsForAFallingSeriesNotAFlatOne) {
  EXPECT_EQ(
      dispersion_claim(joined(power_rows("inv_sqrt_dk", -0.9), power_rows("inv_dk", -1))).verdict,
      "holds");
  EXPECT_EQ(dispersion_claim(power_rows("inv_sqrt_dk", 0)).verdict, "does not hold");
  const Verdict partly =
      dispersion_claim(joined(power_rows("inv_sqrt_dk", -0.9), power_rows("none", 0)));
  EXPECT_EQ(partly.verdict, "partly holds");
  EXPECT_EQ(partly.id, "C16");
  // log_n is not a fixed scale: its rows are not judged here.
  EXPECT_EQ(dispersion_claim(joined(power_rows("inv_dk", -1), power_rows("log_n", 0))).verdict,
            "holds");
}

TEST(StudyLength, LogNClaimHoldsForAFlatSeriesNotAFallingOne) {
  EXPECT_EQ(log_n_claim(joined(power_rows("log_n", 0), power_rows("ssmax", 0.01)), 64).verdict,
            "holds");
  EXPECT_EQ(log_n_claim(power_rows("log_n", -0.5), 64).verdict, "does not hold");
  EXPECT_EQ(log_n_claim(joined(power_rows("log_n", 0), power_rows("ssmax", -0.5)), 64).verdict,
            "partly holds");
  EXPECT_EQ(log_n_claim(power_rows("inv_dk", 0), 64).verdict, "unclear");
}

TEST(StudyLength, MetricsCsvHasTheIssuesColumns) {
  const CsvFile f = length_metrics_csv(power_rows("log_n", 0));
  EXPECT_EQ(f.name, "length_metrics.csv");
  EXPECT_EQ(f.columns, (std::vector<std::string>{"mode", "n", "draws", "max_weight",
                                                 "max_weight_se", "entropy_norm", "entropy_norm_se",
                                                 "planted_mass", "planted_mass_se"}));
  ASSERT_EQ(f.rows.size(), 4u);
  EXPECT_EQ(f.rows[0].size(), f.columns.size());
  EXPECT_EQ(f.rows[1][0].text(), "log_n");
  EXPECT_EQ(f.rows[1][1].text(), "64");
  const PlotFile p = length_init_plot(power_rows("log_n", 0));
  EXPECT_EQ(p.name, "length_init.svg");
  EXPECT_NE(p.svg.find("</svg>"), std::string::npos);
}

TEST(StudyLength, CriticalAngleOfHandMadeTokens) {
  // beta 0: every output is the mean. Tokens (1, 0), (0, 1), (-1, 0): mean
  // (0, 1/3), at 90, 0 and 90 degrees from them: mean 60.
  EXPECT_NEAR(critical_angle({{1, 0}, {0, 1}, {-1, 0}}, 0), 60, 1e-9);
  // Two orthogonal tokens at beta = log 3: self weight 3/4, y_1 = (3/4, 1/4),
  // at atan(1/3) from x_1; the same for x_2.
  EXPECT_NEAR(critical_angle({{1, 0}, {0, 1}}, std::log(3.0)), std::atan(1.0 / 3) * kDeg, 1e-9);
  EXPECT_THROW(critical_angle({{1, 0}, {1}}, 1), Error);
}

CriticalOptions small_critical() {
  return {.tokens = 8, .dim = 8, .draws = 3, .rhos = {0, 0.5}, .gammas = {0, 1, 2}};
}

TEST(StudyLength, CriticalRowsAreDeterministicAndFallWithGamma) {
  const std::vector<CriticalRow> a = measure_critical(small_critical(), 3);
  const std::vector<CriticalRow> b = measure_critical(small_critical(), 3);
  ASSERT_EQ(a.size(), 6u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].angle_deg.mean, b[i].angle_deg.mean);
    EXPECT_EQ(a[i].draw_angles.size(), 3u);
  }
  EXPECT_EQ(a[4].rho, 0.5);
  EXPECT_EQ(a[4].gamma, 1);
  // More weight on itself, a smaller angle: at gamma 2 below gamma 0.
  EXPECT_LT(a[2].angle_deg.mean, a[0].angle_deg.mean);
  const CsvFile f = critical_csv(a);
  EXPECT_EQ(f.name, "length_critical.csv");
  EXPECT_EQ(f.columns, (std::vector<std::string>{"rho", "gamma", "draws", "angle_deg",
                                                 "angle_deg_se", "angle_norm"}));
  EXPECT_EQ(f.rows[0].back().text(), "1");  // gamma 0 against itself
  CriticalOptions bad = small_critical();
  bad.gammas = {0.5, 1};
  EXPECT_THROW(measure_critical(bad, 0), Error);
  bad = small_critical();
  bad.rhos = {1};
  EXPECT_THROW(measure_critical(bad, 0), Error);
}

// Rows whose angle falls linearly, 90 - 30 gamma, two draws 1 degree either side.
std::vector<CriticalRow> linear_rows(double rho) {
  std::vector<CriticalRow> rows;
  for (double g : gamma_grid(0, 3, 0.5)) {
    CriticalRow r{.rho = rho, .gamma = g, .draw_angles = {91 - 30 * g, 89 - 30 * g}};
    r.angle_deg = mean_and_se(r.draw_angles);
    rows.push_back(r);
  }
  return rows;
}

TEST(StudyLength, CriticalFitIsTheHalfAnglePoint) {
  std::vector<CriticalRow> rows = linear_rows(0.2);
  const std::vector<CriticalFit> fits = critical_fits(rows, 256, 256);
  ASSERT_EQ(fits.size(), 1u);
  // Half of 90 at 90 - 30 gamma = 45: gamma 1.5.
  EXPECT_NEAR(fits[0].measured.mean, 1.5, 1e-12);
  EXPECT_NEAR(fits[0].predicted, 1.25, 1e-12);
  EXPECT_LE(fits[0].measured.lo, 1.5 + 1e-12);
  EXPECT_GE(fits[0].measured.hi, 1.5 - 1e-12);
  EXPECT_EQ(fits[0].measured.n, 2);
  // Two rows: 1/(1 - rho) from 1 to 1.25 is a line across them.
  for (const CriticalRow& r : linear_rows(0)) rows.push_back(r);
  const PlotFile p = critical_plot(rows, critical_fits(rows, 256, 256));
  EXPECT_EQ(p.name, "length_critical.svg");
  EXPECT_NE(p.svg.find("<polyline"), std::string::npos);  // 1/(1 - 0.2) on the grid
  EXPECT_NE(p.svg.find("<circle"), std::string::npos);
}

TEST(StudyLength, CriticalClaimHoldsAtThePredictionNotAtTwiceIt) {
  auto fit = [](double rho, double factor) {
    CriticalFit f{.rho = rho, .predicted = 1 / (1 - rho)};
    f.measured = mean_and_se(factor * f.predicted, 0.01 * f.predicted, 10);
    return f;
  };
  EXPECT_EQ(critical_claim({fit(0, 1), fit(0.5, 1.02)}).verdict, "holds");
  EXPECT_EQ(critical_claim({fit(0, 2), fit(0.5, 2)}).verdict, "does not hold");
  EXPECT_EQ(critical_claim({fit(0, 1), fit(0.5, 2)}).verdict, "partly holds");
  EXPECT_EQ(critical_claim({}).verdict, "unclear");
}

TEST(StudyLength, ToyPredictionApproachesTheAsymptoticOneForStrongCorrelation) {
  // At rho near 1 the others' mean is x_i's own direction; with many dims
  // the noise vanishes, and the half-angle point is near where the self
  // weight reaches tan(theta0 / 2) / tan(theta0), which for rho = 0.8 is
  // 0.47: gamma (1 - rho) = log((n - 1) 0.47 / 0.53) / log n.
  const double n = 256,
               p = std::tan(std::acos(std::sqrt(0.8)) / 2) / std::tan(std::acos(std::sqrt(0.8)));
  const double expected = std::log((n - 1) * p / (1 - p)) / std::log(n) / 0.2;
  EXPECT_NEAR(toy_critical_gamma(0.8, 256, 1 << 30), expected, 0.02);
}

}  // namespace
}  // namespace gradflow::study
