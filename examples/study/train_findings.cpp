// What the train part shows, for the report's first section, in the order
// a student reads them: unscaled attention against 1/sqrt(d_k) across d_k;
// the gradient at the softmax (C20) and entropy collapse (C21),
// mechanism.cpp's; the factorial, factorial.cpp's; the gradient op by op,
// gradient_flow.cpp's; and none_reparam against 1/sqrt(d_k).
#include <cmath>

#include "examples/study/parts.h"

namespace gradflow::study {

namespace {

std::string points(double v) { return significant(100 * v, 3) + "%"; }

std::string solved_text(const std::vector<SettingSummary>& summary, const std::string& mode,
                        const std::vector<int64_t>& d_ks) {
  std::string out;
  for (int64_t d_k : d_ks)
    if (const SettingSummary* s = find_setting(summary, "recall", d_k, mode))
      out +=
          (out.empty() ? "" : ", ") + std::to_string(s->reached_99) + "/" + std::to_string(s->runs);
  return out;
}

std::vector<int64_t> d_ks_of(const TrainResult& b, const std::string& task) {
  std::vector<int64_t> out;
  for (const auto& [t, d_k] : settings_of(b))
    if (t == task) out.push_back(d_k);
  return out;
}

std::string list(const std::vector<int64_t>& d_ks) {
  std::string out;
  for (int64_t d : d_ks) out += (out.empty() ? "" : ", ") + std::to_string(d);
  return out;
}

// The std of unscaled q.k at initialisation over the seeds' runs of
// (task, d_k, mode), averaged over the layers (FinalRow::qk_std_init).
double start_qk_std(const TrainResult& b, const std::string& task, int64_t d_k,
                    const std::string& mode) {
  double total = 0;
  int n = 0;
  for (const FinalRow& f : b.finals)
    if (f.run.task == task && f.run.d_k == d_k && f.run.mode == mode && f.qk_std_init > 0)
      total += f.qk_std_init, ++n;
  return n > 0 ? total / n : kNaN;
}

// Unscaled attention against 1/sqrt(d_k) across d_k, on both tasks.
Finding failure_finding(const TrainResult& b, const std::vector<SettingSummary>& summary) {
  const std::vector<int64_t> rev = d_ks_of(b, "reverse"), rec = d_ks_of(b, "recall");
  bool fails = false;
  Finding f{.figure = "final_accuracy.svg"};
  for (const auto& [task, d_ks] : {std::pair{std::string("reverse"), rev}, {"recall", rec}})
    for (int64_t d_k : d_ks) {
      const SettingSummary* n = find_setting(summary, task, d_k, "none");
      if (!n || n->vs_default.empty()) continue;
      if (d_k == d_ks.back()) fails = fails || n->verdict[0] == Comparison::Worse;
      f.detail += std::string(f.detail.empty() ? "" : "; ") + task + " d_k " + std::to_string(d_k) +
                  ", none - 1/sqrt(d_k) in " + compared_metrics(task)[0].name + ": " +
                  comparison_text(*n, 0);
    }
  if (!rev.empty()) {
    std::string none, ref;
    for (int64_t d_k : rev) {
      const SettingSummary* n = find_setting(summary, "reverse", d_k, "none");
      const SettingSummary* r = find_setting(summary, "reverse", d_k, kDefaultMode);
      if (!n || !r) continue;
      none += (none.empty() ? "" : ", ") + points(n->metric[0].mean);
      ref += (ref.empty() ? "" : ", ") + points(r->metric[0].mean);
    }
    f.text += "On `reverse`, unscaled attention ends at " + none + " held-out accuracy at d_k " +
              list(rev) + ", against " + ref + " with 1/sqrt(d_k).";
  }
  if (!rec.empty())
    f.text += std::string(f.text.empty() ? "" : " ") + "On `recall` it solves " +
              solved_text(summary, "none", rec) + " runs at d_k " + list(rec) + ", 1/sqrt(d_k) " +
              solved_text(summary, kDefaultMode, rec) + ".";
  const std::string task = rev.empty() ? "recall" : "reverse";
  const std::vector<int64_t>& d_ks = rev.empty() ? rec : rev;
  if (!d_ks.empty()) {
    const int64_t d_k = d_ks.back();
    const double sd = start_qk_std(b, task, d_k, "none");
    if (std::isfinite(sd))
      f.text +=
          " Why: q.k is a sum of d_k products, so it grows with d_k. Before any training "
          "the unscaled logits already have standard deviation " +
          significant(sd, 2) + " at d_k " + std::to_string(d_k) +
          " (about sqrt(d_k)/3 = " + significant(std::sqrt(static_cast<double>(d_k)) / 3, 2) +
          ": this initialisation gives each component of q and k variance 1/3); divided "
          "by sqrt(d_k) they would have " +
          significant(sd / std::sqrt(static_cast<double>(d_k)), 2) +
          ". So the unscaled softmax starts sharp (attention_maps.svg shows it).";
  }
  f.title = fails ? "Without scaling, attention fails at large d_k"
                  : "Without scaling, attention did not fail detectably in this run";
  if (!f.detail.empty())
    f.detail += " (paired by seed; a difference counts past its margin after Holm's correction)";
  return f;
}

// The clipped share of steps of a mode's runs at (task, d_k), over seeds.
double clipped(const TrainResult& b, const std::string& task, int64_t d_k,
               const std::string& mode) {
  double total = 0;
  int n = 0;
  for (const FinalRow& f : b.finals)
    if (f.run.task == task && f.run.d_k == d_k && f.run.mode == mode &&
        std::isfinite(f.clipped_fraction))
      total += f.clipped_fraction, ++n;
  return n > 0 ? total / n : kNaN;
}

// none_reparam (the scale moved into the initialisation and the learning
// rate) against 1/sqrt(d_k): an identity of Adam, checked, and what breaks
// it (global-norm clipping sees W_Q and W_K's gradients d_k^(1/4) larger).
Finding reparam_finding(const TrainResult& b, const std::vector<SettingSummary>& summary) {
  double largest = 0;
  std::string where;
  bool differs = false;
  for (const auto& [task, d_k] : settings_of(b)) {
    const SettingSummary* s = find_setting(summary, task, d_k, kReparam);
    if (!s) continue;
    for (const Comparison c : s->verdict)
      differs = differs || c != Comparison::NoDetectableDifference;
    if (task != "reverse") continue;
    const Interval d = s->vs_default[0];
    if (d.n > 0 && std::abs(d.mean) >= largest)
      largest = std::abs(d.mean), where = "d_k " + std::to_string(d_k);
  }
  if (where.empty()) return {};
  const std::vector<int64_t> rec = d_ks_of(b, "recall"), rev = d_ks_of(b, "reverse");
  Finding f{.figure = "accuracy_curves.svg"};
  f.text =
      "Under Adam, dividing the logits by sqrt(d_k) is the same as starting W_Q and W_K "
      "d_k^(-1/4) times smaller and letting them learn d_k^(-1/4) times slower (the "
      "abc-symmetry of Yang and Hu's Tensor Programs): Adam's step does not depend on the "
      "gradient's size. `none_reparam` is unscaled attention built that way, and it learns as "
      "1/sqrt(d_k) does: within " +
      significant(100 * largest, 2) + " points on `reverse`";
  if (!rec.empty())
    f.text += ", " + solved_text(summary, kReparam, rec) + " runs solved on `recall` against " +
              solved_text(summary, kDefaultMode, rec);
  f.text += ".";
  if (!rev.empty()) {
    const double cr = clipped(b, "reverse", rev.back(), kReparam),
                 cd = clipped(b, "reverse", rev.back(), kDefaultMode);
    if (std::isfinite(cr) && std::isfinite(cd))
      f.text +=
          " It is not bit for bit the same run: gradient clipping sees its W_Q and W_K "
          "gradients d_k^(1/4) times larger and clips " +
          points(cr) + " of its steps against " + points(cd) + " (reverse, d_k " +
          std::to_string(rev.back()) + ").";
  }
  f.detail = "none_reparam - 1/sqrt(d_k), paired by seed: ";
  bool first = true;
  for (const auto& [task, d_k] : settings_of(b))
    if (const SettingSummary* s = find_setting(summary, task, d_k, kReparam)) {
      f.detail += std::string(first ? "" : "; ") + task + " d_k " + std::to_string(d_k) + " " +
                  compared_metrics(task)[0].name + " " + comparison_text(*s, 0);
      if (task == "reverse") f.detail += ", loss AUC " + comparison_text(*s, 1);
      first = false;
    }
  f.detail +=
      "; share of steps clipped (global norm above 1), none_reparam against "
      "1/sqrt(d_k), mean over seeds:";
  std::string shares;
  for (const auto& [task, d_k] : settings_of(b))
    shares += (shares.empty() ? " " : ", ") + task + " d_k " + std::to_string(d_k) + " " +
              points(clipped(b, task, d_k, kReparam)) + " vs " +
              points(clipped(b, task, d_k, kDefaultMode));
  f.detail += shares;
  f.title = differs ? "none_reparam did not match 1/sqrt(d_k) everywhere in this run"
                    : "A scale is an initialisation and a learning rate";
  return f;
}

}  // namespace

std::vector<Finding> train_findings(const TrainResult& b,
                                    const std::vector<SettingSummary>& summary) {
  std::vector<Finding> out;
  for (Finding f : {failure_finding(b, summary), logit_gradient_finding(b, logit_gradient_claim(b)),
                    entropy_collapse_finding(b, entropy_collapse_claim(b)),
                    factorial_finding(summarise_factorial(b)), gradient_flow_finding(b),
                    reparam_finding(b, summary)})
    if (!f.title.empty()) out.push_back(f);
  return out;
}

}  // namespace gradflow::study
