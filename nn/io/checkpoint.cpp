#include "nn/io/checkpoint.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <map>
#include <string_view>

#include "nn/io/safetensors.h"
#include "tensor/creation.h"

namespace gradflow::nn {

namespace {

constexpr const char* kFormat = "gradflow-checkpoint-1";

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

bool is_control(char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }

// Text from the file, for a one-line message: each control byte as \xNN.
std::string shown(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (!is_control(c)) {
      out += c;
      continue;
    }
    constexpr char kHex[] = "0123456789abcdef";
    const auto u = static_cast<unsigned char>(c);
    out += {'\\', 'x', kHex[u >> 4], kHex[u & 15]};
  }
  return out;
}

// A tensor name gradflow never writes (nor could a model or optimizer use): refused here, by
// name, so that no message of the loads after it quotes a control byte from the file.
void check_name(const std::string& what, const std::string& name) {
  if (std::any_of(name.begin(), name.end(), is_control))
    fail(what, ": unexpected tensor '", shown(name), "'");
}

Tensor rng_tensor(const Generator& gen) {
  std::array<uint64_t, 4> state = gen.state();
  Tensor t = Tensor::empty({4}, DType::Int64);
  std::memcpy(t.data<int64_t>(), state.data(), sizeof state);  // the bits, unchanged
  return t;
}

// The name of the first floating tensor holding a NaN or an infinity, or "".
std::string first_non_finite(const NamedTensors& tensors) {
  for (const auto& [name, tensor] : tensors) {
    if (tensor.dtype() == DType::Int64) continue;
    const Tensor t = tensor.contiguous();
    const bool finite = visit_float(t.dtype(), "checkpoint", [&](auto zero) {
      using T = decltype(zero);
      const T* p = t.data<T>();
      for (int64_t i = 0, n = t.numel(); i < n; ++i)
        if (!std::isfinite(p[i])) return false;
      return true;
    });
    if (!finite) return name;
  }
  return "";
}

std::array<uint64_t, 4> rng_state(const Tensor& t) {
  std::array<uint64_t, 4> s;
  std::memcpy(s.data(), t.data<int64_t>(), sizeof s);
  return s;
}

bool is_zero(const std::array<uint64_t, 4>& s) { return (s[0] | s[1] | s[2] | s[3]) == 0; }

// The optimizer's update count and per-parameter counts against the step.
void check_update_counts(const std::string& path, const NamedTensors& optim, int64_t step) {
  for (const auto& [name, t] : optim) {
    if ((name != "step" && name != "param_steps") || t.dtype() != DType::Int64) continue;
    const Tensor c = t.contiguous();
    for (int64_t i = 0; i < c.numel(); ++i) {
      const int64_t v = c.data<int64_t>()[i];
      if (v < 0 || v > step)
        fail("checkpoint ", path, ": optim.", name, " is ", v, ", outside [0, step = ", step,
             "] (the optimizer cannot have made more updates than there were steps)");
    }
  }
}

// Whether load_state_dict takes `weights`: each parameter once, in its shape, and nothing else.
// These are the checks it makes before it changes anything, made here first so that the model is
// not loaded before the optimizer's state is known to load too.
bool fits(const Module& model, const NamedTensors& weights) {
  const auto params = model.named_parameters();
  if (params.size() != weights.size()) return false;
  std::map<std::string_view, const Tensor*> given;
  for (const auto& [name, t] : weights)
    if (!given.emplace(name, &t).second) return false;
  for (const auto& [name, p] : params) {
    const auto it = given.find(name);
    if (it == given.end() || it->second->shape() != p.shape()) return false;
  }
  return true;
}

}  // namespace

const std::string& metadata_value(const Metadata& metadata, const std::string& key) {
  for (const auto& [k, v] : metadata)
    if (k == key) return v;
  fail("checkpoint: no metadata entry '", key, "'");
}

void save_checkpoint(const std::string& path, const Module& model, const Optimizer& optimizer,
                     const std::vector<std::pair<std::string, Generator*>>& generators,
                     int64_t step, const Metadata& metadata) {
  NamedTensors tensors;
  for (auto& [name, t] : model.state_dict()) tensors.emplace_back("model." + name, t);
  for (auto& [name, t] : optimizer.state()) tensors.emplace_back("optim." + name, t);
  if (const std::string bad = first_non_finite(tensors); !bad.empty())
    throw NonFiniteStateError("checkpoint " + path + ": not saved: '" + bad +
                              "' holds a non-finite value (NaN or infinity)");
  if (step < 0 || step > kMaxCheckpointStep)
    fail("checkpoint ", path, ": step ", step, " is outside [0, 2^53]");
  for (auto& [name, gen] : generators) {
    if (is_zero(gen->state())) fail("checkpoint ", path, ": generator '", name, "' is all zero");
    tensors.emplace_back("rng." + name, rng_tensor(*gen));
  }
  Metadata meta = {{"format", kFormat}, {"step", std::to_string(step)}};
  meta.insert(meta.end(), metadata.begin(), metadata.end());
  save_safetensors(path, tensors, meta);
}

