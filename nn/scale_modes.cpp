#include "nn/scale_modes.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "nn/length_scale.h"
#include "nn/qk_norm.h"
#include "nn/scale_variants.h"
#include "nn/softcap.h"

namespace gradflow::nn {

namespace {

double inv_sqrt(double d_k, double) { return 1 / std::sqrt(d_k); }
double one(double, double) { return 1; }
int64_t one_scalar(int64_t, int64_t) { return 1; }
int64_t per_head(int64_t heads, int64_t) { return heads; }

// The start factors (ScaleModeEntry::start_factor) of the modes whose
// variant carries the scale, each the variant's own formula in double.
// learned and learned_log start at 1/sqrt(d_k) (exp(log(1/sqrt(d_k))) only
// up to rounding: the exact value is the one meant).
double start_inv_sqrt(const ScaleContext& c) { return 1 / std::sqrt(static_cast<double>(c.d_k)); }
double start_qk_l2norm(const ScaleContext& c) { return qk_l2norm_start(c.max_len); }
double start_log_n(const ScaleContext& c) {
  return log_length(c.max_len) / std::sqrt(static_cast<double>(c.d_k));
}
// 1/sqrt(d_k) up to rounding: s = 1/(sqrt(d_k) log L), times log L.
double start_ssmax(const ScaleContext& c) {
  return ssmax_start(c.d_k, c.max_len) * log_length(c.max_len);
}

}  // namespace

// The modes (names as used in files and flags):
//   inv_sqrt_dk    1/sqrt(d_k), Vaswani et al.; the default
//   none           1
//   inv_dk         1/d_k, as muP
//   inv_2sqrt_dk   1/(2 sqrt(d_k))
//   const:<value>  any constant, e.g. const:0.125 (sweeps of d_k^-alpha)
//   learned        q times a learned scalar started at 1/sqrt(d_k)
//   learned_log    q times exp(t), t learned, started at log(1/sqrt(d_k))
//   qk_norm        LayerNorm on q and k (over D, per head), then 1/sqrt(d_k),
//                  Dehghani et al. 2023
//   qk_l2norm      q and k L2-normalised, q times a learned g started at
//                  log2(L^2 - L), Henry et al. 2020
//   log_n          q times log(n) / sqrt(d_k), n the number of keys the
//                  query sees (length_scale.h)
//   ssmax          q times s log(n), s learned per head, started at
//                  1/(sqrt(d_k) log L): Scalable-Softmax, Nakanishi 2025
//   softcap[:<c>]  c tanh(q.k / (sqrt(d_k) c)), c = 30 if not given: the
//                  logits soft-capped within +-c, Gemma 2 (softcap.h)
// where L is the sequence length the layer is built for (its max_len).
// Every mode but softcap transforms only q and k and keeps the fused
// kernel; softcap transforms the scores, so its layers take the composed
// path.
const std::vector<ScaleModeEntry>& scale_modes() {
  static const std::vector<ScaleModeEntry> table = {
      {.name = "inv_sqrt_dk",
       .summary = "1/sqrt(d_k), Vaswani et al. (the default)",
       .factor = inv_sqrt},
      {.name = "none", .summary = "1: no scaling", .factor = one},
      {.name = "inv_dk",
       .summary = "1/d_k, as muP",
       .factor = [](double d_k, double) { return 1 / d_k; }},
      {.name = "inv_2sqrt_dk",
       .summary = "1/(2 sqrt(d_k))",
       .factor = [](double d_k, double) { return 0.5 / std::sqrt(d_k); }},
      {.name = "const",
       .summary = "a constant, const:<value>",
       .factor = [](double, double c) { return c; },
       .takes_value = true},
      {.name = "learned",
       .summary = "q times a learned scalar started at 1/sqrt(d_k)",
       .factor = one,
       .variant = [](const ScaleContext& c) -> std::shared_ptr<AttentionVariant> {
         return std::make_shared<LearnedScale>(c.d_k, c.init);
       },
       .start_factor = start_inv_sqrt,
       .parameters = one_scalar},
      {.name = "learned_log",
       .summary = "q times exp(t), t learned, started at log(1/sqrt(d_k))",
       .factor = one,
       .variant = [](const ScaleContext& c) -> std::shared_ptr<AttentionVariant> {
         return std::make_shared<LearnedLogScale>(c.d_k, c.init);
       },
       .start_factor = start_inv_sqrt,
       .parameters = one_scalar},
      {.name = "qk_norm",
       .summary = "LayerNorm on q and k, then 1/sqrt(d_k) (Dehghani et al. 2023)",
       .factor = inv_sqrt,
       .qk_normalisation = QkNormalisation::LayerNorm,
       .variant = [](const ScaleContext& c) -> std::shared_ptr<AttentionVariant> {
         return std::make_shared<QkNorm>(c.d_k, LayerNormOptions{}, c.init);
       },
       .parameters = [](int64_t, int64_t d_k) { return 4 * d_k; }},
      {.name = "qk_l2norm",
       .summary = "q, k L2-normalised, q times learned g (Henry et al. 2020)",
       .factor = one,
       .qk_normalisation = QkNormalisation::L2,
       .variant = [](const ScaleContext& c) -> std::shared_ptr<AttentionVariant> {
         return std::make_shared<QkL2Norm>(c.max_len, c.init);
       },
       .start_factor = start_qk_l2norm,
       .parameters = one_scalar},
      {.name = "log_n",
       .summary = "q times log(n)/sqrt(d_k), n the keys a query sees",
       .factor = one,
       .variant = [](const ScaleContext& c) -> std::shared_ptr<AttentionVariant> {
         return std::make_shared<LogNScale>(c.d_k, c.max_len);
       },
       .start_factor = start_log_n},
      {.name = "ssmax",
       .summary = "q times s log(n), s learned per head (Nakanishi 2025)",
       .factor = one,
       .variant = [](const ScaleContext& c) -> std::shared_ptr<AttentionVariant> {
         return std::make_shared<ScalableSoftmax>(c.heads, c.d_k, c.max_len, c.init);
       },
       .start_factor = start_ssmax,
       .parameters = per_head},
      {.name = "softcap",
       .summary = "c tanh(q.k / (sqrt(d_k) c)), softcap[:<c>], c = 30 (Gemma 2)",
       .factor = inv_sqrt,
       .takes_value = true,
       .default_value = 30,
       .variant = make_softcap,
       .transforms_scores = true},
  };
  return table;
}

std::string scale_mode_names() {
  std::string out;
  for (const auto& e : scale_modes()) {
    if (!out.empty()) out += ", ";
    out += e.name;
    if (e.takes_value) out += e.default_value > 0 ? "[:<value>]" : ":<value>";
  }
  return out;
}

namespace {
const ScaleModeEntry* find_entry(const char* name) {
  for (const auto& e : scale_modes())
    if (std::strcmp(e.name, name) == 0) return &e;
  return nullptr;
}
}  // namespace

ScaleMode::ScaleMode() : entry_(&scale_modes().front()) {}

ScaleMode::ScaleMode(const std::string& name) : ScaleMode(parse(name)) {}

ScaleMode::ScaleMode(const char* name) {
  if (name == nullptr) fail("scale mode: a null name (expected e.g. \"inv_sqrt_dk\" or \"none\")");
  *this = parse(name);
}

ScaleMode ScaleMode::parse(const std::string& name) {
  // "name" or, for a mode that takes a value, "name:<value>".
  const size_t colon = name.find(':');
  const std::string base = name.substr(0, colon);
  const ScaleModeEntry* entry = find_entry(base.c_str());
  const bool bare = colon == std::string::npos;
  if (entry == nullptr ||
      (bare ? entry->takes_value && entry->default_value <= 0 : !entry->takes_value))
    fail("scale mode: unknown '", name, "' (expected one of ", scale_mode_names(), ")");
  ScaleMode mode;
  mode.entry_ = entry;
  if (!entry->takes_value) return mode;
  if (bare) {
    mode.constant_ = entry->default_value;
    return mode;
  }
  std::string number = name.substr(colon + 1);
  char* end = nullptr;
  double value = std::strtod(number.c_str(), &end);
  if (number.empty() || *end != '\0' || !std::isfinite(value) || value <= 0)
    fail("scale mode: '", name, "' needs a positive number after ", base, ":, e.g. ", base,
         ":0.125");
  // Attention runs in float32: a larger scale would be infinity there.
  if (value > std::numeric_limits<float>::max())
    fail("scale mode: '", name, "': ", number, " does not fit in float32 (at most 3.4e38)");
  mode.constant_ = value;
  return mode;
}

std::string ScaleMode::name() const {
  if (!entry_->takes_value) return entry_->name;
  // Shortest text that reads back to the same double, so a mode written to
  // a log or checkpoint parses back exactly.
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, constant_);
  return entry_->name + (":" + std::string(buf, ec == std::errc() ? end : buf));
}

bool ScaleMode::is(const char* entry_name) const {
  return std::strcmp(entry_->name, entry_name) == 0;
}

double ScaleMode::value(int64_t d_k) const {
  return entry_->factor(static_cast<double>(d_k), constant_);
}

double ScaleMode::start_factor(const ScaleContext& context) const {
  ScaleContext with_value = context;
  with_value.value = constant_;
  return entry_->start_factor ? entry_->start_factor(with_value) : value(context.d_k);
}

std::shared_ptr<AttentionVariant> ScaleMode::make_variant(const ScaleContext& context) const {
  ScaleContext with_value = context;
  with_value.value = constant_;
  return entry_->variant ? entry_->variant(with_value) : nullptr;
}

int64_t ScaleMode::parameters(int64_t heads, int64_t d_k) const {
  return entry_->parameters ? entry_->parameters(heads, d_k) : 0;
}

}  // namespace gradflow::nn
