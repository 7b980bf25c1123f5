// What a resume and inspect_checkpoint read from a checkpoint file, on any bytes: the header
// (load_safetensors_header, which reads a regular file's header only), the metadata
// (read_checkpoint_metadata), load_checkpoint into a run built as fuzz_seeds saved it, and
// load_weights. Each loads or throws a one-line Error; a load that fails leaves the model, the
// optimizer and the generator as they were; the file's header is read alike from the file and
// from memory.
#include "nn/io/checkpoint.h"

#include <functional>
#include <optional>
#include <string>

#include "nn/io/safetensors.h"
#include "tests/fuzz/fuzz_input.h"
#include "tests/fuzz/tiny_checkpoint.h"

using namespace gradflow;
using namespace gradflow::nn;

namespace {

// The message of the Error `read` throws, or nullopt if it returns.
std::optional<std::string> error_of(const std::function<void()>& read) {
  try {
    read();
    return std::nullopt;
  } catch (const Error& e) {
    fuzz::check_one_line(e.what());
    return e.what();
  }
}

// Everything a load may change, as numbers.
std::vector<std::vector<double>> snapshot(fuzz::TinyRun& run) {
  std::vector<std::vector<double>> out;
  for (const auto& [name, t] : run.model.state_dict()) out.push_back(t.to_vector());
  for (const auto& [name, t] : run.optimizer.state()) out.push_back(t.to_vector());
  for (uint64_t word : run.data.state()) out.push_back({static_cast<double>(word)});
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const fuzz::ScratchDir scratch;
  const std::string_view bytes = fuzz::text_of(data, size);
  const std::string path = scratch.write("checkpoint.safetensors", bytes);

  const bool from_file = !error_of([&] { load_safetensors_header(path); });
  const bool from_memory = !error_of([&] { read_safetensors_header(bytes); });
  if (from_file != from_memory) fuzz::broken("the header reads differently from a file");
  error_of([&] { read_checkpoint_metadata(path); });

  fuzz::TinyRun run;
  const auto before = snapshot(run);
  CheckpointContents contents;
  const auto error = error_of(
      [&] { contents = load_checkpoint(path, run.model, run.optimizer, run.generators()); });
  if (!error && (contents.step < 0 || contents.step > kMaxCheckpointStep))
    fuzz::broken("load_checkpoint gave a step out of range");
  if (error && snapshot(run) != before)
    fuzz::broken("a failed load_checkpoint changed the run: " + *error);

  fuzz::TinyRun weights_only;
  const auto weights_before = snapshot(weights_only);
  const auto weights_error = error_of([&] { load_weights(path, weights_only.model); });
  if (weights_error && snapshot(weights_only) != weights_before)
    fuzz::broken("a failed load_weights changed the model: " + *weights_error);
  return 0;
}
