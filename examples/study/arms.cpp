#include "examples/study/arms.h"

#include <algorithm>
#include <cmath>

#include "tensor/error.h"
#include "tensor/ops.h"

namespace gradflow::study {

namespace {
std::vector<Arm>& table() {
  // Colours: Okabe-Ito's vermillion, black, blue, bluish green, orange,
  // reddish purple and sky blue for the default run's arms, its yellow (the
  // faintest on white) for `learned`, which only --full trains; a dashed arm
  // shares its colour with a related one.
  static std::vector<Arm> rows = {
      {.name = "none",
       .scale = "none",
       .summary = "unscaled q.k",
       .trained = Trained::ByDefault,
       .look = {"#D55E00"},
       .anchor = true},
      {.name = kDefaultMode,
       .scale = "inv_sqrt_dk",
       .summary = "1/sqrt(d_k), the reference every arm is compared with",
       .trained = Trained::ByDefault,
       .look = {"#000000"},
       .anchor = true},
      {.name = "inv_dk",
       .scale = "inv_dk",
       .summary = "1/d_k, as muP",
       .trained = Trained::ByDefault,
       .look = {"#0072B2"}},
      {.name = "qk_norm",
       .scale = "qk_norm",
       .summary = "LayerNorm on q and k, then 1/sqrt(d_k)",
       .trained = Trained::ByDefault,
       .look = {"#009E73"}},
      {.name = "learned",
       .scale = "learned",
       .summary = "a learned temperature started at 1/sqrt(d_k) (it tracks it)",
       .trained = Trained::WithFull,
       .look = {"#F0E442"}},
      {.name = kControl,
       .scale = "none",
       .summary = "unscaled, W_Q and W_K started d_k^(-1/4) smaller",
       .qk_init_power = -0.25,
       .trained = Trained::ByDefault,
       .look = {"#E69F00"}},
      {.name = kReparam,
       .scale = "none",
       .summary = "the control, W_Q and W_K also learning at lr x d_k^(-1/4)",
       .qk_init_power = -0.25,
       .qk_lr_power = -0.25,
       .trained = Trained::ByDefault,
       .look = {"#CC79A7"}},
      {.name = "inv_2sqrt_dk",
       .scale = "inv_2sqrt_dk",
       .summary = "1/(2 sqrt(d_k)), the seeds' 'too flat' half scale",
       .trained = Trained::WithFull,
       .look = {"#0072B2", true}},
      {.name = "qk_l2norm",
       .scale = "qk_l2norm",
       .summary = "q and k L2-normalised, times a learned g",
       .trained = Trained::WithFull,
       .look = {"#009E73", true}},
      {.name = "learned_log",
       .scale = "learned_log",
       .summary = "q times exp(t), t learned",
       .trained = Trained::WithFull,
       .look = {"#E69F00", true}},
      {.name = "log_n",
       .scale = "log_n",
       .summary = "log(n)/sqrt(d_k), n the keys a query sees (the length part)",
       .look = {"#CC79A7", true}},
      {.name = "ssmax",
       .scale = "ssmax",
       .summary = "Scalable-Softmax: s log(n), s learned per head (the length part)",
       .look = {"#56B4E9", true}},
      // With none, the control and none_reparam, the fourth cell of a 2 x 2:
      // start (saturated, small) x W_Q and W_K's learning rate (as is,
      // d_k^(-1/4) slower), so neither factor's share of the gap depends on
      // the path taken through the cells (factorial.cpp). Last, so the rows
      // above keep the init part's random streams.
      {.name = kSlowQk,
       .scale = "none",
       .summary = "unscaled, started as `none`, W_Q and W_K learning at lr x d_k^(-1/4)",
       .qk_lr_power = -0.25,
       .trained = Trained::ByDefault,
       .look = {"#56B4E9"}},
  };
  return rows;
}
}  // namespace

const std::vector<Arm>& arms() { return table(); }

void add_arm(const Arm& row) {
  if (find_arm(row.name)) fail("add_arm: an arm named '", row.name, "' exists already");
  nn::ScaleMode(row.scale);  // throws on an unknown scale mode
  table().push_back(row);
}

std::optional<Arm> find_arm(const std::string& name) {
  for (const Arm& a : arms())
    if (a.name == name) return a;
  try {
    const nn::ScaleMode mode(name);
    return Arm{.name = name, .scale = name, .summary = mode.entry().summary};
  } catch (const Error&) {
    return std::nullopt;
  }
}

Arm arm(const std::string& name) {
  std::optional<Arm> a = find_arm(name);
  if (!a) fail("unknown arm '", name, "' (expected one of ", arm_names(), ")");
  return *a;
}

std::string arm_names() {
  std::string out, others;
  for (const Arm& a : arms()) out += (out.empty() ? "" : ", ") + a.name;
  // The library's modes without a row of their own are arms too.
  for (const nn::ScaleModeEntry& e : nn::scale_modes()) {
    const std::string name = std::string(e.name) + (e.takes_value ? ":<value>" : "");
    const bool has_row =
        std::any_of(arms().begin(), arms().end(), [&e](const Arm& a) { return a.name == e.name; });
    if (!has_row) others += (others.empty() ? "" : ", ") + name;
  }
  return others.empty() ? out : out + ", or any scale mode of the library: " + others;
}

bool is_reference(const std::string& mode) { return mode == kDefaultMode; }

namespace {
std::vector<std::string> names_trained(bool full) {
  std::vector<std::string> out;
  for (const Arm& a : arms())
    if (a.trained == Trained::ByDefault || (full && a.trained == Trained::WithFull))
      out.push_back(a.name);
  return out;
}
}  // namespace

std::vector<std::string> study_modes() { return names_trained(true); }

std::vector<std::string> default_modes() { return names_trained(false); }

bool trained_by_default(const std::string& mode) {
  const std::optional<Arm> a = find_arm(mode);
  return a && a->trained == Trained::ByDefault;
}

nn::ScaleMode scale_mode_of(const std::string& mode) { return nn::ScaleMode(arm(mode).scale); }

bool qk_normalised(const std::string& mode) {
  return scale_mode_of(mode).entry().qk_normalisation != nn::QkNormalisation::None;
}

bool changes_qk_init(const std::string& mode) { return arm(mode).qk_init_power != 0; }

bool has_qk_lr_factor(const std::string& mode) { return arm(mode).qk_lr_power != 0; }

double qk_lr_factor(const std::string& mode, int64_t d_k) {
  return std::pow(static_cast<double>(d_k), arm(mode).qk_lr_power);
}

void apply_mode_init(nn::MultiHeadAttention& attention, const std::string& mode) {
  const double power = arm(mode).qk_init_power;
  if (power == 0) return;
  // With power -1/4, q and k each shrink by d_k^(-1/4), so q.k's variance
  // shrinks by 1/sqrt(d_k): the unscaled logits start as 1/sqrt(d_k)'s do.
  const double factor = std::pow(static_cast<double>(attention.d_k()), power);
  for (nn::Linear* projection : {attention.q_proj.get(), attention.k_proj.get()})
    for (Variable* p : {&projection->weight, &projection->bias})
      if (p->defined()) {
        Tensor values = p->data();  // a handle to the parameter's storage
        values.copy_(mul(values, factor));
      }
}

}  // namespace gradflow::study