CheckpointContents load_checkpoint(
    const std::string& path, Module& model, Optimizer& optimizer,
    const std::vector<std::pair<std::string, Generator*>>& generators) {
  SafetensorsFile file = load_safetensors(path);
  CheckpointContents out;
  bool is_checkpoint = false;
  for (const auto& [k, v] : file.metadata) {
    if (k == "format") {
      if (v != kFormat) fail("checkpoint ", path, ": unknown format '", shown(v), "'");
      is_checkpoint = true;
    } else if (k == "step") {
      // Exactly as save_checkpoint writes it (std::to_string): digits only.
      // strtoll took " 3" and "+3" too, which no checkpoint of ours holds.
      const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out.step);
      const bool digits = !v.empty() && v.find_first_not_of("0123456789") == std::string::npos;
      if (!digits || ec != std::errc() || end != v.data() + v.size() || out.step < 0 ||
          out.step > kMaxCheckpointStep)
        fail("checkpoint ", path, ": bad step '", shown(v), "' (expected an integer in [0, 2^53])");
    } else {
      out.metadata.emplace_back(k, v);
    }
  }
  if (!is_checkpoint)
    fail("checkpoint ", path,
         ": not a training checkpoint (no gradflow format entry; a weights-only "
         "model.safetensors cannot resume a run)");
  NamedTensors weights, optim;
  std::vector<std::pair<std::string, Tensor>> rngs;
  for (auto& [name, t] : file.tensors) {
    check_name("checkpoint " + path, name);
    if (starts_with(name, "model."))
      weights.emplace_back(name.substr(6), t);
    else if (starts_with(name, "optim."))
      optim.emplace_back(name.substr(6), t);
    else if (starts_with(name, "rng."))
      rngs.emplace_back(name.substr(4), t);
    else
      fail("checkpoint ", path, ": unexpected tensor '", name, "'");
  }
  // Check the values and the generators before changing anything.
  if (std::string bad = first_non_finite(weights); !bad.empty())
    fail("checkpoint ", path, ": weight '", bad, "' holds a non-finite value (NaN or infinity)");
  if (std::string bad = first_non_finite(optim); !bad.empty())
    fail("checkpoint ", path, ": optimizer state '", bad,
         "' holds a non-finite value (NaN or infinity)");
  check_update_counts(path, optim, out.step);
  std::vector<std::array<uint64_t, 4>> states;
  for (auto& [name, gen] : generators) {
    const Tensor* found = nullptr;
    for (auto& [n, t] : rngs)
      if (n == name) found = &t;
    if (!found || found->dtype() != DType::Int64 || found->shape() != Shape{4})
      fail("checkpoint ", path, ": no valid state for generator '", name, "'");
    states.push_back(rng_state(*found));
    if (is_zero(states.back()))
      fail("checkpoint ", path, ": the state of generator '", name,
           "' is all zero, which xoshiro256** never reaches (a damaged file)");
  }
  // Each load checks everything before it changes anything; the model's checks come first, so
  // that a state the optimizer refuses leaves the model as it was too.
  if (!fits(model, weights)) model.load_state_dict(weights);  // throws, naming what differs
  optimizer.load_state(optim);
  model.load_state_dict(weights);
  for (size_t i = 0; i < generators.size(); ++i) generators[i].second->set_state(states[i]);
  return out;
}

Metadata read_checkpoint_metadata(const std::string& path) {
  return load_safetensors(path).metadata;
}

void save_weights(const std::string& path, const Module& model, const Metadata& metadata) {
  save_safetensors(path, model.state_dict(), metadata);
}

void load_weights(const std::string& path, Module& model) {
  const NamedTensors tensors =
      load_safetensors(path, kMaxSafetensorsFileBytes, HalfPrecision::kToFloat32).tensors;
  for (const auto& [name, t] : tensors) check_name("weights " + path, name);
  model.load_state_dict(tensors);
}

}  // namespace gradflow::nn
