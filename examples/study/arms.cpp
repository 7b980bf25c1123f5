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

namespace {
bool has_row(const std::string& name) {
  return std::any_of(arms().begin(), arms().end(), [&](const Arm& a) { return a.name == name; });
}

// The colours of the arms without a row, one per mode of the library
// without a row, in the library table's order: Paul Tol's muted scheme,
// colour-blind safe beside Okabe-Ito's and none of the rows' colours (a test
// checks it). Past the list they repeat, and mode_panels splits the arms
// that share one into panels of their own.
constexpr std::string_view kRowlessColours[] = {"#882255", "#117733", "#332288",
                                                "#999933", "#44AA99", "#AA4499"};

ModeLook rowless_look(const nn::ScaleMode& mode) {
  size_t index = 0;
  for (const nn::ScaleModeEntry& e : nn::scale_modes()) {
    if (&e == &mode.entry()) break;
    if (!has_row(e.name)) ++index;
  }
  return {kRowlessColours[index % std::size(kRowlessColours)], true};
}
}  // namespace

std::optional<Arm> find_arm(const std::string& name) {
  for (const Arm& a : arms())
    if (a.name == name) return a;
  try {
    const nn::ScaleMode mode(name);
    return Arm{
        .name = name, .scale = name, .summary = mode.entry().summary, .look = rowless_look(mode)};
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
    if (has_row(e.name)) continue;
    // softcap[:<value>, default 30]; const:<value>, which has no default.
    std::string name = e.name;
    if (e.takes_value && e.default_value > 0)
      name += "[:<value>, default " + nn::ScaleMode(e.name).name().substr(name.size() + 1) + "]";
    else if (e.takes_value)
      name += ":<value>";
    others += (others.empty() ? "" : ", ") + name;
  }
  return others.empty() ? out : out + ", or any scale mode of the library: " + others;
}

std::vector<std::string> in_drawing_order(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const Arm& a : arms())
    if (std::find(names.begin(), names.end(), a.name) != names.end()) out.push_back(a.name);
  for (const std::string& n : names)
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  return out;
}

std::vector<std::string> measured_arms(const std::vector<std::string>& requested) {
  std::vector<std::string> out = study_modes();
  for (const std::string& m : requested)
    if (std::find(out.begin(), out.end(), m) == out.end()) out.push_back(m);
  return out;
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

std::shared_ptr<nn::AttentionVariant> mode_variant(const nn::ScaleMode& mode, int64_t d_k,
                                                   int64_t built_len) {
  return mode.make_variant({.d_k = d_k, .heads = 1, .max_len = built_len});
}

std::shared_ptr<nn::AttentionVariant> transforming(std::shared_ptr<nn::AttentionVariant> variant) {
  return variant && variant->transforms_scores() ? variant : nullptr;
}

Tensor transformed_scores(const nn::AttentionVariant* variant, const Tensor& logits) {
  if (variant == nullptr || !variant->transforms_scores()) return logits;
  NoGradGuard no_grad;
  // The hook's shape, (B, H, T, S); every key visible.
  const Shape shape = logits.shape();
  const int64_t s = shape.back(), t = logits.ndim() > 1 ? shape[shape.size() - 2] : 1;
  const Variable scores(logits.reshape({logits.numel() / (t * s), 1, t, s}));
  return variant->transform_scores(scores, {.key_length = s}).data().reshape(shape);
}

void apply_mode_init(nn::MultiHeadAttention& attention, const std::string& mode) {
  const double power = arm(mode).qk_init_power;
  if (power == 0) return;
  // With power -1/4, q and k each shrink by d_k^(-1/4), so q.k's variance
  // shrinks by 1/sqrt(d_k): the unscaled logits start as 1/sqrt(d_k)'s do.
  scale_qk_projections(attention, std::pow(static_cast<double>(attention.d_k()), power));
}

void scale_qk_projections(nn::MultiHeadAttention& attention, double factor) {
  for (nn::Linear* projection : {attention.q_proj.get(), attention.k_proj.get()})
    for (Variable* p : {&projection->weight, &projection->bias})
      if (p->defined()) {
        Tensor values = p->data();  // a handle to the parameter's storage
        values.copy_(mul(values, factor));
      }
}

}  // namespace gradflow::study
