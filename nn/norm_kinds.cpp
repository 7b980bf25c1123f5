#include "nn/norm_kinds.h"

#include "nn/dyt.h"

namespace gradflow::nn {

// The norms (names as in flags and files):
//   layernorm  (x - mean) / sqrt(var + eps) * weight + bias, eps 1e-5; the default
//   rmsnorm    x / sqrt(mean(x^2) + eps) * weight, eps 1e-6 (Zhang and Sennrich 2019)
//   dyt        weight * tanh(alpha x) + bias, alpha learned from 0.5 (Zhu et al. 2025)
const std::vector<NormKind>& norm_kinds() {
  static const std::vector<NormKind> table = {
      {"layernorm", "LayerNorm: centred, scaled to unit variance, a gain and a bias (the default)",
       [](int64_t dim, Init init) -> std::shared_ptr<Norm> {
         return std::make_shared<LayerNorm>(dim, LayerNormOptions{}, init);
       },
       [](double dim) { return 2 * dim; }},
      {"rmsnorm", "RMSNorm: divided by the root mean square, a gain, no bias (Zhang and Sennrich)",
       [](int64_t dim, Init init) -> std::shared_ptr<Norm> {
         return std::make_shared<RMSNorm>(dim, RMSNormOptions{}, init);
       },
       [](double dim) { return dim; }, /*kept=*/1},
      {"dyt",
       "DyT: weight * tanh(alpha x) + bias, alpha learned from 0.5, no statistics (Zhu et al.)",
       [](int64_t dim, Init init) -> std::shared_ptr<Norm> {
         return std::make_shared<DyT>(dim, DyTOptions{}, init);
       },
       [](double dim) { return 2 * dim + 1; }, /*kept=*/1},
  };
  return table;
}

const NormKind& norm_kind(const std::string& name) {
  for (const auto& k : norm_kinds())
    if (name == k.name) return k;
  std::string names;
  for (const auto& n : norm_kind_names()) names += (names.empty() ? "" : ", ") + n;
  fail("norm type: unknown '", name, "' (expected one of ", names, ")");
}

std::vector<std::string> norm_kind_names() {
  std::vector<std::string> out;
  for (const auto& k : norm_kinds()) out.push_back(k.name);
  return out;
}

}  // namespace gradflow::nn
