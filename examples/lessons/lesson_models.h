// What the lessons that train a model share (lessons 8, 11, 13): how well an
// encoder-decoder writes its targets. Linked with nn/; lessons 1 to 4 do
// without it.
#pragma once

#include "nn/data/toy_tasks.h"
#include "nn/models.h"

namespace gradflow::lessons {

// Greedy decoding of batch b's sources, without gradients: the share of its
// target tokens (padding aside) that come out right.
double greedy_accuracy(const nn::EncoderDecoder& model, const nn::Seq2SeqBatch& b);

}  // namespace gradflow::lessons
