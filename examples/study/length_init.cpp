// Item 2 of the length part: attention against the number of keys n at
// initialisation, no training. For fixed scales the softmax's denominator
// grows like n while the top logit does not, so the largest weight and the
// weight on a matching key fall as n grows; log_n and ssmax multiply the
// logits by log n, and e^(c log n) = n^c grows with the denominator.
//
// Claims judged here: C16 (fixed scales disperse) and C17 (log-n scaling
// keeps attention sharp).
#include <algorithm>
#include <cmath>
#include <sstream>

#include "examples/study/claims.h"
#include "examples/study/length_probe.h"
#include "examples/study/parts.h"
#include "nn/scale_modes.h"
#include "tensor/creation.h"
#include "tensor/error.h"

namespace gradflow::study {
namespace {

constexpr uint64_t kPartId = 20;         // init_generator's experiment number
constexpr int64_t kBatchKeys = 1 << 15;  // keys per attention call, n x draws in it

bool grows_with_n(const std::string& mode) {
  const nn::ScaleMode m(mode);
  return m.is("log_n") || m.is("ssmax");
}

// The weights (B, 1, 1, n) of queries q (B, 1, 1, D) against keys
// k (B, 1, n, D) under `mode`, as a layer with n visible keys computes them:
// the mode's variant on q and k (if any), attention with its fixed factor,
// the variant's transform of the scores (softcap's cap) before the softmax.
Tensor mode_weights(const std::string& mode, const Tensor& q, const Tensor& k, int64_t built_len) {
  NoGradGuard no_grad;
  const nn::ScaleMode m(mode);
  const int64_t d_k = q.shape()[3], n = k.shape()[2];
  const auto variant = mode_variant(m, d_k, built_len);
  Variable qv(q), kv(k);
  if (variant) qv = variant->transform_query(qv, {.key_length = n});
  if (variant) kv = variant->transform_key(kv, {.key_length = n});
  nn::ScoreTransform transform = nullptr;
  if (variant && variant->transforms_scores())
    transform = [&](const Variable& logits) {
      return variant->transform_scores(logits, {.key_length = n});
    };
  nn::AttentionProbe probe;
  nn::scaled_dot_product_attention(qv, kv, kv, Tensor(), m.value(d_k), &probe, transform);
  return probe.weights.data().contiguous();
}

// Per row of weights (B rows of n): max, entropy / log n, weight on key 0.
struct RowStats {
  std::vector<double> max_weight, entropy, first;
};
void add_row_stats(const Tensor& weights, RowStats& out, bool random) {
  const int64_t n = weights.shape().back(), rows = weights.numel() / n;
  const std::vector<double> w = weights.to_vector();
  for (int64_t r = 0; r < rows; ++r) {
    const double* p = w.data() + r * n;
    if (!random) {
      out.first.push_back(p[0]);
      continue;
    }
    double top = 0, h = 0;
    for (int64_t j = 0; j < n; ++j) {
      top = std::max(top, p[j]);
      if (p[j] > 0) h -= p[j] * std::log(p[j]);
    }
    out.max_weight.push_back(top);
    out.entropy.push_back(h / std::log(static_cast<double>(n)));
  }
}

const LengthInitRow* find_row(const std::vector<LengthInitRow>& rows, const std::string& mode,
                              int64_t n) {
  for (const LengthInitRow& r : rows)
    if (r.mode == mode && r.n == n) return &r;
  return nullptr;
}

std::vector<std::string> modes_of(const std::vector<LengthInitRow>& rows) {
  std::vector<std::string> out;
  for (const LengthInitRow& r : rows)
    if (std::find(out.begin(), out.end(), r.mode) == out.end()) out.push_back(r.mode);
  return out;
}

// "n^-0.91 [-0.93, -0.89]"
std::string describe_fit(const PowerFit& f) {
  return "n^" + significant(f.slope, 2) + " [" + significant(f.lo, 2) + ", " +
         significant(f.hi, 2) + "]";
}

}  // namespace

std::vector<LengthInitRow> measure_length_init(const LengthInitOptions& o, uint64_t seed) {
  if (o.d_k < 1 || o.built_len < 2 || o.draws < 2 || o.ns.empty() || o.modes.empty())
    fail(
        "measure_length_init: needs d_k >= 1, built_len >= 2, draws >= 2, some n and modes; got "
        "d_k ",
        o.d_k, ", built_len ", o.built_len, ", draws ", o.draws, ", ", o.ns.size(), " n, ",
        o.modes.size(), " modes");
  for (int64_t n : o.ns)
    if (n < 2) fail("measure_length_init: every n must be at least 2, got ", n);
  for (const std::string& mode : o.modes) (void)nn::ScaleMode(mode);  // throws on a bad name

  const int64_t d = o.d_k;
  std::vector<LengthInitRow> rows;
  for (const std::string& mode : o.modes)
    for (int64_t n : o.ns) rows.push_back({.mode = mode, .n = n, .draws = o.draws});
  for (size_t ni = 0; ni < o.ns.size(); ++ni) {
    const int64_t n = o.ns[ni];
    std::vector<RowStats> stats(o.modes.size());
    const int64_t batch = std::clamp<int64_t>(kBatchKeys / n, 1, o.draws);
    for (int64_t start = 0; start < o.draws; start += batch) {
      check_stop();
      const int64_t b = std::min(batch, o.draws - start);
      Generator gen = init_generator(seed, kPartId, 0, d, n, start);
      // Shapes: q (b, 1, 1, D), keys (b, 1, n, D); entries N(0, 1).
      Tensor q = zeros({b, 1, 1, d}), k = zeros({b, 1, n, d});
      fill_normal({q.data<float>(), static_cast<size_t>(b * d)}, gen);
      fill_normal({k.data<float>(), static_cast<size_t>(b * n * d)}, gen);
      // The planted case: key 0 of each draw is a copy of its query.
      Tensor planted = k.clone();
      for (int64_t i = 0; i < b; ++i)
        std::copy_n(q.data<float>() + i * d, d, planted.data<float>() + i * n * d);
      for (size_t mi = 0; mi < o.modes.size(); ++mi) {
        add_row_stats(mode_weights(o.modes[mi], q, k, o.built_len), stats[mi], true);
        add_row_stats(mode_weights(o.modes[mi], q, planted, o.built_len), stats[mi], false);
      }
    }
    for (size_t mi = 0; mi < o.modes.size(); ++mi) {
      LengthInitRow& r = rows[mi * o.ns.size() + ni];
      r.max_weight = mean_and_se(stats[mi].max_weight);
      r.entropy_norm = mean_and_se(stats[mi].entropy);
      r.planted_mass = mean_and_se(stats[mi].first);
    }
  }
  return rows;
}

std::vector<double> length_weights(const std::string& mode, const std::vector<double>& q,
                                   const std::vector<std::vector<double>>& keys,
                                   int64_t built_len) {
  const int64_t d = static_cast<int64_t>(q.size()), n = static_cast<int64_t>(keys.size());
  std::vector<double> flat;
  for (const std::vector<double>& key : keys) {
    if (static_cast<int64_t>(key.size()) != d)
      fail("length_weights: a key has ", key.size(), " entries, the query ", d);
    flat.insert(flat.end(), key.begin(), key.end());
  }
  // Float32, as the measurement (and ssmax's s, which a float64 q would not multiply).
  return mode_weights(mode, from_vector(q, {1, 1, 1, d}), from_vector(flat, {1, 1, n, d}),
                      built_len)
      .to_vector();
}

PowerFit power_fit(const std::vector<LengthInitRow>& rows, const std::string& mode,
                   Interval LengthInitRow::*field, int64_t n_from) {
  std::vector<double> x, y, var;
  for (const LengthInitRow& r : rows) {
    const Interval& e = r.*field;
    if (r.mode != mode || r.n < n_from || !(e.mean > 0)) continue;
    x.push_back(std::log(static_cast<double>(r.n)));
    y.push_back(std::log(e.mean));
    var.push_back(std::isfinite(e.se) ? (e.se / e.mean) * (e.se / e.mean) : 0);
  }
  PowerFit f{.mode = mode, .points = static_cast<int64_t>(x.size())};
  if (x.size() < 2) return f;
  const double xbar = mean(x);
  double sxx = 0;
  for (double xi : x) sxx += (xi - xbar) * (xi - xbar);
  double b = 0, v = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double c = (x[i] - xbar) / sxx;
    b += c * y[i];
    v += c * c * var[i];
  }
  f.slope = b, f.lo = b - 1.96 * std::sqrt(v), f.hi = b + 1.96 * std::sqrt(v);
  return f;
}

