// The claims C1 to C7 of ../shared/STUDY.md judged against the run's own
// numbers. Each criterion is written out here, so a reader can see exactly
// what "holds" means; nothing below is text decided in advance.
#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "examples/study/report.h"

namespace gradflow::study {

namespace {

const double kTolerance = 0.05;  // relative, for the variance claims (as the 5%)

std::string fmt(double v, int digits = 4) {
  std::ostringstream out;
  out.precision(digits);
  out << v;
  return out.str();
}

const InitRow* find_init(const std::vector<InitRow>& rows, const std::string& mode, int64_t d_k) {
  for (const InitRow& r : rows)
    if (r.mode == mode && r.d_k == d_k) return &r;
  return nullptr;
}

std::vector<int64_t> d_ks_of(const std::vector<InitRow>& rows) {
  std::vector<int64_t> out;
  for (const InitRow& r : rows)
    if (std::find(out.begin(), out.end(), r.d_k) == out.end()) out.push_back(r.d_k);
  std::sort(out.begin(), out.end());
  return out;
}

// Worst relative error of logit_var against the expected value for a mode.
double worst_variance_error(const std::vector<InitRow>& rows, const std::string& mode,
                            std::string& figures, double (*expected)(int64_t)) {
  double worst = 0;
  for (int64_t d : d_ks_of(rows)) {
    const InitRow* r = find_init(rows, mode, d);
    double e = expected(d);
    worst = std::max(worst, std::abs(r->logit_var / e - 1));
    figures += "d_k=" + std::to_string(d) + ": " + fmt(r->logit_var) + " (expect " + fmt(e) + "); ";
  }
  return worst;
}

const char* yes_no(bool ok) { return ok ? "holds" : "does not hold"; }

}  // namespace

std::vector<Verdict> judge_claims(const std::vector<InitRow>& init, const PartBResult& training) {
  std::vector<Verdict> out;
  const std::vector<int64_t> d_ks = d_ks_of(init);
  const int64_t d_max = d_ks.back();
  const double n_keys = static_cast<double>(init.front().n_keys);

  {  // C1
    Verdict v{"C1", "Var(q.k) = d_k; std sqrt(d_k) (d_k = 64 gives 8)", "", "", ""};
    double worst =
        worst_variance_error(init, "none", v.figures, [](int64_t d) { return double(d); });
    if (const InitRow* r = find_init(init, "none", 64))
      v.figures += "std at d_k=64: " + fmt(std::sqrt(r->logit_var));
    v.verdict = yes_no(worst < kTolerance);
    v.why = "largest relative error " + fmt(100 * worst, 3) + "% (criterion: < 5% at every d_k)";
    out.push_back(v);
  }
  {  // C2
    Verdict v{"C2", "dividing by sqrt(d_k) keeps the variance at 1", "", "", ""};
    double worst =
        worst_variance_error(init, "inv_sqrt_dk", v.figures, [](int64_t) { return 1.0; });
    v.verdict = yes_no(worst < kTolerance);
    v.why = "largest relative error " + fmt(100 * worst, 3) + "% (criterion: < 5% at every d_k)";
    out.push_back(v);
  }
  {  // C3
    Verdict v{"C3",
              "dividing by d_k gives variance 1/d_k: softmax nearly uniform, weights near 1/n", "",
              "", ""};
    double worst =
        worst_variance_error(init, "inv_dk", v.figures, [](int64_t d) { return 1.0 / double(d); });
    const InitRow* big = find_init(init, "inv_dk", d_max);
    bool flat = big->entropy_norm > 0.99 && big->max_weight < 2.0 / n_keys;
    v.figures += "at d_k=" + std::to_string(d_max) + ": entropy_norm " + fmt(big->entropy_norm) +
                 ", max_weight " + fmt(big->max_weight) + " (1/n = " + fmt(1 / n_keys) + ")";
    v.verdict = yes_no(worst < kTolerance && flat);
    v.why = "variance error " + fmt(100 * worst, 3) +
            "% (< 5%), and at the largest d_k entropy_norm > 0.99 "
            "with max_weight < 2/n: " +
            (flat ? "yes" : "no");
    out.push_back(v);
  }
  // Final reverse-task loss per (mode, d_k), averaged over d_k where needed.
  std::map<std::pair<std::string, std::string>, std::vector<const FinalRow*>> finals;
  for (const FinalRow& f : training.finals) finals[{f.task, f.mode}].push_back(&f);
  auto mean_accuracy = [&](const std::string& task, const std::string& mode) {
    double s = 0;
    int n = 0;
    for (const FinalRow* f : finals[{task, mode}]) s += f->final_accuracy, ++n;
    return n ? s / n : NAN;
  };
  {  // C4
    Verdict v{"C4", "dividing by 2 sqrt(d_k) gives variance 1/4: still too flat", "", "", ""};
    double worst =
        worst_variance_error(init, "inv_2sqrt_dk", v.figures, [](int64_t) { return 0.25; });
    const InitRow* a = find_init(init, "inv_2sqrt_dk", d_max);
    const InitRow* b = find_init(init, "inv_sqrt_dk", d_max);
    double acc_half = mean_accuracy("reverse", "inv_2sqrt_dk"),
           acc_std = mean_accuracy("reverse", "inv_sqrt_dk");
    v.figures += "entropy_norm at init " + fmt(a->entropy_norm) + " vs " + fmt(b->entropy_norm) +
                 " for 1/sqrt(d_k); reverse-task accuracy (mean over d_k) " + fmt(acc_half) +
                 " vs " + fmt(acc_std);
    bool variance_ok = worst < kTolerance;
    bool worse_in_training = acc_half < acc_std - 0.01;
    v.verdict = !variance_ok ? "does not hold" : worse_in_training ? "holds" : "partly holds";
    v.why = std::string("variance 1/4 ") + (variance_ok ? "confirmed" : "not confirmed") +
            "; flatter at init (entropy higher): " +
            (a->entropy_norm > b->entropy_norm ? "yes" : "no") +
            "; worse in training (accuracy more than 1 point below 1/sqrt(d_k)): " +
            (worse_in_training ? "yes" : "no");
    out.push_back(v);
  }
  {  // C5
    Verdict v{"C5",
              "unscaled, large d_k saturates the softmax and gradients vanish, so learning slows",
              "", "", ""};
    const InitRow* none = find_init(init, "none", d_max);
    const InitRow* ref = find_init(init, "inv_sqrt_dk", d_max);
    bool saturated = none->entropy_norm < 0.2 && none->max_weight > 0.8;
    bool jacobian_small = none->jacobian_norm < 0.5 * ref->jacobian_norm;
    bool grad_small = none->grad_norm_wq < ref->grad_norm_wq;
    double acc_none = mean_accuracy("reverse", "none"),
           acc_std = mean_accuracy("reverse", "inv_sqrt_dk");
    bool slower = acc_none < acc_std - 0.01;
    v.figures = "at d_k=" + std::to_string(d_max) + ": entropy_norm " + fmt(none->entropy_norm) +
                ", max_weight " + fmt(none->max_weight) + ", jacobian_norm " +
                fmt(none->jacobian_norm) + " (1/sqrt(d_k): " + fmt(ref->jacobian_norm) +
                "), layer grad_norm_wq " + fmt(none->grad_norm_wq) +
                " (1/sqrt(d_k): " + fmt(ref->grad_norm_wq) + "); reverse-task accuracy " +
                fmt(acc_none) + " vs " + fmt(acc_std);
    int parts = saturated + jacobian_small + grad_small + slower;
    v.verdict = parts == 4 ? "holds" : parts == 0 ? "does not hold" : "partly holds";
    v.why =
        std::string("saturated (entropy < 0.2, max weight > 0.8): ") + (saturated ? "yes" : "no") +
        "; softmax Jacobian below half of 1/sqrt(d_k)'s: " + (jacobian_small ? "yes" : "no") +
        "; gradient at W_Q smaller than with 1/sqrt(d_k): " +
        (grad_small ? "yes" : "no (the missing 1/sqrt(d_k) factor also multiplies the gradient)") +
        "; learns worse (accuracy more than 1 point lower): " + (slower ? "yes" : "no");
    out.push_back(v);
  }
  {  // C6
    Verdict v{"C6",
              "the softmax Jacobian diag(p) - pp^T goes to 0 for one-hot p, is of order 1/n for "
              "uniform p",
              "", "", ""};
    const InitRow* first = find_init(init, "none", d_ks.front());
    const InitRow* last = find_init(init, "none", d_max);
    const InitRow* flat = find_init(init, "inv_dk", d_max);
    double uniform = std::sqrt(1 / n_keys - 1 / (n_keys * n_keys));  // ||.||_F at p = 1/n
    bool shrinks =
        last->jacobian_norm < 0.5 * first->jacobian_norm && last->max_weight > first->max_weight;
    bool uniform_ok = std::abs(flat->jacobian_norm / uniform - 1) < 0.02;
    v.figures = "unscaled: jacobian_norm " + fmt(first->jacobian_norm) +
                " at d_k=" + std::to_string(d_ks.front()) + " (max_weight " +
                fmt(first->max_weight) + ") -> " + fmt(last->jacobian_norm) +
                " at d_k=" + std::to_string(d_max) + " (max_weight " + fmt(last->max_weight) +
                "); near-uniform (1/d_k, d_k=" + std::to_string(d_max) +
                "): " + fmt(flat->jacobian_norm) + " vs sqrt(1/n - 1/n^2) = " + fmt(uniform) +
                ", largest entry p(1-p) ~ 1/n = " + fmt(1 / n_keys);
    v.verdict = yes_no(shrinks && uniform_ok);
    v.why = std::string("shrinks by more than half as the softmax saturates: ") +
            (shrinks ? "yes" : "no") +
            "; equals the uniform value within 2%: " + (uniform_ok ? "yes" : "no") +
            " (entries are of order 1/n, so the Frobenius norm is of order 1/sqrt(n))";
    out.push_back(v);
  }
  {  // C7
    Verdict v{"C7",
              "the scale changes how fast and how stably a transformer learns; sqrt(d_k) is the "
              "balanced choice",
              "", "", ""};
    int settings = 0, within = 0, beaten = 0;
    double widest = 0;
    std::map<std::pair<std::string, int64_t>, std::vector<const FinalRow*>> by_setting;
    for (const FinalRow& f : training.finals) by_setting[{f.task, f.d_k}].push_back(&f);
    for (auto& [key, rows] : by_setting) {
      double best = -1, worst = 2, mine = NAN;
      for (const FinalRow* f : rows) {
        best = std::max(best, f->final_accuracy);
        worst = std::min(worst, f->final_accuracy);
        if (f->mode == "inv_sqrt_dk") mine = f->final_accuracy;
      }
      ++settings;
      within += mine >= best - 0.01;
      beaten += mine < best - 0.01;
      widest = std::max(widest, best - worst);
      v.figures += key.first + " d_k=" + std::to_string(key.second) + ": 1/sqrt(d_k) " + fmt(mine) +
                   ", best " + fmt(best) + ", worst " + fmt(worst) + "; ";
    }
    bool matters = widest > 0.05;
    bool balanced = within == settings;
    v.verdict = matters && balanced     ? "holds"
                : !matters              ? "unclear"
                : beaten * 2 > settings ? "does not hold"
                                        : "partly holds";
    v.why = "the scale matters (accuracy spread across modes above 5 points somewhere): " +
            std::string(matters ? "yes" : "no") + " (widest " + fmt(100 * widest, 3) +
            " points); 1/sqrt(d_k) within 1 point of the best mode in " + std::to_string(within) +
            " of " + std::to_string(settings) + " settings";
    out.push_back(v);
  }
  return out;
}

}  // namespace gradflow::study
