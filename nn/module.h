// Module: the base of every layer and model. A module owns parameters and
// submodules registered by name, which gives every parameter a dotted name
// ("decoder.layers.0.self_attn.q_proj.weight") in registration order. Those
// names are the keys of state_dict() and of checkpoint files.
//
// Each layer has its own forward(...) with the arguments it needs; Module
// does not force one signature on all of them.
//
// Constructors, one convention for every layer (docs/architecture.md,
// "Conventions"):
//
//   Layer(sizes..., Options options = {}, Init init = {})
//
// - sizes: the few numbers that fix the parameters' shapes, positional and
//   never defaulted: Linear(in, out), LayerNorm(dim), Embedding(num, dim);
//   Dropout's p takes their place.
// - options: a struct of named fields, each default written once, in the
//   struct: Linear(64, 10, {.bias = false}). No bare booleans, no
//   positional tails of defaults.
// - init: where the initial values come from and their dtype (below),
//   always last. A layer with nothing to draw and no dtype leaves it out.
// Layers made of layers (attention, blocks, models) have more sizes than fit
// a call: their config struct holds sizes and options together, and a size
// kept positional (a width, a count) comes first:
//   EncoderLayer(block_config, init)    Decoder(layers, block_config, init)
//   MultiHeadAttention(d_model, attention_config, init)
//   DecoderLM(model_config, init)       EncoderClassifier(classes, model_config, init)
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "autograd/graph.h"
#include "autograd/variable.h"
#include "tensor/random.h"

namespace gradflow::nn {

// The generator a layer draws its initial values from (default_generator()
// when none is given; it must outlive a layer that keeps drawing, such as
// Dropout) and the dtype of its parameters (float64 for gradient checks).
// Converts from either, so Linear(4, 3, {}, gen) and
// LayerNorm(4, {}, DType::Float64) say just what they change.
struct Init {
  Init() = default;
  Init(Generator& generator, DType dtype = DType::Float32) : gen(&generator), dtype(dtype) {}
  Init(DType dtype) : dtype(dtype) {}
  Generator& generator() const { return gen ? *gen : default_generator(); }

  Generator* gen = nullptr;
  DType dtype = DType::Float32;
};

class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // "Linear(64 -> 256)": the module's kind and its shape, for summary().
  virtual std::string describe() const = 0;

  std::vector<std::pair<std::string, Variable>> named_parameters() const;
  std::vector<Variable> parameters() const;
  int64_t num_parameters() const;
  void zero_grad();

  // Training mode (dropout active) or evaluation mode; applies to submodules.
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }

  // Parameter values by dotted name (handles to the live data, not copies).
  NamedTensors state_dict() const;
  // Copies values in. Throws one Error listing every missing, unexpected and
  // wrong-shaped key (nothing is changed then).
  void load_state_dict(const NamedTensors& state);

  // One line per module: dotted name, description, parameter count.
  std::string summary() const;

  // Every module under this one (itself first, as ""), by dotted name, in
  // registration order.
  std::vector<std::pair<std::string, const Module*>> named_modules() const;

 protected:
  // Opens this module's scope for a drawing of the graph (autograd/graph.h):
  // the ops its forward records can then be folded into one box named after
  // it. The first line of a forward: `const GraphScope scope = graph_scope();`
  GraphScope graph_scope() const { return GraphScope(this); }

  // The returned handle shares the parameter: the layer keeps it as a member.
  Variable register_parameter(std::string name, Tensor value);
  // The child's parameters are named "<name>.<its name>". REQUIRES: a
  // non-empty name not registered before (else Error).
  template <class M>
  std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> module) {
    check_child_name(name);
    children_.emplace_back(std::move(name), module);
    return module;
  }

 private:
  void check_child_name(const std::string& name) const;
  void collect(const std::string& prefix, std::vector<std::pair<std::string, Variable>>& out) const;
  void summarize(const std::string& name, int depth, std::string& out) const;

  std::vector<std::pair<std::string, Variable>> params_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

// What a drawing of root's graph calls things (GraphOptions::names): each
// parameter by its dotted name, each module by its dotted name, and root
// itself `root_name`.
std::unordered_map<const void*, std::string> graph_names(const Module& root,
                                                         const std::string& root_name = "model");

}  // namespace gradflow::nn
