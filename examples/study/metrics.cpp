#include "examples/study/metrics.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace gradflow::study {

double softmax_jacobian_norm(const double* p, int64_t n) {
  double s2 = 0, s3 = 0;
  for (int64_t j = 0; j < n; ++j) {
    s2 += p[j] * p[j];
    s3 += p[j] * p[j] * p[j];
  }
  return std::sqrt(std::max(0.0, s2 - 2 * s3 + s2 * s2));
}

double sample_variance(const Tensor& t) {
  std::vector<double> v = t.to_vector();
  if (v.size() < 2) return 0;
  double mean = 0;
  for (double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return ss / static_cast<double>(v.size() - 1);
}

double visible_std(const Tensor& values, const Tensor& mask) {
  std::vector<double> v = values.to_vector();
  std::vector<double> m =
      mask.defined() ? mask.expand(values.shape()).to_vector() : std::vector<double>(v.size(), 0.0);
  double sum = 0, n = 0;
  for (size_t i = 0; i < v.size(); ++i)
    if (m[i] == 0) sum += v[i], ++n;
  if (n < 2) return 0;
  const double mean = sum / n;
  double ss = 0;
  for (size_t i = 0; i < v.size(); ++i)
    if (m[i] == 0) ss += (v[i] - mean) * (v[i] - mean);
  return std::sqrt(ss / (n - 1));
}

AttentionStats attention_stats(const Tensor& weights, const Tensor& logits, const Tensor& mask) {
  if (weights.shape() != logits.shape() || weights.ndim() < 2)
    fail("attention_stats: weights ", shape_str(weights.shape()), " and logits ",
         shape_str(logits.shape()), " must be (..., T, S) alike");
  const int64_t s = weights.shape().back();
  const int64_t rows = weights.numel() / std::max<int64_t>(s, 1);
  std::vector<double> w = weights.to_vector(), l = logits.to_vector();
  std::vector<double> m = mask.defined() ? mask.expand(weights.shape()).to_vector()
                                         : std::vector<double>(w.size(), 0.0);
  AttentionStats out;
  std::vector<double> p;
  for (int64_t r = 0; r < rows; ++r) {
    p.clear();
    for (int64_t j = 0; j < s; ++j) {
      size_t i = static_cast<size_t>(r * s + j);
      if (m[i] != 0) continue;
      p.push_back(w[i]);
      out.max_logit = std::max(out.max_logit, std::abs(l[i]));
    }
    if (p.size() < 2) continue;  // one visible key: no choice to measure
    double h = 0;
    for (double x : p)
      if (x > 0) h -= x * std::log(x);
    out.entropy_norm += h / std::log(static_cast<double>(p.size()));
    out.max_weight += *std::max_element(p.begin(), p.end());
    out.jacobian_norm += softmax_jacobian_norm(p.data(), static_cast<int64_t>(p.size()));
    ++out.rows;
  }
  if (out.rows > 0) {
    double n = static_cast<double>(out.rows);
    out.entropy_norm /= n;
    out.max_weight /= n;
    out.jacobian_norm /= n;
  }
  return out;
}

}  // namespace gradflow::study
