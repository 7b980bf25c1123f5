// nn::ModelConfig as text: on the command line and in a checkpoint's
// metadata, both read from the one table of its fields (nn/model_config.h).
// The field d_model is the flag --d-model and the metadata key
// config.d_model, with the same text ("64") in both; a field set from the
// data (vocab, max_len) has no flag.
#pragma once

#include <string>

#include "nn/io/model_file.h"
#include "nn/model_config.h"

namespace gradflow::training {

std::string flag_name(const nn::ModelField& field);  // "--d-model"

// The field's value as text: numbers as the flags' parser writes them (so
// they read back exactly), a scale by its name, a placement as pre|post.
std::string field_text(const nn::ModelField& field, const nn::ModelConfig& config);
// Reads text as the field's value into config and runs the field's check.
// Throws cli::UsageError with just the problem ("must be positive, got 0").
void set_field(const nn::ModelField& field, nn::ModelConfig& config, const std::string& text);

// Throws UsageError unless value is 0 or a normal float32 number, the dtype a
// learning rate, weight decay or scale is used in: 1e300 would become
// infinity there, 1e-50 zero and 4e-45 a subnormal.
void check_float32(double value);

// nn::ScaleMode::parse, with const:<v>'s number read by the flags' parser
// (args.h) and checked with check_float32. Throws UsageError.
nn::ScaleMode parse_scale(const std::string& text);

// nn::config_metadata and nn::config_from_metadata (nn/io/model_file.h), each
// field read as its flag is; a problem is a UsageError of --resume.
using nn::config_metadata;  // the one function, whichever way it is named
nn::ModelConfig config_from_metadata(const nn::Metadata& metadata);  // throws UsageError

enum class ModelKind;  // memory_estimate.h
// Before a resumed run builds its model from the checkpoint's config: the
// config's size against memory and the checkpoint's tensors against the
// config (nn::check_model_file), so an edited config.layers is refused at
// once. Throws a UsageError of --resume naming the tensor.
void check_resumed_model(const std::string& checkpoint, ModelKind kind,
                         const nn::ModelConfig& config, int64_t classes);

}  // namespace gradflow::training