int64_t upper_half_start(const std::vector<LengthInitRow>& rows) {
  if (rows.empty()) fail("upper_half_start: no rows");
  int64_t lo = rows.front().n, hi = lo;
  for (const LengthInitRow& r : rows) lo = std::min(lo, r.n), hi = std::max(hi, r.n);
  const double middle = (std::log(double(lo)) + std::log(double(hi))) / 2;
  int64_t start = hi;
  for (const LengthInitRow& r : rows)
    if (std::log(double(r.n)) >= middle - 1e-12) start = std::min(start, r.n);
  return start;
}

CsvFile length_metrics_csv(const std::vector<LengthInitRow>& rows) {
  CsvFile f{"length_metrics.csv",
            {"mode", "n", "draws", "max_weight", "max_weight_se", "entropy_norm", "entropy_norm_se",
             "planted_mass", "planted_mass_se"},
            {}};
  for (const LengthInitRow& r : rows) {
    CsvRow row{r.mode, r.n, r.draws};
    add_estimate(row, r.max_weight);
    add_estimate(row, r.entropy_norm);
    add_estimate(row, r.planted_mass);
    f.rows.push_back(row);
  }
  return f;
}

PlotFile length_init_plot(const std::vector<LengthInitRow>& rows) {
  struct Panel {
    const char* title;
    const char* y;
    bool log_y;
    Interval LengthInitRow::*field;
  };
  const Panel panels[] = {
      {"Largest weight, independent q and k", "max_j p_j", true, &LengthInitRow::max_weight},
      {"Entropy, independent q and k", "H(p) / log n", false, &LengthInitRow::entropy_norm},
      {"Weight on the planted key (a copy of q)", "p_0", true, &LengthInitRow::planted_mass}};
  std::vector<plot::Figure> figures;
  for (const Panel& p : panels) {
    plot::Figure f = figure(p.title, "number of keys n", true, p.y, p.log_y);
    for (const std::string& mode : modes_of(rows)) {
      plot::Series s = mode_series(mode, true);
      for (const LengthInitRow& r : rows)
        if (r.mode == mode) add_point(s, static_cast<double>(r.n), r.*p.field);
      f.series.push_back(s);
    }
    figures.push_back(f);
  }
  int64_t draws = rows.empty() ? 0 : rows.front().draws;
  return {"length_init.svg", plot::render_svg_grid(figures, 3, {.legend_once = true}),
          "Attention at initialisation against the number of keys n (log axes but the entropy's), "
          "per scale mode: one query against n keys, entries N(0, 1); left and middle the keys as "
          "drawn, right with key 0 replaced by a copy of the query. Means over " +
              std::to_string(draws) + " draws with 95% intervals; every mode sees the same draws."};
}

