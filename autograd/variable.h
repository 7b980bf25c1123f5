// Variable: a Tensor that remembers how it was made, for reverse-mode
// automatic differentiation.
//
// An op on Variables that require grad records a Node: the op's name, its
// inputs, and a closure that maps the output's gradient to the inputs'
// gradients. backward() walks those nodes in reverse topological order and
// accumulates (+=) into the .grad of the leaves (Variables made by the user
// with requires_grad). Intermediate Variables keep no gradient unless
// retain_grad() was called. Like Tensor, copying a Variable copies a handle.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "tensor/tensor.h"

namespace gradflow {

struct VariableImpl;

// Maps the gradient of an op's output to one gradient per input (an
// undefined Tensor for an input that needs none). Sees Tensors only: backward
// formulas are not themselves differentiated.
using BackwardFn = std::function<std::vector<Tensor>(const Tensor& grad_output)>;

// A hook sees the gradient arriving at a Variable; returning a defined Tensor
// replaces it, returning Tensor() keeps it.
using GradHook = std::function<Tensor(const Tensor& grad)>;

// A tensor a backward may read, by its storage and the storage's version()
// when the op ran. Weak: a storage no one keeps cannot have been saved, and
// the check must not keep a released activation alive.
struct SavedVersion {
  std::weak_ptr<Storage> storage;
  uint64_t version = 0;
};

struct Node {
  std::string name;  // the op, as errors and anomaly mode report it
  std::vector<std::shared_ptr<VariableImpl>> inputs;
  BackwardFn backward;  // released after use unless the graph is retained
  // Every tensor of the op: its inputs in order (those that need no gradient
  // too), then its output, then what make_result was told the formula keeps
  // besides (ids, targets, an index, a mask). Backward refuses to run this
  // node if one has been written in place since (an in-place edit of a value
  // the formula may read would give a wrong gradient, silently).
  std::vector<SavedVersion> saved;
  Node(std::string n, std::vector<std::shared_ptr<VariableImpl>> in, BackwardFn fn)
      : name(std::move(n)), inputs(std::move(in)), backward(std::move(fn)) {}
  ~Node();  // iterative, so a long chain of nodes cannot overflow the stack
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
};

struct VariableImpl : std::enable_shared_from_this<VariableImpl> {
  // An intermediate result's data is released when the last Variable handle
  // to it goes, even while the graph still holds this record (for its
  // gradient): backward formulas keep the tensors they need themselves, so
  // the graph holds no activation that no formula uses.
  Tensor data;
  Shape shape;  // data's shape, still known after the data is released
  Tensor grad;
  bool requires_grad = false;
  bool retain_grad = false;
  std::shared_ptr<Node> grad_fn;  // null for leaves
  std::vector<GradHook> hooks;
};

class Variable {
 public:
  Variable() = default;  // undefined
  explicit Variable(Tensor data, bool requires_grad = false);

  bool defined() const { return handle_ != nullptr; }
  const Tensor& data() const { return get()->data; }
  const Shape& shape() const { return get()->data.shape(); }
  DType dtype() const { return get()->data.dtype(); }
  int64_t ndim() const { return get()->data.ndim(); }
  int64_t size(int64_t axis) const { return get()->data.size(axis); }
  int64_t numel() const { return get()->data.numel(); }
  double item() const { return get()->data.item(); }

  // The accumulated gradient; undefined until a backward reaches it.
  const Tensor& grad() const { return get()->grad; }
  // REQUIRES: grad undefined, or of this Variable's shape and dtype (throws
  // Error otherwise, here rather than in a later step's add_).
  void set_grad(Tensor grad);
  void zero_grad() { get()->grad = Tensor(); }

  bool requires_grad() const { return get()->requires_grad; }
  Variable& set_requires_grad(bool on);  // REQUIRES: a leaf
  bool is_leaf() const { return get()->grad_fn == nullptr; }
  void retain_grad() { get()->retain_grad = true; }
  void register_hook(GradHook hook) { get()->hooks.push_back(std::move(hook)); }
  // Name of the op that made this Variable, "" for a leaf.
  std::string grad_fn_name() const { return get()->grad_fn ? get()->grad_fn->name : ""; }

