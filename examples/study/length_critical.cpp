// Item 4 of the length part: the critical factor of Chen, Lin, Polyanskiy
// and Rigollet (2025, "critical attention scaling"). One pre-LN attention
// layer with identity projections on n unit tokens of pairwise correlation
// rho, logits times beta = gamma log n: token i's weight on itself is about
// 1 / (1 + (n - 1) n^(-gamma (1 - rho))), so for n -> infinity it jumps from
// 0 (every token collapses to the mean) to 1 (attention is the identity) at
// gamma* = 1 / (1 - rho). At toy scale the jump is a slope, and what the
// angle between x_i and y_i does on it depends on n and dim:
// toy_critical_gamma says how.
//
// Claim judged here: C19.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "autograd/ops.h"
#include "examples/study/claims.h"
#include "examples/study/length_probe.h"
#include "examples/study/parts.h"
#include "examples/toolkit/plot/svg_heatmap.h"
#include "tensor/creation.h"
#include "tensor/elementwise.h"
#include "tensor/error.h"

namespace gradflow::study {
namespace {

constexpr uint64_t kPartId = 21;  // init_generator's experiment number
constexpr double kDegrees = 180 / 3.14159265358979323846;
constexpr int kResamples = 2000;

// The layer on unit tokens x (1, 1, n, D): y = softmax(beta x x^T) x, and
// the mean over tokens of the angle between x_i and y_i, in degrees.
double layer_angle(const Tensor& x, double beta) {
  NoGradGuard no_grad;
  Variable xv(x);
  const Tensor y = nn::scaled_dot_product_attention(xv, xv, xv, Tensor(), beta).data().contiguous();
  const int64_t n = x.shape()[2], d = x.shape()[3];
  const std::vector<double> xs = x.contiguous().to_vector(), ys = y.to_vector();
  double total = 0;
  for (int64_t i = 0; i < n; ++i) {
    double xy = 0, xx = 0, yy = 0;
    for (int64_t j = i * d; j < (i + 1) * d; ++j)
      xy += xs[j] * ys[j], xx += xs[j] * xs[j], yy += ys[j] * ys[j];
    total += std::acos(std::clamp(xy / std::sqrt(xx * yy), -1.0, 1.0)) * kDegrees;
  }
  return total / static_cast<double>(n);
}

// gamma where `angles` (over `gammas`, gammas[0] = 0) first falls to half
// angles[0], linearly interpolated; NaN if it never does.
double half_angle_gamma(const std::vector<double>& gammas, const std::vector<double>& angles) {
  const double half = angles[0] / 2;
  for (size_t i = 1; i < angles.size(); ++i)
    if (angles[i] <= half) {
      const double t = (angles[i - 1] - half) / (angles[i - 1] - angles[i]);
      return gammas[i - 1] + t * (gammas[i] - gammas[i - 1]);
    }
  return kNaN;
}

// Rows of one rho, in gamma order.
std::vector<const CriticalRow*> rows_of(const std::vector<CriticalRow>& rows, double rho) {
  std::vector<const CriticalRow*> out;
  for (const CriticalRow& r : rows)
    if (r.rho == rho) out.push_back(&r);
  return out;
}

std::vector<double> rhos_of(const std::vector<CriticalRow>& rows) {
  std::vector<double> out;
  for (const CriticalRow& r : rows)
    if (std::find(out.begin(), out.end(), r.rho) == out.end()) out.push_back(r.rho);
  return out;
}

// A gamma's position on the grid in cell units (cell i spans [i, i + 1],
// its centre the grid point), by linear interpolation; NaN off the grid.
double column_of(const std::vector<double>& gammas, double gamma) {
  for (size_t i = 1; i < gammas.size(); ++i)
    if (gamma >= gammas[i - 1] && gamma <= gammas[i])
      return static_cast<double>(i - 1) + 0.5 +
             (gamma - gammas[i - 1]) / (gammas[i] - gammas[i - 1]);
  return kNaN;
}

}  // namespace

std::vector<double> gamma_grid(double from, double to, double step) {
  if (!(step > 0) || !(to >= from)) fail("gamma_grid: needs step > 0 and to >= from");
  std::vector<double> out;
  for (int64_t i = 0; from + static_cast<double>(i) * step <= to + step * 1e-9; ++i)
    out.push_back(from + static_cast<double>(i) * step);
  return out;
}

double critical_angle(const std::vector<std::vector<double>>& tokens, double beta) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (n < 1) fail("critical_angle: no tokens");
  const int64_t d = static_cast<int64_t>(tokens[0].size());
  std::vector<double> flat;
  for (const std::vector<double>& t : tokens) {
    if (static_cast<int64_t>(t.size()) != d) fail("critical_angle: tokens of different sizes");
    flat.insert(flat.end(), t.begin(), t.end());
  }
  return layer_angle(from_vector(flat, {1, 1, n, d}, DType::Float64), beta);
}