Verdict dispersion_claim(const std::vector<LengthInitRow>& rows) {
  const int64_t from = upper_half_start(rows);
  int fixed = 0, dispersing = 0;
  std::string measured, reason;
  std::vector<Outcome> outcomes;
  for (const std::string& mode : modes_of(rows)) {
    if (grows_with_n(mode)) continue;
    ++fixed;
    const PowerFit planted = power_fit(rows, mode, &LengthInitRow::planted_mass, from);
    const PowerFit top = power_fit(rows, mode, &LengthInitRow::max_weight, from);
    const bool falls = planted.hi < -kFlatSlope && top.hi < -kFlatSlope;
    const bool flat = planted.lo > -kFlatSlope && planted.hi < kFlatSlope;
    dispersing += falls;
    outcomes.push_back({.criterion = "a",
                        .passed = falls,
                        .setting = mode,
                        .estimate = {planted.slope, (planted.hi - planted.lo) / 2, planted.lo,
                                     planted.hi, planted.points}});
    measured += (measured.empty() ? "" : "; ") + mode + ": planted mass falls like " +
                describe_fit(planted) + ", top weight like " + describe_fit(top);
    reason += (reason.empty() ? "" : "; ") + mode + ": " +
              (falls  ? std::string("disperses")
               : flat ? std::string("planted mass flat (within n^+-0.05): stays sharp up to "
                                    "this n")
                      : std::string("no clear fall")) +
              " (" + yes_no(falls) + ")";
  }
  if (fixed == 0) return judge("C16", {}, {}, "no fixed-scale mode measured", false, {"a"});
  return judge(
      "C16", outcomes, {},
      measured + " (fits over n >= " + std::to_string(from) +
          ", 95% intervals; a mode disperses when the slopes of log(planted mass) and log(top "
          "weight) against log n both lie below -" +
          significant(kFlatSlope) + ", whole 95% interval: " + reason + "; " +
          std::to_string(dispersing) + " of " + std::to_string(fixed) + " fixed modes)");
}