  // Same data, cut from the graph: no gradient flows through it.
  Variable detach() const { return Variable(get()->data, false); }

  // Back-propagates from this Variable. With no argument it must be a single
  // element (the gradient is 1); otherwise grad_output has its shape. The
  // graph's saved tensors are freed afterwards unless retain_graph is set.
  void backward(const Tensor& grad_output = Tensor(), bool retain_graph = false) const;

  const std::shared_ptr<VariableImpl>& impl() const {
    if (!handle_) undefined_variable();
    return handle_->impl;
  }

 private:
  // What user code holds; the graph holds the VariableImpl directly. When
  // the last handle goes, a non-leaf's data is released (see VariableImpl).
  struct Handle {
    std::shared_ptr<VariableImpl> impl;
    explicit Handle(std::shared_ptr<VariableImpl> i) : impl(std::move(i)) {}
    ~Handle() {
      if (impl->grad_fn) impl->data = Tensor();
    }
    Handle(const Handle&) = delete;
    Handle& operator=(const Handle&) = delete;
  };
  VariableImpl* get() const {
    if (!handle_) undefined_variable();
    return handle_->impl.get();
  }
  [[noreturn]] static void undefined_variable();
  std::shared_ptr<Handle> handle_;
};

// Records an op's result. When gradient mode is on and some input requires
// grad, the result gets a Node named `name` that holds `backward`; otherwise
// it is a plain Variable and `backward` is dropped. `saved` lists the tensors
// other than inputs and output that `backward` keeps and reads (an index, ids,
// targets, a mask), so that an in-place edit of one is refused as well.
Variable make_result(Tensor data, const char* name, std::vector<Variable> inputs,
                     BackwardFn backward, const std::vector<Tensor>& saved = {});

// Every Variable reachable from root through the graph's nodes, each after
// the inputs it was made from (engine.cpp). backward walks it in reverse.
std::vector<VariableImpl*> forward_order(VariableImpl* root);

// Nodes recorded by make_result in this process so far, all threads: the
// ops of a training step that a backward will run, for measuring the cost
// per op (bench/train_bench --overhead).
uint64_t recorded_nodes();

// grad (+)= g, as backward adds into a leaf. The first gradient is copied so
// that .grad never aliases a tensor the user or the graph still holds, unless
// g is the only handle to its memory (pass it with std::move to allow that).
void accumulate_grad(Tensor& grad, Tensor g);

// Leaf gradients held aside: while a LeafGradSink lives, a backward on this
// thread adds the gradients of leaves into `sink` instead of their .grad
// (intermediates' retained gradients are unaffected). backward_in_parallel
// (autograd/data_parallel.h) uses it so that concurrent passes over shared
// parameters never write one .grad at once.
using LeafGrads = std::unordered_map<std::shared_ptr<VariableImpl>, Tensor>;
class LeafGradSink {
 public:
  explicit LeafGradSink(LeafGrads& sink);
  ~LeafGradSink();
  LeafGradSink(const LeafGradSink&) = delete;
  LeafGradSink& operator=(const LeafGradSink&) = delete;

 private:
  LeafGrads* previous_;
};

// Gradient mode, per thread. While a NoGradGuard lives, ops record nothing.
bool grad_enabled();
class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool previous_;
};

// Anomaly mode: when on, the first backward formula that yields a NaN or Inf
// throws an Error naming its op.
void set_detect_anomaly(bool on);
bool detect_anomaly();
class AnomalyGuard {
 public:
  AnomalyGuard() : previous_(detect_anomaly()) { set_detect_anomaly(true); }
  ~AnomalyGuard() { set_detect_anomaly(previous_); }
  AnomalyGuard(const AnomalyGuard&) = delete;
  AnomalyGuard& operator=(const AnomalyGuard&) = delete;

 private:
  bool previous_;
};

}  // namespace gradflow
