#include "nn/generate.h"

#include "autograd/ops.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "autograd/variable.h"
#include "tensor/creation.h"
#include "tensor/index.h"

namespace gradflow::nn {

Tensor sample_tokens(const Tensor& logits, double temperature, int64_t top_k, Generator& gen) {
  if (logits.ndim() != 2)
    fail("sample_tokens: expected logits (B, V), got ", shape_str(logits.shape()));
  if (!(temperature >= 0) || !std::isfinite(temperature))
    fail("sample_tokens: temperature must be >= 0, got ", temperature);
  if (top_k < 0) fail("sample_tokens: top_k must be >= 0, got ", top_k);
  const int64_t b = logits.shape()[0], v = logits.shape()[1];
  Tensor out = Tensor::empty({b, 1}, DType::Int64);
  std::vector<int64_t> order(v);
  std::vector<double> row(v);
  for (int64_t i = 0; i < b; ++i) {
    for (int64_t j = 0; j < v; ++j) row[j] = logits.at({i, j});
    std::iota(order.begin(), order.end(), 0);
    // Highest logit first; ties keep the lower id, so greedy matches argmax.
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t x, int64_t y) { return row[x] > row[y]; });
    int64_t pick = order[0];
    if (temperature > 0) {
      const int64_t k = top_k == 0 ? v : std::min(top_k, v);
      std::vector<double> weights(k);
      for (int64_t r = 0; r < k; ++r)
        weights[r] = std::exp((row[order[r]] - row[order[0]]) / temperature);
      double total = std::accumulate(weights.begin(), weights.end(), 0.0);
      double u = gen.uniform() * total;
      for (int64_t r = 0; r < k; ++r) {
        pick = order[r];
        if ((u -= weights[r]) < 0) break;
      }
    }
    out.set({i, 0}, static_cast<double>(pick));
  }
  return out;
}

Tensor generate(const DecoderLM& model, const Tensor& prompt, const GenerateOptions& options,
                Generator& gen) {
  if (prompt.ndim() != 2 || prompt.dtype() != DType::Int64 || prompt.shape()[1] == 0)
    fail("generate: prompt must be (B, P) int64 with P >= 1, got ", shape_str(prompt.shape()));
  const int64_t total = prompt.shape()[1] + options.new_tokens;
  if (options.new_tokens < 0 || total > model.config().max_len)
    fail("generate: ", prompt.shape()[1], " prompt tokens + ", options.new_tokens,
         " new ones exceed the model's max_len ", model.config().max_len);
  NoGradGuard no_grad;
  Tensor ids = prompt.contiguous();
  std::vector<LayerCache> caches;
  Tensor logits = model.forward(ids, Tensor(), options.use_cache ? &caches : nullptr).data();
  for (int64_t step = 0; step < options.new_tokens; ++step) {
    Tensor last = logits.select(1, logits.shape()[1] - 1);
    Tensor next = sample_tokens(last, options.temperature, options.top_k, gen);
    ids = cat({ids, next}, 1);
    if (step + 1 == options.new_tokens) break;
    logits = options.use_cache ? model.forward(next, Tensor(), &caches, ids.shape()[1] - 1).data()
                               : model.forward(ids).data();
  }
  return ids;
}

}  // namespace gradflow::nn
