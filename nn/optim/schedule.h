// Learning-rate schedules: the learning rate of each optimizer update as a function of its step.
//
// Steps count from 0: lr_at(s) is the learning rate of the update made after s updates, so a
// training loop calls
//   opt.set_lr(schedule.lr_at(opt.step_count()));
//   opt.step();
// and a resumed run (step_count() restored by load_state) continues the schedule where it was.
// The formulas use n = s + 1, the 1-based number of that update, so the very first update already
// has a positive learning rate (warmup never yields lr 0):
//
//   constant(lr)                        lr
//   linear_warmup(lr, W)                lr * min(1, n / W)
//   warmup_cosine(peak, W, N, min)      peak * n / W                                     n <= W
//                                       min + (peak-min) (1 + cos(pi (n-W)/(N-W))) / 2   W < n < N
//                                       min                                              n >= N
//   noam(d_model, W, factor)            factor * d_model^-0.5 * min(n^-0.5, n * W^-1.5)
//
// So linear_warmup reaches lr on update W and stays there (W = 1: no warm-up); warmup_cosine
// reaches peak on update W (s = W - 1) and min on the last update N (s = N - 1); noam rises
// linearly to its peak factor * (d_model W)^-0.5 on update W, then decays as n^-0.5.
// (linear_warmup's lr * (n / W) and warmup_cosine's peak * n / W may differ in the last bit: each
// keeps the rounding of the loop it came from, the study's and the programs'.)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gradflow::nn {

// What LrSchedule::from_name reads, per schedule name; other fields are ignored.
struct ScheduleConfig {
  double lr = 1e-3;          // "constant": the lr; "cosine": the peak lr
  double min_lr = 0;         // "cosine"
  int64_t warmup_steps = 0;  // "cosine" (may be 0), "noam" (must be >= 1)
  int64_t total_steps = 0;   // "cosine"
  int64_t d_model = 0;       // "noam"
  double noam_factor = 1;    // "noam"
};

class LrSchedule {
 public:
  // Each throws Error naming the schedule and the bad argument. REQUIRES: learning rates and the
  // factor finite and >= 0; min_lr <= peak_lr; 0 <= warmup_steps <= total_steps, total_steps >= 1;
  // noam: d_model >= 1 and warmup_steps >= 1.
  static LrSchedule constant(double lr);
  // REQUIRES: warmup_steps >= 1. Not among from_name's names: the scaling study's schedule.
  static LrSchedule linear_warmup(double lr, int64_t warmup_steps);
  static LrSchedule warmup_cosine(double peak_lr, int64_t warmup_steps, int64_t total_steps,
                                  double min_lr = 0);
  static LrSchedule noam(int64_t d_model, int64_t warmup_steps, double factor = 1);

  // The schedule named by a command-line flag: "constant", "cosine" (warmup_cosine) or "noam",
  // with its arguments from `config`. Throws Error for any other name, listing the valid ones.
  static LrSchedule from_name(std::string_view name, const ScheduleConfig& config = {});
  // The names from_name accepts, e.g. for a flag's choices.
  static const std::vector<std::string>& names();

  // REQUIRES: step >= 0 (throws Error otherwise).
  double lr_at(int64_t step) const;

  // The name and every argument, e.g.
  // "cosine(peak_lr=0.0003, warmup_steps=100, total_steps=2000, min_lr=0)", with the numbers
  // written by `number`, by default in their shortest exact form. A program printing it for
  // people passes a rounding one: lr / 10 is 0.00030000000000000003 for lr = 0.003.
  using NumberText = std::string (*)(double);
  std::string describe(NumberText number = nullptr) const;

 private:
  enum class Kind { kConstant, kLinearWarmup, kCosine, kNoam };
  explicit LrSchedule(Kind kind) : kind_(kind) {}

  Kind kind_;
  double lr_ = 0;  // constant, linear_warmup: the lr; cosine: the peak
  double min_lr_ = 0;
  int64_t warmup_ = 0, total_ = 0, d_model_ = 0;
  double factor_ = 1;
};

}  // namespace gradflow::nn
