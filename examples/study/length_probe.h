// The length part's two measurements without training (issue #20, items 2
// and 4): how attention behaves as the number of keys n grows, at
// initialisation, and the critical factor gamma* in a logit factor
// gamma log n (Chen, Lin, Polyanskiy, Rigollet 2025). Each is a measurement
// that gives rows, and functions that turn rows into the part's CSV file,
// figure and verdicts, so the claims can be judged (and tested) on rows made
// by hand.
//
//   length_init.cpp      item 2: top weight, normalised entropy and the
//                        weight on a planted key against n, per scale mode;
//                        claims C16 and C17
//   length_critical.cpp  item 4: the angle a pre-LN attention layer turns
//                        its tokens by, over (rho, gamma); claim C19
//
// Both use the library's own code for the weights: the mode's fixed factor
// and its variant on q, k and the scores (nn/scale_modes.h), in
// nn::scaled_dot_product_attention.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "examples/study/study.h"

namespace gradflow::study {

// ---- Item 2: attention against the number of keys, at initialisation ------------
struct LengthInitOptions {
  int64_t d_k = 64;
  // L, the length the layer is built for: ssmax's s starts at
  // 1/(sqrt(d_k) log L), so at n = L ssmax equals 1/sqrt(d_k).
  int64_t built_len = 64;
  std::vector<int64_t> ns = {8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096};
  int64_t draws = 1000;  // per (mode, n); the same draws serve every mode
  std::vector<std::string> modes = {"inv_sqrt_dk", "inv_dk", "none", "log_n", "ssmax"};
};

// One (mode, n): means over draws with their standard errors.
struct LengthInitRow {
  std::string mode;
  int64_t n = 0, draws = 0;
  Interval max_weight{};    // independent q and k: the largest weight
  Interval entropy_norm{};  // independent q and k: H(p) / log(n)
  Interval planted_mass{};  // key 0 a copy of q: the weight on it
};

// Per draw and n: one query q and n keys k in d_k dimensions, entries
// i.i.d. N(0, 1). The random case scores q against the keys as drawn; the
// planted case (Nakanishi 2025, Fig. 1's input) replaces key 0 by a copy of
// q. q, k and the scores are transformed by the mode's variant (built with
// heads 1 and max_len built_len) as a layer with n visible keys would, around
// attention with the mode's fixed factor. Every mode sees the same draws (paired). Rows in the
// order modes x ns. Throws Error for an empty or invalid option.
std::vector<LengthInitRow> measure_length_init(const LengthInitOptions& options, uint64_t seed);

// The weights softmax(factor q'.k) in float32 of one query against keys (n, d_k) under
// `mode` (the variant's transform, then scaled_dot_product_attention with a
// probe): the measurement's single step, for tests.
std::vector<double> length_weights(const std::string& mode, const std::vector<double>& q,
                                   const std::vector<std::vector<double>>& keys, int64_t built_len);

// A power law fitted to rows: the least-squares slope b of log(field)
// against log(n) over the rows with n >= n_from, and its 95% interval by the
// delta method (the rows' draws are independent across n, so
// Var(b) = sum_i c_i^2 (se_i / mean_i)^2 with c_i the OLS weights).
struct PowerFit {
  std::string mode;
  double slope = kNaN, lo = kNaN, hi = kNaN;
  int64_t points = 0;
};
PowerFit power_fit(const std::vector<LengthInitRow>& rows, const std::string& mode,
                   Interval LengthInitRow::*field, int64_t n_from);
// The upper half of the n range, in log n: the smallest n with
// log n >= (log n_min + log n_max) / 2.
int64_t upper_half_start(const std::vector<LengthInitRow>& rows);

// "length_metrics.csv": mode,n,draws,max_weight,max_weight_se,entropy_norm,
// entropy_norm_se,planted_mass,planted_mass_se.
CsvFile length_metrics_csv(const std::vector<LengthInitRow>& rows);
// "length_init.svg": top weight, normalised entropy and planted mass against
// n (log x), a line per mode with 95% intervals.
PlotFile length_init_plot(const std::vector<LengthInitRow>& rows);
// C16 "With a fixed scale, attention disperses as the number of keys grows",
// judged on the modes whose factor does not depend on n.
Verdict dispersion_claim(const std::vector<LengthInitRow>& rows);
// C17 "Log-n scaling keeps attention sharp as the number of keys grows",
// judged on log_n and ssmax; `built_len` is the n at which ssmax starts
// equal to 1/sqrt(d_k), the reference point.
Verdict log_n_claim(const std::vector<LengthInitRow>& rows, int64_t built_len = 64);

// The margin both claims use: a power of n within +-0.05 is "flat" (over
// 8 to 4096 keys n^-0.05 loses 27%), steeper than -0.05 "falls".
inline constexpr double kFlatSlope = 0.05;

// ---- Item 4: the critical factor ----------------------------------------------------
// from, from + step, ... up to `to` (within rounding), computed as from + i step.
std::vector<double> gamma_grid(double from, double to, double step);

struct CriticalOptions {
  int64_t tokens = 256, dim = 256, draws = 12;
  std::vector<double> rhos = {0, 0.2, 0.4, 0.6, 0.8};
  // 0 to 6 in steps of 0.1: up to 1.2 times the largest prediction (5), a
  // tenth of the smallest (1) per step.
  std::vector<double> gammas = gamma_grid(0, 6, 0.1);
};

// One (rho, gamma): the mean over tokens of the angle between x_i and y_i,
// in degrees, as a mean over draws with its 95% interval. `draw_angles`
// keeps each draw's value (for the bootstrap of gamma*).
struct CriticalRow {
  double rho = 0, gamma = 0;
  Interval angle_deg{};
  std::vector<double> draw_angles{};
};

// Per draw and rho: tokens x_i = sqrt(rho) z + sqrt(1 - rho) e_i (z shared,
// e_i independent, N(0, I_dim)), the library's LayerNorm (weight 1, bias 0)
// divided by sqrt(dim) so each has norm 1; then, for each gamma, attention
// with identity projections y = softmax(gamma log(n) X X^T) X. The same
// tokens serve every gamma of a draw. Rows in the order rhos x gammas.
std::vector<CriticalRow> measure_critical(const CriticalOptions& options, uint64_t seed);

// The layer's mean angle in degrees for given unit tokens (n, dim) at
// logit factor beta: the measurement's single step, for tests.
double critical_angle(const std::vector<std::vector<double>>& tokens, double beta);

// gamma* per rho: where the mean angle falls to half its gamma = 0 value
// (linear interpolation on the grid), its 95% interval by bootstrap over
// draws; `predicted` 1/(1 - rho); `toy` the same mean-field argument's
// half-angle point at this n and dim (length_critical.cpp says how).
struct CriticalFit {
  double rho = 0, predicted = 0, toy = kNaN;
  Interval measured{};
};
std::vector<CriticalFit> critical_fits(const std::vector<CriticalRow>& rows, int64_t tokens = 256,
                                       int64_t dim = 256);
// The half-angle point of a mean-field layer on n unit tokens of
// correlation rho in `dim` dimensions (NaN when it has none).
double toy_critical_gamma(double rho, int64_t tokens, int64_t dim);

// "length_critical.csv": rho,gamma,draws,angle_deg,angle_deg_se,angle_norm.
CsvFile critical_csv(const std::vector<CriticalRow>& rows);
// "length_critical.svg": a heat map over (rho, gamma) of the angle divided
// by its gamma = 0 value, with 1/(1 - rho) and the measured gamma* drawn on.
PlotFile critical_plot(const std::vector<CriticalRow>& rows, const std::vector<CriticalFit>& fits);
// C19 "The critical factor gamma* in gamma log n matches 1/(1 - rho) at toy
// scale": every rho's measured / predicted within [1 - kCriticalTolerance,
// 1 + kCriticalTolerance], the whole 95% interval.
Verdict critical_claim(const std::vector<CriticalFit>& fits);
inline constexpr double kCriticalTolerance = 0.15;

}  // namespace gradflow::study
