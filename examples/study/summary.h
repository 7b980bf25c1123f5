// Part B's runs summarised over seeds: each figure as a mean with its 95%
// interval, and each mode against 1/sqrt(d_k) as a paired difference (same
// seed, same initial weights, same batches) with the verdict of
// stats.h's compare at a margin stated in advance.
#pragma once

#include <string>
#include <vector>

#include "examples/study/stats.h"
#include "examples/study/study.h"

namespace gradflow::study {

// A per-run figure the study compares between modes.
struct MetricSpec {
  std::string name;         // the final_metrics.csv column
  double FinalRow::*field;  // where a run keeps it
  bool higher_is_better;
  double margin;     // the smallest difference that counts, in the metric's own units
  double scale;      // shown multiplied by this (accuracy in points: 100)
  std::string unit;  // as shown
  int digits;        // decimals shown
};

// accuracy (margin 1 point), loss_auc (0.05 nats), steps_to_90 (20 steps).
const std::vector<MetricSpec>& compared_metrics();

struct SettingSummary {
  std::string task, mode;
  int64_t d_k = 0;
  int64_t runs = 0, reached_90 = 0, reached_99 = 0, diverged = 0;
  // Per compared metric, in compared_metrics() order, over the runs where
  // the metric is finite (a diverged run has no loss).
  std::vector<Interval> metric;
  // mode - inv_sqrt_dk, seed by seed, and its verdict; for inv_sqrt_dk
  // itself n = 0 and NoDetectableDifference.
  std::vector<Interval> vs_default;
  std::vector<Comparison> verdict;
  Interval max_logit, seq_accuracy;  // seq_accuracy: reverse only (n = 0 otherwise)
  // log10 of FinalRow::grad_ratio_qv: ratios spread over decades.
  Interval log_grad_ratio;
};

// One summary per (task, d_k, mode), in the order the runs came.
std::vector<SettingSummary> summarise_training(const std::vector<FinalRow>& finals);

// The summary of a setting, or null.
const SettingSummary* find_setting(const std::vector<SettingSummary>& summaries,
                                   const std::string& task, int64_t d_k, const std::string& mode);

// A learning curve over seeds: at each step the mean and its 95%
// t-interval over the seeds whose run has a finite value there.
struct Band {
  std::vector<double> step, mean, lo, hi;
};
Band curve_band(const std::vector<CurveRow>& curves, const std::string& task, int64_t d_k,
                const std::string& mode, double CurveRow::*field);
// The same for a per-layer figure of train_layers.csv, for one layer name.
Band layer_band(const std::vector<LayerRow>& layers, const std::string& task, int64_t d_k,
                const std::string& mode, const std::string& layer, double LayerRow::*field);

// The mean and 95% interval of finite values; n = 0 (and NaN) when none.
Interval interval_of_finite(const std::vector<double>& values);

}  // namespace gradflow::study
