#include "nn/generate.h"

#include "autograd/ops.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "autograd/variable.h"
#include "tensor/creation.h"
#include "tensor/index.h"
#include "tensor/reduce.h"

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
  if (options.new_tokens < 0) fail("generate: new_tokens must be >= 0, got ", options.new_tokens);
  NoGradGuard no_grad;
  const int64_t max_len = model.config().max_len;
  Tensor ids = prompt.contiguous();
  // The last max_len tokens: all the model can see at once.
  auto window = [&ids, max_len] {
    const int64_t n = ids.shape()[1];
    return n <= max_len ? ids : ids.narrow(1, n - max_len, max_len).contiguous();
  };
  // The cache holds positions from 0; once the text is longer than max_len
  // every window starts elsewhere, so each step re-runs the whole window.
  std::vector<LayerCache> caches;
  bool cached = options.use_cache && ids.shape()[1] <= max_len;
  Tensor logits = model.forward(window(), Tensor(), cached ? &caches : nullptr).data();
  for (int64_t step = 0; step < options.new_tokens; ++step) {
    Tensor last = logits.select(1, logits.shape()[1] - 1);
    Tensor next = sample_tokens(last, options.temperature, options.top_k, gen);
    ids = cat({ids, next}, 1);
    if (step + 1 == options.new_tokens) break;
    const int64_t n = ids.shape()[1];
    cached = cached && n <= max_len;
    logits = cached ? model.forward(next, Tensor(), &caches, n - 1).data()
                    : model.forward(window()).data();
  }
  return ids;
}

Tensor generate(const EncoderDecoder& model, const Tensor& src, const Tensor& src_pad, int64_t bos,
                int64_t eos, const GenerateOptions& options, Generator& gen) {
  if (options.new_tokens > model.config().max_len)
    fail("decoding ", options.new_tokens, " tokens: the model's positions end at its max_len ",
         model.config().max_len, "; decode at most that many");
  NoGradGuard no_grad;
  const int64_t b = src.shape()[0];
  Variable memory = model.encode(src, src_pad);
  Tensor out = full({b, 1}, static_cast<double>(bos), DType::Int64);
  std::vector<LayerCache> caches;
  std::vector<bool> done(b, false);
  for (int64_t step = 0; step < options.new_tokens; ++step) {
    Variable logits = options.use_cache
                          ? model.decode(out.narrow(1, step, 1), memory, src_pad, &caches, step)
                          : model.decode(out, memory, src_pad);
    Tensor last = logits.data().select(1, logits.shape()[1] - 1);
    // Greedy: the first maximum, as sample_tokens would pick, without its sort.
    Tensor next = options.temperature == 0
                      ? max(last, -1, true).indices
                      : sample_tokens(last, options.temperature, options.top_k, gen);
    out = cat({out, next}, 1);
    bool all_done = true;
    for (int64_t i = 0; i < b; ++i) {
      done[i] = done[i] || next.at({i, 0}) == static_cast<double>(eos);
      all_done = all_done && done[i];
    }
    if (all_done) break;
  }
  return out.narrow(1, 1, out.shape()[1] - 1).contiguous();
}

}  // namespace gradflow::nn
