#include "nn/io/checkpoint.h"

#include <array>
#include <charconv>
#include <cmath>
#include <cstring>

#include "nn/io/safetensors.h"
#include "tensor/creation.h"

namespace gradflow::nn {

namespace {

constexpr const char* kFormat = "gradflow-checkpoint-1";

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
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
      if (v != kFormat) fail("checkpoint ", path, ": unknown format '", v, "'");
      is_checkpoint = true;
    } else if (k == "step") {
      // Exactly as save_checkpoint writes it (std::to_string): digits only.
      // strtoll took " 3" and "+3" too, which no checkpoint of ours holds.
      const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out.step);
      const bool digits = !v.empty() && v.find_first_not_of("0123456789") == std::string::npos;
      if (!digits || ec != std::errc() || end != v.data() + v.size() || out.step < 0 ||
          out.step > kMaxCheckpointStep)
        fail("checkpoint ", path, ": bad step '", v, "' (expected an integer in [0, 2^53])");
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
  model.load_state_dict(weights);
  optimizer.load_state(optim);
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
  model.load_state_dict(
      load_safetensors(path, kMaxSafetensorsFileBytes, HalfPrecision::kToFloat32).tensors);
}

}  // namespace gradflow::nn
