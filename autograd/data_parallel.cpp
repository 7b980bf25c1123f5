#include "autograd/data_parallel.h"

#include <cmath>
#include <exception>

#include "tensor/parallel.h"

namespace gradflow {

namespace {
thread_local bool in_part = false;
}  // namespace

bool in_parallel_part() { return in_part; }

std::vector<double> backward_in_parallel(int64_t parts,
                                         const std::function<Variable(int64_t part)>& loss_of) {
  if (parts < 1) fail("backward_in_parallel: parts must be at least 1, got ", parts);
  std::vector<double> losses(static_cast<size_t>(parts), 0.0);
  std::vector<LeafGrads> grads(static_cast<size_t>(parts));
  std::vector<std::exception_ptr> errors(static_cast<size_t>(parts));
  // One part per item: every part is a whole forward and backward.
  parallel_for(parts, 1, [&](int64_t begin, int64_t end) {
    for (int64_t part = begin; part < end; ++part) {
      const auto i = static_cast<size_t>(part);
      // A single part shares nothing with another: it is not marked.
      struct InPart {
        bool previous = in_part;
        explicit InPart(bool shared) { in_part = shared; }
        ~InPart() { in_part = previous; }
      } mark(parts > 1);
      try {
        LeafGradSink sink(grads[i]);
        // The graph is built, used and freed on this thread.
        Variable loss = loss_of(part);
        if (!loss.defined() || loss.numel() != 1)
          fail("backward_in_parallel: part ", part, " did not return a single-element loss");
        losses[i] = loss.item();
        if (std::isfinite(losses[i]) && loss.requires_grad()) loss.backward();
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
  });
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  // Each part's tensor is released as soon as it is added; the first part's
  // becomes the leaf's .grad itself when the leaf had none.
  for (LeafGrads& part : grads)
    for (auto& [leaf, g] : part) accumulate_grad(leaf->grad, std::move(g));
  return losses;
}

}  // namespace gradflow
