// The backward pass: order the graph, then run each node's backward once,
// after every gradient flowing into its output has been summed.
#include <unordered_map>
#include <unordered_set>

#include "autograd/graph.h"
#include "autograd/variable.h"
#include "tensor/creation.h"
#include "tensor/elementwise.h"

namespace gradflow {

namespace {

thread_local LeafGrads* leaf_sink = nullptr;

}  // namespace

// Every Variable reachable from root through nodes, each after the inputs it
// was made from: a depth-first post-order, iterative so that a deep graph (a
// long training unroll) cannot overflow the stack. Backward walks it in
// reverse, so a node runs only after every use of its output has sent its
// gradient back (docs/lessons/02_topological_order.md).
#ifndef GRADFLOW_EXERCISES  // exercise 1: docs/exercises/01_walk_order.md
std::vector<VariableImpl*> forward_order(VariableImpl* root) {
  std::vector<VariableImpl*> post;
  std::unordered_set<VariableImpl*> seen{root};
  std::vector<std::pair<VariableImpl*, size_t>> stack{{root, 0}};
  while (!stack.empty()) {
    auto& [v, next] = stack.back();
    Node* node = v->grad_fn.get();
    if (node && next < node->inputs.size()) {
      VariableImpl* child = node->inputs[next++].get();
      if (child && seen.insert(child).second) stack.push_back({child, 0});
    } else {
      post.push_back(v);
      stack.pop_back();
    }
  }
  return post;
}
#endif

// A value used twice (x * x, a residual's x + f(x)) gets a gradient along
// each use, and dL/dx is their sum: the multivariate chain rule. so_far holds
// the paths that arrived before g; out of place, since either may be a tensor
// a backward returned to two inputs at once (add's does).
Tensor add_gradient(const Tensor& so_far, const Tensor& g);
#ifndef GRADFLOW_EXERCISES  // exercise 3: docs/exercises/03_gradient_accumulation.md
Tensor add_gradient(const Tensor& so_far, const Tensor& g) { return add(so_far, g); }
#endif

void accumulate_grad(Tensor& grad, Tensor g) {
  if (grad.defined()) {
    add_(grad, g);
  } else if (g.storage().use_count() == 1 && g.is_contiguous()) {
    grad = std::move(g);  // no other handle to its memory: nothing can alias it
  } else {
    grad = g.clone();
  }
}

LeafGradSink::LeafGradSink(LeafGrads& sink) : previous_(leaf_sink) { leaf_sink = &sink; }
LeafGradSink::~LeafGradSink() { leaf_sink = previous_; }

namespace {

// Refuses a node whose formula is gone or whose tensors were edited in place
// since its forward (Node::saved).
void check_runnable(const VariableImpl& v) {
  if (!v.grad_fn) return;
  const Node& node = *v.grad_fn;
  if (!node.backward)
    fail("backward: the graph through '", node.name,
         "' was freed by an earlier backward; pass retain_graph = true to that one");
  for (size_t i = 0; i < node.saved.size(); ++i) {
    std::shared_ptr<Storage> s = node.saved[i].storage.lock();
    if (!s || s->version() == node.saved[i].version) continue;
    const size_t n = node.inputs.size();
    const VariableImpl* input = i < n ? node.inputs[i].get() : nullptr;
    fail("backward of '", node.name, "': ",
         i < n ? "input " + std::to_string(i) +
                     (input ? " (shape " + shape_str(input->shape) + ")" : "")
         : i == n ? "its output (shape " + shape_str(v.shape) + ")"
                  : std::string("a tensor it keeps (an index, ids, targets or a mask)"),
         " was modified in place after the forward used it, so its gradient would come "
         "from the new values; edit a clone(), or run the forward again after the edit");
  }
}

}  // namespace

void Variable::backward(const Tensor& grad_output, bool retain_graph) const {
  if (!defined()) fail("backward: undefined variable");
  if (!requires_grad())
    fail("backward: this value does not require grad (no input it depends on has requires_grad)");
  Tensor seed;
  if (!grad_output.defined()) {
    if (numel() != 1)
      fail("backward: a gradient can be implied only for a single-element output, got shape ",
           shape_str(shape()), "; pass grad_output");
    seed = ones_like(data());
  } else {
    if (grad_output.shape() != shape() || grad_output.dtype() != dtype())
      fail("backward: grad_output of shape ", shape_str(grad_output.shape()), " and dtype ",
           dtype_name(grad_output.dtype()), " does not match the output's ", shape_str(shape()),
           " ", dtype_name(dtype()));
    seed = grad_output;
  }

  std::unordered_map<VariableImpl*, Tensor> pending{{get(), seed}};
  const std::vector<VariableImpl*> order = forward_order(get());
  // Before any .grad changes, in the order backward would run them, so the
  // node named is the first one backward would have reached.
  for (auto at = order.rbegin(); at != order.rend(); ++at) check_runnable(**at);
  for (auto at = order.rbegin(); at != order.rend(); ++at) {
    VariableImpl* v = *at;
    auto it = pending.find(v);
    if (it == pending.end()) continue;
    Tensor g = std::move(it->second);
    pending.erase(it);
    for (const GradHook& hook : v->hooks) {
      Tensor replaced = hook(g);
      if (!replaced.defined()) continue;
      if (replaced.shape() != g.shape() || replaced.dtype() != g.dtype())
        fail("backward: a hook returned ", dtype_name(replaced.dtype()), " ",
             shape_str(replaced.shape()), " for a gradient of ", dtype_name(g.dtype()), " ",
             shape_str(g.shape()));
      g = replaced;
    }
    if (!v->grad_fn) {  // a leaf: g is not used again
      accumulate_grad(leaf_sink ? (*leaf_sink)[v->shared_from_this()] : v->grad, std::move(g));
      continue;
    }
    if (v->retain_grad) accumulate_grad(v->grad, g);

    Node& node = *v->grad_fn;
    std::vector<Tensor> grads = node.backward(g);
    if (!retain_graph) node.backward = nullptr;
    if (grads.size() != node.inputs.size())
      fail("backward of '", node.name, "': returned ", grads.size(), " gradients for ",
           node.inputs.size(), " inputs");
    if (GraphCapture* capture = current_graph_capture()) capture->note_gradients(&node, g, grads);
    for (size_t i = 0; i < grads.size(); ++i) {
      VariableImpl* input = node.inputs[i].get();
      if (!input || !grads[i].defined()) continue;
      if (grads[i].shape() != input->shape)
        fail("backward of '", node.name, "': gradient of shape ", shape_str(grads[i].shape()),
             " for input ", i, " of shape ", shape_str(input->shape));
      if (detect_anomaly() && !all_finite(grads[i]))
        fail("anomaly: the backward of '", node.name,
             "' produced NaN or Inf in the gradient of input ", i, " (shape ",
             shape_str(input->shape), ")");
      auto [slot, fresh] = pending.try_emplace(input, grads[i]);
      if (!fresh) slot->second = add_gradient(slot->second, grads[i]);
    }
  }
}

}  // namespace gradflow