std::vector<CriticalRow> measure_critical(const CriticalOptions& o, uint64_t seed) {
  if (o.tokens < 2 || o.dim < 2 || o.draws < 2 || o.rhos.empty() || o.gammas.empty() ||
      o.gammas.front() != 0)
    fail(
        "measure_critical: needs tokens, dim and draws >= 2, some rhos, and gammas starting at "
        "0; got tokens ",
        o.tokens, ", dim ", o.dim, ", draws ", o.draws, ", ", o.rhos.size(), " rhos, ",
        o.gammas.size(), " gammas");
  for (double rho : o.rhos)
    if (!(rho >= 0 && rho < 1)) fail("measure_critical: rho must be in [0, 1), got ", rho);
  const int64_t n = o.tokens, d = o.dim;
  const double log_n = std::log(static_cast<double>(n));
  std::vector<CriticalRow> rows;
  for (double rho : o.rhos)
    for (double gamma : o.gammas) rows.push_back({.rho = rho, .gamma = gamma});
  for (size_t ri = 0; ri < o.rhos.size(); ++ri) {
    const double rho = o.rhos[ri];
    for (int64_t draw = 0; draw < o.draws; ++draw) {
      check_stop();
      Generator gen = init_generator(seed, kPartId, ri, d, n, draw);
      // Shapes: z (D), e (n, D); x_i = sqrt(rho) z + sqrt(1 - rho) e_i.
      Tensor z = zeros({1, d}), e = zeros({n, d});
      fill_normal({z.data<float>(), static_cast<size_t>(d)}, gen);
      fill_normal({e.data<float>(), static_cast<size_t>(n * d)}, gen);
      Tensor x = add(mul(z, std::sqrt(rho)), mul(e, std::sqrt(1 - rho)));
      // Pre-LN: LayerNorm (weight 1, bias 0) gives each token mean 0 and
      // variance 1, so norm sqrt(D); divided by sqrt(D), norm 1.
      Tensor tokens;
      {
        NoGradGuard no_grad;
        tokens = layer_norm(Variable(x), Variable(ones({d})), Variable(zeros({d})), 1e-5).data();
      }
      tokens = mul(tokens, 1 / std::sqrt(static_cast<double>(d))).reshape({1, 1, n, d});
      for (size_t gi = 0; gi < o.gammas.size(); ++gi)
        rows[ri * o.gammas.size() + gi].draw_angles.push_back(
            layer_angle(tokens, o.gammas[gi] * log_n));
    }
  }
  for (CriticalRow& r : rows) r.angle_deg = mean_and_se(r.draw_angles);
  return rows;
}

double toy_critical_gamma(double rho, int64_t tokens, int64_t dim) {
  // Mean field: x_i = sqrt(rho) u + sqrt(1 - rho) e_i with u, e_i unit and
  // orthogonal. Others' logits beta <x_i, x_j> are beta rho plus noise of
  // variance s2 = beta^2 (1 - rho^2) / dim, so their total weight is
  // (n - 1) e^(beta rho + s2 / 2) against e^beta for i itself, and their
  // weighted mean is sqrt(rho) u + sqrt(1 - rho) e_bar with
  // |e_bar|^2 = e^(s2) / (n - 1) (the weights' effective count). Then
  // y = p x_i + (1 - p) m and cos(x_i, y) = (rho + p (1 - rho)) / |y|.
  const double n = static_cast<double>(tokens), log_n = std::log(n);
  auto angle = [&](double gamma) {
    const double beta = gamma * log_n;
    const double s2 = beta * beta * (1 - rho * rho) / static_cast<double>(dim);
    const double p = 1 / (1 + (n - 1) * std::exp(-beta * (1 - rho) + s2 / 2));
    const double y2 = rho + (1 - rho) * (p * p + (1 - p) * (1 - p) * std::exp(s2) / (n - 1));
    return std::acos(std::clamp((rho + p * (1 - rho)) / std::sqrt(y2), -1.0, 1.0));
  };
  const double half = angle(0) / 2, step = 1e-3;
  for (double g = step; g < 50; g += step)
    if (angle(g) <= half) {
      const double a = angle(g - step), b = angle(g);
      return g - step + step * (a - half) / (a - b);
    }
  return kNaN;
}

