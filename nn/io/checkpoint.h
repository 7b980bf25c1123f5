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
//
// Both directions check the state, so a checkpoint on disk can always resume:
// every floating tensor (weights, moments) finite; "step" in [0, 2^53] (the
// schedules compute in double); the optimizer's update count in [0, step]
// (a skipped step is a step without an update); each generator state not all
// zero (xoshiro's one invalid state, which would draw zeros forever).
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

// The most steps a checkpoint may record: beyond 2^53 a double (the
// learning-rate schedules' arithmetic) no longer tells one step from the next.
inline constexpr int64_t kMaxCheckpointStep = int64_t{1} << 53;

// Thrown by save_checkpoint for a state that holds a NaN or an infinity, which
// no run could resume from; the file on disk is then left as it was.
class NonFiniteStateError : public Error {
 public:
  using Error::Error;
};

// Saves model weights, optimizer state and generator states. Throws
// NonFiniteStateError (naming the tensor) before writing anything if a
// weight or optimizer tensor is not finite, Error if `step` or a generator
// state is out of range.
void save_checkpoint(const std::string& path, const Module& model, const Optimizer& optimizer,
                     const std::vector<std::pair<std::string, Generator*>>& generators,
                     int64_t step, const Metadata& metadata = {});

// Loads into a model and optimizer built alike and into the named
// generators. Throws a one-line Error naming the problem (not a checkpoint,
// a missing or wrong-shaped tensor, a generator not in the file, a value out
// of range as above); the values are checked before anything is changed.
CheckpointContents load_checkpoint(
    const std::string& path, Module& model, Optimizer& optimizer,
    const std::vector<std::pair<std::string, Generator*>>& generators);

// Reads only the metadata (for example the model config, to build the model
// before loading into it).
Metadata read_checkpoint_metadata(const std::string& path);

// Weights only, for model.safetensors: parameter names as in state_dict().
// load_weights also takes F16 and BF16 tensors (a half-precision export from
// another framework), widened exactly to float32; load_state_dict then
// converts to the parameters' dtype as it does for F64.
void save_weights(const std::string& path, const Module& model, const Metadata& metadata = {});
void load_weights(const std::string& path, Module& model);

// Looks up a metadata entry; throws naming the key when it is absent.
const std::string& metadata_value(const Metadata& metadata, const std::string& key);

}  // namespace gradflow::nn
