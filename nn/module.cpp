#include "nn/module.h"

#include <map>
#include <sstream>

namespace gradflow::nn {

Variable Module::register_parameter(std::string name, Tensor value) {
  for (const auto& [existing, p] : params_)
    if (existing == name) fail("register_parameter: '", name, "' is already registered");
  Variable p(std::move(value), true);
  params_.emplace_back(std::move(name), p);
  return p;
}

void Module::collect(const std::string& prefix,
                     std::vector<std::pair<std::string, Variable>>& out) const {
  for (const auto& [name, p] : params_) out.emplace_back(prefix + name, p);
  for (const auto& [name, child] : children_) child->collect(prefix + name + ".", out);
}

void Module::check_child_name(const std::string& name) const {
  if (name.empty()) fail("register_module: a child needs a name");
  for (const auto& [existing, child] : children_)
    if (existing == name) fail("register_module: '", name, "' is already registered");
}

std::vector<std::pair<std::string, Variable>> Module::named_parameters() const {
  std::vector<std::pair<std::string, Variable>> out;
  collect("", out);
  return out;
}

std::vector<Variable> Module::parameters() const {
  std::vector<Variable> out;
  for (auto& [name, p] : named_parameters()) out.push_back(p);
  return out;
}

int64_t Module::num_parameters() const {
  int64_t n = 0;
  for (const Variable& p : parameters()) n += p.numel();
  return n;
}

void Module::zero_grad() {
  for (Variable& p : parameters()) p.zero_grad();
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

NamedTensors Module::state_dict() const {
  NamedTensors out;
  for (const auto& [name, p] : named_parameters()) out.emplace_back(name, p.data());
  return out;
}

void Module::load_state_dict(const NamedTensors& state) {
  std::map<std::string, const Tensor*> given;
  std::vector<std::string> unexpected, missing, wrong;
  for (const auto& [name, t] : state)
    if (!given.emplace(name, &t).second) unexpected.push_back(name + " (given twice)");
  auto params = named_parameters();
  std::map<std::string, bool> known;
  for (const auto& [name, p] : params) {
    known[name] = true;
    auto it = given.find(name);
    if (it == given.end()) {
      missing.push_back(name);
    } else if (it->second->shape() != p.shape()) {
      wrong.push_back(name + " (expected " + shape_str(p.shape()) + ", got " +
                      shape_str(it->second->shape()) + ")");
    }
  }
  for (const auto& [name, t] : given)
    if (!known.count(name)) unexpected.push_back(name);
  if (!missing.empty() || !unexpected.empty() || !wrong.empty()) {
    std::ostringstream msg;
    msg << "load_state_dict:";
    auto list = [&](const char* what, const std::vector<std::string>& names) {
      if (names.empty()) return;
      msg << " " << what << ":";
      for (size_t i = 0; i < names.size(); ++i) msg << (i ? ", " : " ") << names[i];
      msg << ";";
    };
    list("missing keys", missing);
    list("unexpected keys", unexpected);
    list("wrong shapes", wrong);
    std::string text = msg.str();
    text.pop_back();  // the last ';'
    throw Error(text);
  }
  for (auto& [name, p] : params) {
    Tensor target = p.data();
    target.copy_(*given[name]);
  }
}

void Module::summarize(const std::string& name, int depth, std::string& out) const {
  int64_t own = 0;
  for (const auto& [n, p] : params_) own += p.numel();
  std::ostringstream line;
  line << std::string(2 * depth, ' ') << (name.empty() ? "" : name + ": ") << describe();
  if (own) line << "  [" << own << " params]";
  out += line.str() + "\n";
  for (const auto& [child_name, child] : children_) child->summarize(child_name, depth + 1, out);
}

std::string Module::summary() const {
  std::string out;
  summarize("", 0, out);
  out += "total parameters: " + std::to_string(num_parameters()) + "\n";
  return out;
}

std::vector<std::pair<std::string, const Module*>> Module::named_modules() const {
  std::vector<std::pair<std::string, const Module*>> out{{"", this}};
  for (const auto& [name, child] : children_)
    for (const auto& [sub, m] : child->named_modules())
      out.emplace_back(sub.empty() ? name : name + "." + sub, m);
  return out;
}

std::unordered_map<const void*, std::string> graph_names(const Module& root,
                                                         const std::string& root_name) {
  std::unordered_map<const void*, std::string> names;
  for (const auto& [name, m] : root.named_modules())
    names[static_cast<const void*>(m)] = name.empty() ? root_name : name;
  for (const auto& [name, p] : root.named_parameters()) names[p.impl().get()] = name;
  return names;
}

}  // namespace gradflow::nn
