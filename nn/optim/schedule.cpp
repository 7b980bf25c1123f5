// Learning-rate schedules; the formulas are in schedule.h.
#include "nn/optim/schedule.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numbers>

#include "tensor/error.h"

namespace gradflow::nn {

namespace {

void check_rate(std::string_view op, std::string_view what, double v) {
  if (!(v >= 0) || !std::isfinite(v)) fail(op, ": ", what, " must be finite and >= 0, got ", v);
}

// The shortest text that reads back as exactly v.
std::string exact_number(double v) {
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general);
  return std::string(buf, end);
}

}  // namespace

LrSchedule LrSchedule::constant(double lr) {
  check_rate("constant", "lr", lr);
  LrSchedule s(Kind::kConstant);
  s.lr_ = lr;
  return s;
}

LrSchedule LrSchedule::linear_warmup(double lr, int64_t warmup_steps) {
  check_rate("linear_warmup", "lr", lr);
  if (warmup_steps < 1) fail("linear_warmup: warmup_steps must be >= 1, got ", warmup_steps);
  LrSchedule s(Kind::kLinearWarmup);
  s.lr_ = lr;
  s.warmup_ = warmup_steps;
  return s;
}

LrSchedule LrSchedule::warmup_cosine(double peak_lr, int64_t warmup_steps, int64_t total_steps,
                                     double min_lr) {
  check_rate("cosine", "peak_lr", peak_lr);
  check_rate("cosine", "min_lr", min_lr);
  if (min_lr > peak_lr) fail("cosine: min_lr ", min_lr, " is above peak_lr ", peak_lr);
  if (warmup_steps < 0) fail("cosine: warmup_steps must be >= 0, got ", warmup_steps);
  if (total_steps < 1 || total_steps < warmup_steps)
    fail("cosine: total_steps must be >= 1 and >= warmup_steps (", warmup_steps, "), got ",
         total_steps);
  LrSchedule s(Kind::kCosine);
  s.lr_ = peak_lr;
  s.min_lr_ = min_lr;
  s.warmup_ = warmup_steps;
  s.total_ = total_steps;
  return s;
}

LrSchedule LrSchedule::noam(int64_t d_model, int64_t warmup_steps, double factor) {
  if (d_model < 1) fail("noam: d_model must be >= 1, got ", d_model);
  if (warmup_steps < 1) fail("noam: warmup_steps must be >= 1, got ", warmup_steps);
  check_rate("noam", "factor", factor);
  LrSchedule s(Kind::kNoam);
  s.d_model_ = d_model;
  s.warmup_ = warmup_steps;
  s.factor_ = factor;
  return s;
}

const std::vector<std::string>& LrSchedule::names() {
  static const std::vector<std::string> kNames{"constant", "cosine", "noam"};
  return kNames;
}

LrSchedule LrSchedule::from_name(std::string_view name, const ScheduleConfig& c) {
  if (name == "constant") return constant(c.lr);
  if (name == "cosine") return warmup_cosine(c.lr, c.warmup_steps, c.total_steps, c.min_lr);
  if (name == "noam") return noam(c.d_model, c.warmup_steps, c.noam_factor);
  std::string valid;
  for (const std::string& n : names()) valid += (valid.empty() ? "" : ", ") + n;
  fail("LrSchedule: unknown schedule \"", name, "\"; expected one of: ", valid);
}

double LrSchedule::lr_at(int64_t step) const {
  if (step < 0) fail("lr_at: step must be >= 0, got ", step);
  // In double from here: n = step + 1 cannot overflow, and every count below 2^53 is exact.
  const double n = static_cast<double>(step) + 1;
  const double warmup = static_cast<double>(warmup_);
  switch (kind_) {
    case Kind::kConstant:
      return lr_;
    case Kind::kLinearWarmup:
      return lr_ * std::min(1.0, n / warmup);
    case Kind::kCosine: {
      if (n <= warmup) return lr_ * n / warmup;
      const double total = static_cast<double>(total_);
      if (n >= total) return min_lr_;
      const double progress = (n - warmup) / (total - warmup);
      return min_lr_ + (lr_ - min_lr_) * (1 + std::cos(std::numbers::pi * progress)) / 2;
    }
    case Kind::kNoam:
      return factor_ / std::sqrt(static_cast<double>(d_model_)) *
             std::min(1 / std::sqrt(n), n * std::pow(warmup, -1.5));
  }
  return lr_;
}

std::string LrSchedule::describe(NumberText number) const {
  if (number == nullptr) number = exact_number;
  switch (kind_) {
    case Kind::kConstant:
      return "constant(lr=" + number(lr_) + ")";
    case Kind::kLinearWarmup:
      return "linear_warmup(lr=" + number(lr_) + ", warmup_steps=" + std::to_string(warmup_) + ")";
    case Kind::kCosine:
      return "cosine(peak_lr=" + number(lr_) + ", warmup_steps=" + std::to_string(warmup_) +
             ", total_steps=" + std::to_string(total_) + ", min_lr=" + number(min_lr_) + ")";
    case Kind::kNoam:
      return "noam(d_model=" + std::to_string(d_model_) +
             ", warmup_steps=" + std::to_string(warmup_) + ", factor=" + number(factor_) + ")";
  }
  return "?";
}

}  // namespace gradflow::nn