std::vector<CriticalFit> critical_fits(const std::vector<CriticalRow>& rows, int64_t tokens,
                                       int64_t dim) {
  std::vector<CriticalFit> out;
  for (double rho : rhos_of(rows)) {
    const std::vector<const CriticalRow*> at = rows_of(rows, rho);
    if (at.front()->gamma != 0) fail("critical_fits: rho ", rho, "'s gammas must start at 0");
    std::vector<double> gammas, means;
    for (const CriticalRow* r : at) gammas.push_back(r->gamma), means.push_back(r->angle_deg.mean);
    CriticalFit f{
        .rho = rho, .predicted = 1 / (1 - rho), .toy = toy_critical_gamma(rho, tokens, dim)};
    f.measured = no_interval();
    f.measured.mean = half_angle_gamma(gammas, means);
    f.measured.method = IntervalMethod::PercentileBootstrap;
    // Bootstrap over draws: a draw's tokens served every gamma, so a
    // resample takes whole draws (curves), not single angles.
    const size_t draws = at.front()->draw_angles.size();
    f.measured.n = static_cast<int64_t>(draws);
    std::vector<double> boot;
    Generator gen(0x5eedULL + static_cast<uint64_t>(std::lround(rho * 1000)));
    for (int b = 0; b < kResamples && draws >= 2; ++b) {
      std::vector<double> curve(at.size(), 0);
      for (size_t k = 0; k < draws; ++k) {
        const size_t pick = static_cast<size_t>(gen.below(draws));
        for (size_t g = 0; g < at.size(); ++g)
          curve[g] += at[g]->draw_angles.at(pick) / static_cast<double>(draws);
      }
      boot.push_back(half_angle_gamma(gammas, curve));
    }
    if (!boot.empty() &&
        std::all_of(boot.begin(), boot.end(), [](double v) { return std::isfinite(v); })) {
      std::sort(boot.begin(), boot.end());
      auto quantile = [&](double q) {
        const double pos = q * static_cast<double>(boot.size() - 1);
        const size_t i = static_cast<size_t>(pos);
        const double t = pos - static_cast<double>(i);
        return i + 1 < boot.size() ? boot[i] * (1 - t) + boot[i + 1] * t : boot[i];
      };
      f.measured.lo = quantile(0.025), f.measured.hi = quantile(0.975);
      f.measured.half_width = (f.measured.hi - f.measured.lo) / 2;
    }
    out.push_back(f);
  }
  return out;
}

CsvFile critical_csv(const std::vector<CriticalRow>& rows) {
  CsvFile f{"length_critical.csv",
            {"rho", "gamma", "draws", "angle_deg", "angle_deg_se", "angle_norm"},
            {}};
  for (const CriticalRow& r : rows) {
    const double base = rows_of(rows, r.rho).front()->angle_deg.mean;
    CsvRow row{r.rho, r.gamma, r.angle_deg.n};
    add_estimate(row, r.angle_deg);
    row.push_back(csv_number(r.angle_deg.mean / base));
    f.rows.push_back(row);
  }
  return f;
}

