// Training checkpoints: everything a run needs to continue exactly where it
// stopped, in one safetensors file (readable by any safetensors reader):
//
//   model.<parameter name>   the weights, as in state_dict()
//   optim.<state key>        the optimizer's state() (moments, step, lr, ...)
//   rng.<name>               each generator's four state words (int64 bits)
//   __metadata__             "format": "gradflow-checkpoint-1", "step", and
//                            the caller's own entries (model config, task, ...)
//
// The data stream is drawn from a seeded Generator, so its saved state is the
// data position. Files are written atomically: a crash mid-save leaves the
// previous checkpoint intact.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "nn/module.h"
#include "nn/optim/optim.h"
#include "tensor/random.h"

namespace gradflow::nn {

using Metadata = std::vector<std::pair<std::string, std::string>>;

struct CheckpointContents {
  int64_t step = 0;
  Metadata metadata;  // the caller's entries, without the format keys
};

// Saves model weights, optimizer state and generator states.
void save_checkpoint(const std::string& path, const Module& model, const Optimizer& optimizer,
                     const std::vector<std::pair<std::string, Generator*>>& generators,
                     int64_t step, const Metadata& metadata = {});

// Loads into a model and optimizer built alike and into the named
// generators. Throws a one-line Error naming the problem (not a checkpoint,
// a missing or wrong-shaped tensor, a generator not in the file).
CheckpointContents load_checkpoint(
    const std::string& path, Module& model, Optimizer& optimizer,
    const std::vector<std::pair<std::string, Generator*>>& generators);

// Reads only the metadata (for example the model config, to build the model
// before loading into it).
Metadata read_checkpoint_metadata(const std::string& path);

// Weights only, for model.safetensors: parameter names as in state_dict().
void save_weights(const std::string& path, const Module& model, const Metadata& metadata = {});
void load_weights(const std::string& path, Module& model);

// Looks up a metadata entry; throws naming the key when it is absent.
const std::string& metadata_value(const Metadata& metadata, const std::string& key);

}  // namespace gradflow::nn
