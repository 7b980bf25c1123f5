// Variable construction, gradient mode and anomaly mode. The traversal that
// runs backward is in engine.cpp.
#include "autograd/variable.h"

#include <atomic>

#include "autograd/graph.h"

namespace gradflow {

namespace {
thread_local bool grad_mode = true;
bool anomaly_mode = false;
std::atomic<uint64_t> nodes_recorded{0};
}  // namespace

Node::~Node() {
  // Destroying a chain recursively (node -> input -> its node -> ...) takes
  // one stack frame per op; a 100k-op unroll would overflow. Instead, detach
  // the inputs that only this node holds and release them from a worklist.
  std::vector<std::shared_ptr<VariableImpl>> pending = std::move(inputs);
  while (!pending.empty()) {
    std::shared_ptr<VariableImpl> v = std::move(pending.back());
    pending.pop_back();
    if (v && v.use_count() == 1 && v->grad_fn && v->grad_fn.use_count() == 1) {
      std::shared_ptr<Node> node = std::move(v->grad_fn);
      for (auto& in : node->inputs) pending.push_back(std::move(in));
    }
  }
}

Variable::Variable(Tensor data, bool requires_grad) {
  if (!data.defined()) fail("Variable: undefined tensor");
  if (requires_grad && data.dtype() == DType::Int64)
    fail("Variable: only floating tensors can require grad, got int64");
  auto impl = std::make_shared<VariableImpl>();
  impl->shape = data.shape();
  impl->data = std::move(data);
  impl->requires_grad = requires_grad;
  handle_ = std::make_shared<Handle>(std::move(impl));
}

Variable& Variable::set_requires_grad(bool on) {
  if (!is_leaf()) fail("set_requires_grad: only leaves can change it; use detach() to cut a graph");
  if (on && dtype() == DType::Int64)
    fail("set_requires_grad: only floating tensors can require grad, got int64");
  get()->requires_grad = on;
  return *this;
}

void Variable::undefined_variable() {
  fail("an undefined Variable (made by Variable()) was used; give it a tensor first");
}

void Variable::set_grad(Tensor grad) {
  const Tensor& d = get()->data;
  if (grad.defined() && (grad.shape() != d.shape() || grad.dtype() != d.dtype()))
    fail("set_grad: a gradient of ", dtype_name(grad.dtype()), " ", shape_str(grad.shape()),
         " for a Variable of ", dtype_name(d.dtype()), " ", shape_str(d.shape()));
  get()->grad = std::move(grad);
}

Variable make_result(Tensor data, const char* name, std::vector<Variable> inputs,
                     BackwardFn backward, const std::vector<Tensor>& saved) {
  Variable out(std::move(data));
  if (!grad_mode) return out;
  bool any = false;
  std::vector<std::shared_ptr<VariableImpl>> in;
  in.reserve(inputs.size());
  for (const Variable& v : inputs) {
    bool needs = v.defined() && v.requires_grad();
    any = any || needs;
    in.push_back(needs ? v.impl() : nullptr);
  }
  if (!any) return out;
  out.impl()->requires_grad = true;
  auto node = std::make_shared<Node>(name, std::move(in), std::move(backward));
  node->saved.reserve(inputs.size() + 1 + saved.size());
  auto keep = [&](const Tensor& t) {
    node->saved.push_back(t.defined() ? SavedVersion{t.storage(), t.storage()->version()}
                                      : SavedVersion{});
  };
  for (const Variable& v : inputs) keep(v.defined() ? v.data() : Tensor());
  keep(out.data());
  for (const Tensor& t : saved) keep(t);
  out.impl()->grad_fn = std::move(node);
  if (GraphCapture* capture = current_graph_capture())
    capture->note_node(out.impl()->grad_fn.get());
  nodes_recorded.fetch_add(1, std::memory_order_relaxed);
  return out;
}

uint64_t recorded_nodes() { return nodes_recorded.load(std::memory_order_relaxed); }

bool grad_enabled() { return grad_mode; }
NoGradGuard::NoGradGuard() : previous_(grad_mode) { grad_mode = false; }
NoGradGuard::~NoGradGuard() { grad_mode = previous_; }

void set_detect_anomaly(bool on) { anomaly_mode = on; }
bool detect_anomaly() { return anomaly_mode; }

}  // namespace gradflow
