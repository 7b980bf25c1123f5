// The arms the study compares, and estimates over independent draws.
#include <cmath>

#include "autograd/ops.h"
#include "examples/study/study.h"
#include "tensor/ops.h"

namespace gradflow::study {

const std::vector<std::string>& study_modes() {
  static const std::vector<std::string> modes = {
      "none", "inv_sqrt_dk", "inv_dk", "inv_2sqrt_dk", "learned", "qk_norm", kControl};
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

}  // namespace gradflow::study
