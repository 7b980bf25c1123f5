// The train part's 2 x 2: why unscaled attention falls behind 1/sqrt(d_k).
//
// Under Adam, 1/sqrt(d_k) is unscaled attention whose W_Q and W_K start
// d_k^(-1/4) times smaller and learn d_k^(-1/4) times slower (docs/study.md,
// "Scale versus learning rate"). So the gap between `none` and 1/sqrt(d_k)
// has two possible causes, the saturated start and the fast step in logit
// space, and four arms cross them:
//
//                        W_Q, W_K learn at lr    at lr x d_k^(-1/4)
//   saturated start      none                    none_slow_qk
//   small start          none_small_init         none_reparam
//
// A decomposition along one path through the cells depends on the path when
// the factors interact, so the table gives, per task, d_k and outcome, each
// seed's main effects (a factor's change averaged over the other's two
// levels), the interaction (the rate's change when started small minus when
// started saturated) and the simple effects (each change alone, from
// `none`), each a t-interval over seeds. The outcomes are the final
// accuracy, which sits near its ceiling on reverse and is nearly two-valued
// on recall, and three that have no ceiling: the mean held-out loss over
// training, the key layer's entropy over steps 10 to 50 and how far its
// logits move per step over steps 0 to 50. C24's verdict reads the
// interaction on the loss (claims_mechanism.cpp); this table only shows.
#include <array>
#include <cmath>
#include <map>
#include <sstream>

#include "examples/study/parts.h"

namespace gradflow::study {

namespace {

// The cells in the order of the table above, row by row.
const std::array<const char*, 4>& cells() {
  static const std::array<const char*, 4> names = {"none", kSlowQk, kControl, kReparam};
  return names;
}

struct TableOutcome {
  const char* name;  // as the table shows it
  Measure measure;   // contrast left empty: each effect fills its own
  double scale;      // shown times this (accuracy in points)
};

const std::vector<TableOutcome>& outcomes() {
  static const std::vector<TableOutcome> list = {
      {"final accuracy (points)", {.file = "final_metrics.csv", .column = "accuracy"}, 100},
      {"held-out loss over training (nats)",
       {.file = "final_metrics.csv", .column = "loss_auc_budget"},
       1},
      {"key-layer entropy, steps 10 to 50",
       {.file = "train_layers.csv", .column = "entropy_norm", .first = 10, .last = 50},
       1},
      {"logit change per step, steps 0 to 50 (ratio)",
       {.file = "train_layers.csv", .column = "logit_change", .log = true, .first = 0, .last = 50},
       1},
  };
  return list;
}

// The contrasts of the 2 x 2, in the cells' order (none, slow, control, reparam).
struct Effect {
  const char* name;
  std::array<double, 4> weights;
};
const std::vector<Effect>& effects() {
  static const std::vector<Effect> list = {
      {"start", {-0.5, -0.5, 0.5, 0.5}},  // small - saturated, over both rates
      {"rate", {-0.5, 0.5, -0.5, 0.5}},   // slower - usual, over both starts
      {"interaction", {1, -1, -1, 1}},    // (rate | small) - (rate | saturated)
      {"start alone", {-1, 0, 1, 0}},     // control - none
      {"rate alone", {-1, 1, 0, 0}},      // none_slow_qk - none
  };
  return list;
}

Measure with_contrast(Measure m, const std::array<double, 4>& weights) {
  for (size_t c = 0; c < 4; ++c)
    if (weights[c] != 0) m.contrast.push_back({cells()[c], weights[c]});
  return m;
}

std::string cell_text(const Interval& i, const TableOutcome& o, bool difference) {
  if (i.n == 0 || !std::isfinite(i.mean)) return "-";
  if (o.measure.log) {
    std::string out = significant(std::exp(i.mean), 2) + "x";
    if (difference && has_interval(i))
      out += " [" + significant(std::exp(i.lo), 2) + ", " + significant(std::exp(i.hi), 2) + "]";
    return out;
  }
  if (!difference) return significant(o.scale * i.mean, 3);
  return interval_text(i, o.scale == 100 ? 1 : 2, o.scale);
}

}  // namespace

std::vector<FactorialRow> summarise_factorial(const TrainResult& b) {
  std::vector<FactorialRow> out;
  for (const TableOutcome& o : outcomes()) {
    // Each cell alone, then each effect, per (task, d_k) trained with all four.
    std::map<std::pair<std::string, int64_t>, FactorialRow> rows;
    std::vector<std::pair<std::string, int64_t>> order;
    for (const SettingEstimate& e :
         estimate_all(with_contrast(o.measure, {1, 1, 1, 1}), b, b.seeds))
      order.push_back({e.task, e.d_k}), rows[{e.task, e.d_k}] = {e.task, e.d_k, o.name};
    for (size_t c = 0; c < 4; ++c) {
      std::array<double, 4> one{};
      one[c] = 1;
      for (const SettingEstimate& e : estimate_all(with_contrast(o.measure, one), b, b.seeds))
        if (rows.count({e.task, e.d_k})) rows[{e.task, e.d_k}].cells[c] = e.estimate;
    }
    for (const Effect& f : effects())
      for (const SettingEstimate& e : estimate_all(with_contrast(o.measure, f.weights), b, b.seeds))
        if (rows.count({e.task, e.d_k})) rows[{e.task, e.d_k}].effects[f.name] = e.estimate;
    for (const auto& key : order) out.push_back(rows[key]);
  }
  return out;
}

std::string factorial_table(const std::vector<FactorialRow>& rows) {
  if (rows.empty()) return "";
  std::ostringstream md;
  md << "### Start and learning rate, crossed\n\n"
     << "Four unscaled arms cross how W_Q and W_K start (saturated as `none`, or d_k^(-1/4) "
        "smaller) with how fast they learn (at lr, or at lr x d_k^(-1/4)): `none`, "
        "`none_slow_qk`, `none_small_init` (the control) and `none_reparam`. Per seed, the "
        "start's main effect is the mean of the two small-start cells minus the mean of the two "
        "saturated ones, the rate's the mean of the two slow cells minus the two at lr, the "
        "interaction the rate's effect when started small minus when started saturated, and "
        "each change alone its cell minus `none`; the mean over seeds +- the half-width of its "
        "95% t-interval (for the logit change, a ratio of geometric means and its interval). "
        "Accuracy has a ceiling on `reverse` and is nearly two-valued on `recall`, so an "
        "interaction in accuracy can be one of scale: the held-out loss over training (a "
        "stopped `recall` run keeps its last loss to the budget), the entropy and the logit "
        "change have none. C24 judges the interaction on the loss.\n\n"
     << "| task | d_k | outcome | none, slow, control, reparam | start | rate | interaction | "
        "start alone | rate alone |\n|---|---|---|---|---|---|---|---|---|\n";
  for (const FactorialRow& r : rows) {
    const TableOutcome* o = nullptr;
    for (const TableOutcome& x : outcomes())
      if (r.outcome == x.name) o = &x;
    md << "| " << r.task << " | " << r.d_k << " | " << r.outcome << " | ";
    for (size_t c = 0; c < 4; ++c) md << (c ? ", " : "") << cell_text(r.cells[c], *o, false);
    for (const char* e : {"start", "rate", "interaction", "start alone", "rate alone"})
      md << " | " << (r.effects.count(e) ? cell_text(r.effects.at(e), *o, true) : "-");
    md << " |\n";
  }
  md << "\n";
  return md.str();
}

}  // namespace gradflow::study
