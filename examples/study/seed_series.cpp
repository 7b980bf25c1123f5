// The train part's runs drawn over seeds, for figures: a learning curve as
// a band (the mean and 95% t-interval at each step) or as every seed's own
// path, of a run's curve or of one of its layers; and one point per x with
// its 95% t-interval as error bars.
#include <algorithm>
#include <map>

#include "examples/study/parts.h"

namespace gradflow::study {

namespace {

// A curve over seeds: at each step the mean and 95% t-interval of the seeds
// whose run of (task, d_k, mode), and layer if named, has a finite value
// there; an accuracy's band is cut at 0 and 1, which no accuracy passes.
template <class Row>
void band_of(plot::Series& s, const std::vector<Row>& rows, const std::string& task, int64_t d_k,
             const std::string& mode, const std::string& layer, double Row::*field, bool accuracy) {
  std::map<int64_t, std::vector<double>> at;
  for (const Row& r : rows) {
    if (r.run.task != task || r.run.d_k != d_k || r.run.mode != mode) continue;
    if constexpr (requires { r.layer; })
      if (r.layer != layer) continue;
    at[r.step].push_back(r.*field);
  }
  for (const auto& [step, values] : at) {
    Interval i = interval_of_finite(values);
    if (i.n == 0) continue;
    if (accuracy) i.lo = std::clamp(i.lo, 0.0, 1.0), i.hi = std::clamp(i.hi, 0.0, 1.0);
    add_point(s, static_cast<double>(step), i);
  }
}

// Every seed's own path of (task, d_k, mode), and layer if named, in one
// series: the paths one after another, a NaN between them to lift the pen.
template <class Row>
void paths_of(plot::Series& s, const std::vector<Row>& rows, const std::string& task, int64_t d_k,
              const std::string& mode, const std::string& layer, double Row::*field) {
  std::map<int64_t, std::vector<std::pair<double, double>>> by_seed;
  for (const Row& r : rows) {
    if (r.run.task != task || r.run.d_k != d_k || r.run.mode != mode) continue;
    if constexpr (requires { r.layer; })
      if (r.layer != layer) continue;
    by_seed[r.run.seed].emplace_back(static_cast<double>(r.step), r.*field);
  }
  for (const auto& [seed, points] : by_seed) {
    if (!s.x.empty()) s.x.push_back(kNaN), s.y.push_back(kNaN);
    for (const auto& [x, y] : points) s.x.push_back(x), s.y.push_back(y);
  }
}

}  // namespace

void curve_paths(plot::Series& s, const std::vector<CurveRow>& curves, const std::string& task,
                 int64_t d_k, const std::string& mode, double CurveRow::*field) {
  paths_of(s, curves, task, d_k, mode, "", field);
}

void layer_paths(plot::Series& s, const std::vector<LayerRow>& layers, const std::string& task,
                 int64_t d_k, const std::string& mode, const std::string& layer,
                 double LayerRow::*field) {
  paths_of(s, layers, task, d_k, mode, layer, field);
}

void curve_band(plot::Series& s, const std::vector<CurveRow>& curves, const std::string& task,
                int64_t d_k, const std::string& mode, double CurveRow::*field, bool accuracy) {
  band_of(s, curves, task, d_k, mode, "", field, accuracy);
}

void layer_band(plot::Series& s, const std::vector<LayerRow>& layers, const std::string& task,
                int64_t d_k, const std::string& mode, const std::string& layer,
                double LayerRow::*field) {
  band_of(s, layers, task, d_k, mode, layer, field, false);
}

// Mean over seeds with its 95% t-interval as error bars, one point per x.
plot::Series mean_series(plot::Series s, const std::map<double, std::vector<double>>& at) {
  s.markers = true;
  for (const auto& [x, values] : at) {
    Interval i = interval_of_finite(values);
    if (i.n == 0) continue;
    s.x.push_back(x);
    s.y.push_back(i.mean);
    s.lo.push_back(std::isfinite(i.lo) ? i.lo : i.mean);
    s.hi.push_back(std::isfinite(i.hi) ? i.hi : i.mean);
  }
  return s;
}

}  // namespace gradflow::study
