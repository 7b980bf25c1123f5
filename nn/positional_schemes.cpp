#include "nn/positional_schemes.h"

namespace gradflow::nn {

namespace {
void even_d_k(const PositionalContext& c) {
  if (c.d_k % 2 != 0)
    fail("positional rope: rope turns pairs of dimensions, so d_k must be even, got ", c.d_k);
}
}  // namespace

const std::vector<PositionalScheme>& positional_schemes() {
  using Table = PositionalScheme::Table;
  static const std::vector<PositionalScheme> table = {
      {"learned", "a learned table added to the embeddings", Table::Learned, nullptr, nullptr,
       false, [](double max_len, double d_model) { return max_len * d_model; }},
      {"sinusoidal", "fixed sinusoids added to the embeddings", Table::Sinusoidal},
      {"rope", "rotary embeddings turning q and k in every self-attention layer", Table::None,
       make_rope, even_d_k},
      {"alibi", "a bias -m_h |i - j| on every self-attention layer's logits (Press et al.)",
       Table::None, make_alibi, nullptr, /*transforms_scores=*/true},
      {"none", "no positions: without a causal mask, the model cannot tell one order from another",
       Table::None},
  };
  return table;
}

const PositionalScheme& positional_scheme(const std::string& name) {
  for (const auto& s : positional_schemes())
    if (name == s.name) return s;
  std::string names;
  for (const auto& n : positional_names()) names += (names.empty() ? "" : ", ") + n;
  fail("positional: unknown '", name, "' (expected one of ", names, ")");
}

std::vector<std::string> positional_names() {
  std::vector<std::string> out;
  for (const auto& s : positional_schemes()) out.push_back(s.name);
  return out;
}

}  // namespace gradflow::nn
