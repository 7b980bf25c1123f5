#include "nn/io/checkpoint.h"

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
  for (auto& [name, gen] : generators) tensors.emplace_back("rng." + name, rng_tensor(*gen));
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
      char* end = nullptr;
      out.step = std::strtoll(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || out.step < 0)
        fail("checkpoint ", path, ": bad step '", v, "'");
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
  // Check the generators before changing anything they feed.
  std::vector<std::array<uint64_t, 4>> states;
  for (auto& [name, gen] : generators) {
    const Tensor* found = nullptr;
    for (auto& [n, t] : rngs)
      if (n == name) found = &t;
    if (!found || found->dtype() != DType::Int64 || found->shape() != Shape{4})
      fail("checkpoint ", path, ": no valid state for generator '", name, "'");
    std::array<uint64_t, 4> s;
    std::memcpy(s.data(), found->data<int64_t>(), sizeof s);
    states.push_back(s);
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
  model.load_state_dict(load_safetensors(path).tensors);
}

}  // namespace gradflow::nn
