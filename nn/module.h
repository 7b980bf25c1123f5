// Module: the base of every layer and model. A module owns parameters and
// submodules registered by name, which gives every parameter a dotted name
// ("decoder.layers.0.self_attn.q_proj.weight") in registration order. Those
// names are the keys of state_dict() and of checkpoint files.
//
// Each layer has its own forward(...) with the arguments it needs; Module
// does not force one signature on all of them.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autograd/variable.h"

namespace gradflow::nn {

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

 protected:
  // The returned handle shares the parameter: the layer keeps it as a member.
  Variable register_parameter(std::string name, Tensor value);
  template <class M>
  std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> module) {
    children_.emplace_back(std::move(name), module);
    return module;
  }

 private:
  void collect(const std::string& prefix, std::vector<std::pair<std::string, Variable>>& out) const;
  void summarize(const std::string& name, int depth, std::string& out) const;

  std::vector<std::pair<std::string, Variable>> params_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
  bool training_ = true;
};

}  // namespace gradflow::nn