PlotFile critical_plot(const std::vector<CriticalRow>& rows, const std::vector<CriticalFit>& fits) {
  const std::vector<double> rhos = rhos_of(rows);
  if (rhos.empty()) fail("critical_plot: no rows");
  std::vector<double> gammas;
  for (const CriticalRow* r : rows_of(rows, rhos.front())) gammas.push_back(r->gamma);
  plot::Heatmap map{.title = "Angle between x_i and y_i / its value at gamma = 0",
                    .rows = static_cast<int64_t>(rhos.size()),
                    .columns = static_cast<int64_t>(gammas.size())};
  for (double rho : rhos) {
    const std::vector<const CriticalRow*> at = rows_of(rows, rho);
    if (at.size() != gammas.size()) fail("critical_plot: rho ", rho, " has another gamma grid");
    for (const CriticalRow* r : at)
      map.values.push_back(std::clamp(r->angle_deg.mean / at.front()->angle_deg.mean, 0.0, 1.0));
  }
  // The prediction 1/(1 - rho) through the rows' centres, rho linear
  // between neighbouring rows; the measured gamma* of each row as markers.
  plot::HeatmapOverlay predicted{.label = "gamma = 1/(1 - rho)", .color = "#d55e00"};
  for (size_t i = 0; i < rhos.size(); ++i)
    for (int k = 0; k < (i + 1 < rhos.size() ? 10 : 1); ++k) {
      const double t = k / 10.0;
      const double rho = i + 1 < rhos.size() ? rhos[i] + t * (rhos[i + 1] - rhos[i]) : rhos[i];
      const double c = column_of(gammas, 1 / (1 - rho));
      if (std::isfinite(c))
        predicted.rows.push_back(static_cast<double>(i) + 0.5 + t), predicted.columns.push_back(c);
    }
  plot::HeatmapOverlay measured{
      .label = "measured gamma*", .color = "#f0f0f0", .line = false, .markers = true};
  for (size_t i = 0; i < rhos.size(); ++i)
    for (const CriticalFit& f : fits)
      if (f.rho == rhos[i] && std::isfinite(column_of(gammas, f.measured.mean)))
        measured.rows.push_back(static_cast<double>(i) + 0.5),
            measured.columns.push_back(column_of(gammas, f.measured.mean));
  map.overlays = {predicted, measured};
  std::ostringstream rho_list;
  for (size_t i = 0; i < rhos.size(); ++i) rho_list << (i ? ", " : "") << rhos[i];
  map.notes = {"rows, top to bottom: rho = " + rho_list.str(),
               "columns, left to right: gamma = " + significant(gammas.front()) + " to " +
                   significant(gammas.back()) + " (" + std::to_string(gammas.size()) + " values)",
               "orange line: the prediction gamma* = 1/(1 - rho); white dots: measured gamma*"};
  return {"length_critical.svg",
          plot::render_heatmap_grid({{.panels = {map}}},
                                    {.matrix_size = 16.0 * static_cast<double>(gammas.size()),
                                     .legend = "angle / angle at gamma 0"}),
          "One pre-LN attention layer with identity projections on n unit tokens of pairwise "
          "correlation rho, logits times gamma log n: the mean angle between each token and its "
          "output, divided by its value at gamma = 0 (so each row starts at 1, the collapse onto "
          "the mean; 0 is the identity), means over draws. The orange line is the predicted "
          "critical factor 1/(1 - rho), the white dots where each row's angle falls to half."};
}

Verdict critical_claim(const std::vector<CriticalFit>& fits) {
  std::string measured, toy;
  std::vector<Outcome> outcomes;
  const double tolerance = criterion("C19", "a").margin;
  for (const CriticalFit& f : fits) {
    const double lo = f.measured.lo / f.predicted, hi = f.measured.hi / f.predicted;
    outcomes.push_back(
        {.criterion = "a",
         .passed = lo >= 1 - tolerance && hi <= 1 + tolerance,
         .setting = "rho " + significant(f.rho),
         .estimate = {f.measured.mean / f.predicted - 1, kNaN, lo - 1, hi - 1, f.measured.n}});
    measured += (measured.empty() ? "" : "; ") + std::string("rho ") + significant(f.rho) + ": " +
                significant(f.measured.mean, 3) + " [" + significant(f.measured.lo, 3) + ", " +
                significant(f.measured.hi, 3) + "] vs " + significant(f.predicted, 3) + " (ratio " +
                significant(f.measured.mean / f.predicted, 3) + ")";
    toy += (toy.empty() ? "" : ", ") + significant(f.toy, 3);
  }
  if (fits.empty()) return judge("C19", {}, {}, "no rho measured", false, {"a"});
  return judge(
      "C19", outcomes, {},
      measured +
          " (gamma* where the mean angle falls to half its gamma = 0 value; 95% bootstrap "
          "intervals over draws). At toy scale the half-angle point is not where the self weight "
          "is 1/2: the others' mean is sqrt(rho) u plus noise of norm about 1/sqrt(n), so for "
          "small rho it is short and the output turns toward x_i at a smaller self weight; and "
          "noise of variance (1 - rho^2)/dim in <x_i, x_j> adds e^(beta^2 sd^2 / 2) to the "
          "others' weight. The mean-field half-angle points with both effects: " +
          toy + " (per rho, in order)");
}

}  // namespace gradflow::study
