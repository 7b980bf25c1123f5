#include "nn/ffn_kinds.h"

namespace gradflow::nn {

const std::vector<FfnKind>& ffn_kinds() {
  static const std::vector<FfnKind> table = {
      {"mlp", "fc2(act(fc1(x))), act the --activation (the default)",
       [](const FfnContext& c) -> std::shared_ptr<FeedForward> {
         return std::make_shared<Mlp>(c.d_model, c.d_ff, c.activation, c.init);
       },
       [](double d_model, double d_ff) { return 2 * d_model * d_ff + d_ff + d_model; },
       /*takes_activation=*/true, /*kept=*/1, /*alive=*/2},
      {"swiglu", "fc2(silu(fc1(x)) * fc3(x)), a gated unit of d_ff (Shazeer 2020)",
       [](const FfnContext& c) -> std::shared_ptr<FeedForward> {
         return std::make_shared<SwiGLU>(c.d_model, c.d_ff, c.init);
       },
       [](double d_model, double d_ff) { return 3 * d_model * d_ff + 2 * d_ff + d_model; },
       /*takes_activation=*/false, /*kept=*/4, /*alive=*/4},
  };
  return table;
}

const FfnKind& ffn_kind(const std::string& name) {
  for (const auto& k : ffn_kinds())
    if (name == k.name) return k;
  std::string names;
  for (const auto& n : ffn_kind_names()) names += (names.empty() ? "" : ", ") + n;
  fail("ffn: unknown '", name, "' (expected one of ", names, ")");
}

std::vector<std::string> ffn_kind_names() {
  std::vector<std::string> out;
  for (const auto& k : ffn_kinds()) out.push_back(k.name);
  return out;
}

void check_ffn_activation(const std::string& name, const std::string& activation) {
  const FfnKind& kind = ffn_kind(name);
  if (!kind.takes_activation && activation != "gelu")
    fail("ffn ", kind.name, " takes no activation (its own is fixed); activation ", activation,
         " is for ffn mlp");
}

}  // namespace gradflow::nn
