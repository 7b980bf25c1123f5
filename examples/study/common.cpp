// What the study's parts share: the arms compared, estimates over
// independent draws, and running independent jobs side by side.
#include <atomic>
#include <cmath>
#include <mutex>
#include <thread>

#include "autograd/ops.h"
#include "examples/common/signals.h"
#include "examples/study/study.h"
#include "tensor/ops.h"
#include "tensor/parallel.h"

namespace gradflow::study {

const std::vector<std::string>& study_modes() {
  static const std::vector<std::string> modes = {"none",         "inv_sqrt_dk", "inv_dk",
                                                 "inv_2sqrt_dk", "learned",     "qk_norm",
                                                 kControl,       "qk_l2norm",   "learned_log"};
  return modes;
}

const std::vector<std::string>& default_modes() {
  static const std::vector<std::string> modes(study_modes().begin(), study_modes().end() - 2);
  return modes;
}

nn::ScaleMode scale_mode_of(const std::string& mode) {
  return nn::ScaleMode::parse(mode == kControl ? "none" : mode);
}

void apply_mode_init(nn::MultiHeadAttention& attention, const std::string& mode) {
  if (mode != kControl) return;
  // q and k each shrink by d_k^(-1/4), so q.k's variance shrinks by
  // 1/sqrt(d_k): the unscaled logits start as 1/sqrt(d_k)'s do.
  const double factor = std::pow(static_cast<double>(attention.d_k()), -0.25);
  for (nn::Linear* projection : {attention.q_proj.get(), attention.k_proj.get()})
    for (Variable* p : {&projection->weight, &projection->bias})
      if (p->defined()) {
        Tensor values = p->data();  // a handle to the parameter's storage
        values.copy_(mul(values, factor));
      }
}

Estimate estimate_of(const std::vector<double>& draws) {
  const double n = static_cast<double>(draws.size());
  if (draws.empty()) return {NAN, NAN};
  double mean = 0;
  for (double x : draws) mean += x;
  mean /= n;
  if (draws.size() < 2) return {mean, NAN};
  double ss = 0;
  for (double x : draws) ss += (x - mean) * (x - mean);
  return {mean, std::sqrt(ss / (n - 1) / n)};
}

Interrupted::Interrupted(int signal, std::string part, size_t done, size_t count)
    : signal_(signal),
      message_(cli::signal_name(signal) + " in " + part + " (" + std::to_string(done) + " of " +
               std::to_string(count) + " done)") {}

void check_stop() {
  if (cli::stop_signal() != 0) throw Error("stopped by a signal");
}

void run_jobs(const std::string& part, size_t count, int threads,
              const std::function<void(size_t)>& job, const ProgressFn& progress) {
  std::atomic<size_t> next{0};
  std::mutex lock;
  std::string error;
  size_t done = 0, completed = 0;        // jobs ended; jobs ended without an error
  const bool flush = flush_denormals();  // the jobs take the caller's mode
  auto worker = [&] {
    set_flush_denormals(flush);
    for (size_t i; cli::stop_signal() == 0 && (i = next++) < count;) {
      bool ok = true;
      try {
        job(i);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> guard(lock);
        if (error.empty()) error = e.what();
        ok = false;
      }
      std::lock_guard<std::mutex> guard(lock);
      completed += ok;
      if (progress) progress(++done, count);
    }
  };
  if (progress) progress(0, count);  // the start: a display can start its clock
  std::vector<std::thread> pool;
  for (int t = 0; t < std::max(1, threads); ++t) pool.emplace_back(worker);
  for (std::thread& t : pool) t.join();
  // A job that saw the signal ended early and threw: not its error.
  if (const int signal = cli::stop_signal(); signal != 0)
    throw Interrupted(signal, part, completed, count);
  if (!error.empty()) throw Error("scaling_study: " + part + " failed: " + error);
}

}  // namespace gradflow::study
