// Data parallelism for small models: the parts of a batch forward and
// backward at once, one per thread, instead of every kernel of one pass cut
// over the threads.
//
// Why: in a model as small as seq2seq-tiny, a kernel has a few thousand
// elements, and cutting each of some 250 kernels a step over two threads
// costs about as much in waking, waiting and imbalance as it saves. Whole
// passes over halves of the batch need one handover a step. A pass runs its
// kernels on its own thread (tensor/parallel.h: a parallel_for inside a
// parallel_for runs serially).
//
// The gradients of leaves (the parameters) are held aside per part (a
// LeafGradSink) and added to the leaves afterwards in part order, so a fixed
// number of parts gives the same bits every run. The sum equals one pass over
// the whole batch up to float rounding, when each part's loss is weighted by
// its share of the batch (see the training loop and train_bench).
//
// REQUIRES of loss_of: different parts touch no shared state but reading the
// parameters: no dropout drawing from a shared generator (Dropout refuses
// while one of two or more parts runs), no attention probe, no KV cache, no
// hooks that write.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "autograd/variable.h"

namespace gradflow {

// Calls loss_of(part) for part in [0, parts), on the pool's threads (up to
// one part each at a time), backpropagates each part's loss (a single
// element) where it was made, then adds every part's leaf gradients into the
// leaves' .grad in part order. Returns the parts' loss values. A part whose
// loss is not finite is not backpropagated. An exception in any part is
// rethrown here after every part has finished, and then no leaf gradient is
// touched.
std::vector<double> backward_in_parallel(int64_t parts,
                                         const std::function<Variable(int64_t part)>& loss_of);

// Rows [begin, end) of part `part` when n rows are cut into `parts` nearly
// equal parts, in order.
struct PartRange {
  int64_t begin, end;
};
inline PartRange part_range(int64_t n, int64_t part, int64_t parts) {
  return {part * n / parts, (part + 1) * n / parts};
}

// True on a thread while backward_in_parallel runs one of its parts there,
// when there are two or more (one part alone shares nothing).
bool in_parallel_part();

}  // namespace gradflow
