#include "nn/scale_modes.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "nn/length_scale.h"
#include "nn/qk_norm.h"
#include "nn/scale_variants.h"

namespace gradflow::nn {

namespace {

double inv_sqrt(double d_k, double) { return 1 / std::sqrt(d_k); }
double one(double, double) { return 1; }
int64_t one_scalar(int64_t, int64_t) { return 1; }
int64_t per_head(int64_t heads, int64_t) { return heads; }

}  // namespace

const std::vector<ScaleModeEntry>& scale_modes() {
  static const std::vector<ScaleModeEntry> table = {
      {"inv_sqrt_dk", "1/sqrt(d_k), Vaswani et al. (the default)", inv_sqrt},
      {"none", "1: no scaling", one},
      {"inv_dk", "1/d_k, as muP", [](double d_k, double) { return 1 / d_k; }},
      {"inv_2sqrt_dk", "1/(2 sqrt(d_k))", [](double d_k, double) { return 0.5 / std::sqrt(d_k); }},
      {"const", "a constant, const:<value>", [](double, double c) { return c; }},
      {"learned", "q times a learned scalar started at 1/sqrt(d_k)", one,
       [](const ScaleContext& c) -> std::shared_ptr<AttentionVariant> {
         return std::make_shared<LearnedScale>(c.d_k, c.init);
       },
       one_scalar},
      {"learned_log", "q times exp(t), t learned, started at log(1/sqrt(d_k))", one,
       [](const ScaleContext& c) -> std::shared_ptr<AttentionVariant> {
         return std::make_shared<LearnedLogScale>(c.d_k, c.init);
       },
       one_scalar},
      {"qk_norm", "LayerNorm on q and k, then 1/sqrt(d_k) (Dehghani et al. 2023)", inv_sqrt,
       [](const ScaleContext& c) -> std::shared_ptr<AttentionVariant> {
         return std::make_shared<QkNorm>(c.d_k, LayerNormOptions{}, c.init);
       },
       [](int64_t, int64_t d_k) { return 4 * d_k; }},
      {"qk_l2norm", "q, k L2-normalised, q times learned g (Henry et al. 2020)", one,
       [](const ScaleContext& c) -> std::shared_ptr<AttentionVariant> {
         return std::make_shared<QkL2Norm>(c.max_len, c.init);
       },
       one_scalar},
      {"log_n", "q times log(n)/sqrt(d_k), n the keys a query sees", one,
       [](const ScaleContext& c) -> std::shared_ptr<AttentionVariant> {
         return std::make_shared<LogNScale>(c.d_k);
       }},
      {"ssmax", "q times s log(n), s learned per head (Nakanishi 2025)", one,
       [](const ScaleContext& c) -> std::shared_ptr<AttentionVariant> {
         return std::make_shared<ScalableSoftmax>(c.heads, c.d_k, c.max_len, c.init);
       },
       per_head},
  };
  return table;
}

std::string scale_mode_names() {
  std::string out;
  for (const auto& e : scale_modes()) {
    if (!out.empty()) out += ", ";
    out += e.name;
    if (std::strcmp(e.name, "const") == 0) out += ":<value>";
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
  ScaleMode mode;
  if (name.rfind("const:", 0) == 0) {
    std::string number = name.substr(6);
    char* end = nullptr;
    double value = std::strtod(number.c_str(), &end);
    if (number.empty() || *end != '\0' || !std::isfinite(value) || value <= 0)
      fail("scale mode: '", name, "' needs a positive number after const:, e.g. const:0.125");
    // Attention runs in float32: a larger scale would be infinity there.
    if (value > std::numeric_limits<float>::max())
      fail("scale mode: '", name, "': ", number, " does not fit in float32 (at most 3.4e38)");
    mode.entry_ = find_entry("const");
    mode.constant_ = value;
    return mode;
  }
  const ScaleModeEntry* entry = name == "const" ? nullptr : find_entry(name.c_str());
  if (entry == nullptr)
    fail("scale mode: unknown '", name, "' (expected one of ", scale_mode_names(), ")");
  mode.entry_ = entry;
  return mode;
}

std::string ScaleMode::name() const {
  if (!is("const")) return entry_->name;
  // Shortest text that reads back to the same double, so a mode written to
  // a log or checkpoint parses back exactly.
  char buf[32];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, constant_);
  return "const:" + std::string(buf, ec == std::errc() ? end : buf);
}

bool ScaleMode::is(const char* entry_name) const {
  return std::strcmp(entry_->name, entry_name) == 0;
}

double ScaleMode::value(int64_t d_k) const {
  return entry_->factor(static_cast<double>(d_k), constant_);
}

std::shared_ptr<AttentionVariant> ScaleMode::make_variant(const ScaleContext& context) const {
  return entry_->variant ? entry_->variant(context) : nullptr;
}

int64_t ScaleMode::parameters(int64_t heads, int64_t d_k) const {
  return entry_->parameters ? entry_->parameters(heads, d_k) : 0;
}

}  // namespace gradflow::nn
