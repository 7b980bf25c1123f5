// The reference path: one switch that sends a whole model through the
// composed references of its fused ops.
//
// Each fused op keeps beside it, in the same file, a reference written to be
// read: the same formula built from the differentiable primitives (matmul,
// add, mean, softmax, gather, ...), which therefore needs no backward of its
// own. The references are
//
//   linear_reference           autograd/linear.cpp     matmul, then add
//   gelu_linear_reference      autograd/linear.cpp     gelu, then linear's
//   layer_norm_reference       autograd/norm.cpp       mean, sub, mul, pow, add
//   fused_attention_reference  autograd/attention.cpp  matmul, scale, masked_fill
//                                                      (-inf), softmax, matmul
//   cross_entropy_reference    nn/loss.cpp             log_softmax, gather, mean
//   Adam::update_reference     nn/optim/optim.cpp      the update from tensor ops
//
// With the switch on, each fused op's public function calls its reference, so
// a model runs unchanged on either path (tests/nn/reference_test.cpp trains
// models both ways and compares losses and gradients). The programs turn it
// on with --reference. Off, the default, a fused op pays one relaxed atomic
// load per call.
#pragma once

namespace gradflow {

// Process-wide, not per thread: the scaling study and backward_in_parallel
// run models on threads of their own, and they must all take the same path.
void set_reference_ops(bool on);
bool reference_ops();

// Sets the switch for a scope and puts the previous value back on exit.
class ReferenceOpsGuard {
 public:
  explicit ReferenceOpsGuard(bool on = true);
  ~ReferenceOpsGuard();
  ReferenceOpsGuard(const ReferenceOpsGuard&) = delete;
  ReferenceOpsGuard& operator=(const ReferenceOpsGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace gradflow
