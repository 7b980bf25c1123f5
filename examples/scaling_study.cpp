// scaling_study (first version): the variance of the attention logit
// s * (q . k) for independent unit-variance q and k, for each constant scale
// mode and d_k, against the theory d_k * s^2 (claims C1 to C4 of the study).
// The full study (trained models, gradient flow, report and plots) builds on
// the nn layer and replaces this.
#include <cmath>
#include <cstdio>
#include <string>

#include "tensor/ops.h"

using namespace gradflow;

int main(int argc, char** argv) {
  if (argc > 1 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
    std::printf(
        "usage: scaling_study\n\nPrints the empirical variance of scaled attention logits "
        "s*(q.k) for d_k in {4..1024}\nand scales 1, 1/sqrt(d_k), 1/d_k, 1/(2 sqrt(d_k)), "
        "against the theory d_k*s^2.\n");
    return 0;
  }
  if (argc > 1) {
    std::fprintf(stderr, "scaling_study: error: unknown argument %s (see --help)\n", argv[1]);
    return 2;
  }
  Generator gen(0);
  const int64_t pairs = 20000;
  struct Mode {
    const char* name;
    double (*scale)(double);
  };
  const Mode modes[] = {{"none", [](double) { return 1.0; }},
                        {"inv_sqrt_dk", [](double d) { return 1 / std::sqrt(d); }},
                        {"inv_dk", [](double d) { return 1 / d; }},
                        {"inv_2sqrt_dk", [](double d) { return 1 / (2 * std::sqrt(d)); }}};
  std::printf("%-13s %6s %14s %14s %8s\n", "mode", "d_k", "logit_var", "theory", "ratio");
  for (int64_t d_k : {4, 16, 64, 256, 1024}) {
    // Shape: q, k are (pairs, d_k); the logit of pair i is q_i . k_i.
    Tensor q = randn({pairs, d_k}, gen), k = randn({pairs, d_k}, gen);
    Tensor dots = sum(mul(q, k), {1});
    for (const Mode& m : modes) {
      double s = m.scale(static_cast<double>(d_k));
      double v = var(mul(dots, s)).item();
      double theory = static_cast<double>(d_k) * s * s;
      std::printf("%-13s %6lld %14.6g %14.6g %8.4f\n", m.name, static_cast<long long>(d_k), v,
                  theory, v / theory);
    }
  }
  return 0;
}