Verdict log_n_claim(const std::vector<LengthInitRow>& rows, int64_t built_len) {
  const int64_t from = upper_half_start(rows);
  int judged = 0, kept = 0;
  std::string measured, reason;
  std::vector<Outcome> outcomes;
  for (const std::string& mode : modes_of(rows)) {
    if (!grows_with_n(mode)) continue;
    ++judged;
    const PowerFit planted = power_fit(rows, mode, &LengthInitRow::planted_mass, from);
    const PowerFit top = power_fit(rows, mode, &LengthInitRow::max_weight, from);
    // The planted mass at the largest n against its value at n = L.
    int64_t largest = 0;
    for (const LengthInitRow& r : rows)
      if (r.mode == mode) largest = std::max(largest, r.n);
    const LengthInitRow* at_l = find_row(rows, mode, built_len);
    const LengthInitRow* at_max = find_row(rows, mode, largest);
    bool no_loss = false;
    std::string loss_text = "no row at n = " + std::to_string(built_len);
    if (at_l && at_max) {
      const double diff = at_max->planted_mass.mean - at_l->planted_mass.mean;
      const double se = std::hypot(at_max->planted_mass.se, at_l->planted_mass.se);
      no_loss = diff - 1.96 * se > -kFlatSlope;
      loss_text = "planted mass " + format_estimate(at_l->planted_mass) +
                  " at n = " + std::to_string(built_len) + ", " +
                  format_estimate(at_max->planted_mass) + " at n = " + std::to_string(largest);
    }
    const bool slope_ok = planted.lo > -kFlatSlope;
    kept += slope_ok && no_loss;
    outcomes.push_back({.criterion = "a",
                        .passed = slope_ok && no_loss,
                        .setting = mode,
                        .estimate = {planted.slope, (planted.hi - planted.lo) / 2, planted.lo,
                                     planted.hi, planted.points}});
    measured += (measured.empty() ? "" : "; ") + mode + ": " + loss_text + ", planted mass like " +
                describe_fit(planted) + ", top weight (random keys) " + "like " + describe_fit(top);
    reason += (reason.empty() ? "" : "; ") + mode + ": slope " + yes_no(slope_ok) + ", no loss " +
              yes_no(no_loss);
  }
  if (judged == 0) return judge("C17", {}, {}, "neither log_n nor ssmax measured", false, {"a"});
  return judge("C17", outcomes, {},
               measured + " (fits over n >= " + std::to_string(from) +
                   ", 95% intervals; a mode keeps attention sharp when the slope of log(planted "
                   "mass) against log n has its 95% interval above -" +
                   significant(kFlatSlope) +
                   " and the planted mass at the largest n is not below its value at n = L = " +
                   std::to_string(built_len) + " by more than " + significant(kFlatSlope) +
                   " (the difference's 95% lower bound): " + reason + ")");
}

}  // namespace gradflow::study
