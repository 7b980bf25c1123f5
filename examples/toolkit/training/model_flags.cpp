#include "examples/toolkit/training/model_flags.h"

#include <algorithm>
#include <cfloat>
#include <cmath>

#include "examples/toolkit/cli/args.h"
#include "examples/toolkit/training/memory_estimate.h"

namespace gradflow::training {

using cli::UsageError;

std::string flag_name(const nn::ModelField& field) {
  std::string name = std::string("--") + field.name;
  std::replace(name.begin(), name.end(), '_', '-');
  return name;
}

std::string field_text(const nn::ModelField& field, const nn::ModelConfig& config) {
  return nn::model_field_text(field, config);
}

void set_field(const nn::ModelField& field, nn::ModelConfig& config, const std::string& text) {
  if (field.choices) {
    const std::vector<std::string> names = field.choices();
    if (std::find(names.begin(), names.end(), text) == names.end())
      throw UsageError("expected one of " + cli::detail::join_choices(names) + ", got " +
                       cli::quote(text));
  }
  nn::ModelConfig out = config;
  std::visit(
      [&](auto member) {
        auto& value = out.*member;
        using T = std::decay_t<decltype(value)>;
        if constexpr (std::is_same_v<T, nn::ScaleMode>)
          value = parse_scale(text);
        else if constexpr (std::is_same_v<T, nn::NormPlacement>)
          value = nn::parse_norm_placement(text);
        else if constexpr (std::is_same_v<T, std::string>)
          value = text;
        else
          cli::detail::parse_value(field.name, text, &value);
      },
      field.member);
  if (field.check) {
    try {
      field.check(out);
    } catch (const Error& e) {
      throw UsageError(e.what());
    }
  }
  config = std::move(out);
}

void check_float32(double value) {
  if (!(std::abs(value) <= FLT_MAX))
    throw UsageError(cli::detail::format_value(value) +
                     " does not fit in float32, the dtype it is used in (|x| <= 3.4e38)");
  // 1e-320 or 4e-45 would become 0 or a subnormal there: a zero --lr (which
  // `--lr 0` is refused for), or a value flushed to zero in the kernels.
  if (value != 0 && std::abs(value) < FLT_MIN)
    throw UsageError(cli::detail::format_value(value) +
                     " is below float32's smallest normal number (1.2e-38), the dtype it is used "
                     "in, where it would be zero or subnormal");
}

nn::ScaleMode parse_scale(const std::string& text) {
  for (const nn::ScaleModeEntry& entry : nn::scale_modes()) {
    const std::string prefix = entry.name + std::string(":");
    if (!entry.takes_value || text.rfind(prefix, 0) != 0) continue;
    // The number of const:<v> is read as every flag's number is (args.h):
    // " 1" and "0x10" are refused here as they are for --lr.
    double value = 0;
    cli::detail::parse_value(entry.name, std::string_view(text).substr(prefix.size()), &value);
    if (!(value > 0)) throw UsageError(prefix + " must be > 0, got " + text.substr(prefix.size()));
    check_float32(value);
  }
  try {
    return nn::ScaleMode::parse(text);
  } catch (const Error& e) {
    throw UsageError(e.what());
  }
}

nn::ModelConfig config_from_metadata(const nn::Metadata& m) {
  try {
    // Each field read by the flags' parser (set_field), as on the command line.
    return nn::config_from_metadata(m, set_field);
  } catch (const Error& e) {
    std::string problem = e.what();
    const std::string nn_prefix = "bad model config in the file: ";
    if (problem.rfind(nn_prefix, 0) == 0) problem.erase(0, nn_prefix.size());
    throw UsageError("--resume: bad model config in the checkpoint: " + problem);
  }
}

void check_resumed_model(const std::string& checkpoint, ModelKind kind,
                         const nn::ModelConfig& config, int64_t classes) {
  const nn::ModelKind nn_kind = kind == ModelKind::kDecoder ? nn::ModelKind::kDecoder
                                : kind == ModelKind::kEncoderDecoder
                                    ? nn::ModelKind::kEncoderDecoder
                                    : nn::ModelKind::kClassifier;
  try {
    nn::check_model_file({.kind = nn_kind, .config = config, .classes = classes},
                         nn::load_safetensors_header(checkpoint), "model.");
  } catch (const Error& e) {
    throw UsageError("--resume " + cli::quote(checkpoint) + ": " + e.what());
  }
}

}  // namespace gradflow::training
