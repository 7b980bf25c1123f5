#include "autograd/reference.h"

#include <atomic>

namespace gradflow {

namespace {

// Relaxed: the switch orders nothing else. It is set before the work that
// reads it is handed out, and handing work to a thread (starting it, or the
// pool's hand-off) makes the store visible there; a change while ops run
// takes effect at each op's next call.
std::atomic<bool> reference_on{false};

}  // namespace

void set_reference_ops(bool on) { reference_on.store(on, std::memory_order_relaxed); }

bool reference_ops() { return reference_on.load(std::memory_order_relaxed); }

ReferenceOpsGuard::ReferenceOpsGuard(bool on) : previous_(reference_ops()) {
  set_reference_ops(on);
}

ReferenceOpsGuard::~ReferenceOpsGuard() { set_reference_ops(previous_); }

}  // namespace gradflow
