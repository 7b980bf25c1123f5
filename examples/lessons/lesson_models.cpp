#include "examples/lessons/lesson_models.h"

namespace gradflow::lessons {

double greedy_accuracy(const nn::EncoderDecoder& model, const nn::Seq2SeqBatch& b) {
  NoGradGuard no_grad;
  const int64_t rows = b.tgt_out.shape()[0], cols = b.tgt_out.shape()[1];
  Tensor out = model.greedy_decode(b.src, b.src_pad, nn::kBosToken, nn::kEosToken, cols);
  int64_t right = 0, total = 0;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t t = 0; t < cols && b.tgt_out.at({i, t}) != nn::kPadToken; ++t, ++total)
      right += t < out.shape()[1] && out.at({i, t}) == b.tgt_out.at({i, t});
  return static_cast<double>(right) / static_cast<double>(total);
}

}  // namespace gradflow::lessons
