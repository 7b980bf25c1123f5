#include "nn/io/model_file.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <type_traits>

#include "nn/ffn_kinds.h"
#include "nn/norm_kinds.h"
#include "nn/positional_schemes.h"
#include "tensor/elementwise.h"

namespace gradflow::nn {

namespace {

constexpr const char* kKindKey = "model_kind";
constexpr const char* kClassesKey = "classes";
constexpr const char* kBadConfig = "bad model config in the file: ";

const char* kind_name(ModelKind kind) {
  switch (kind) {
    case ModelKind::kDecoder:
      return "decoder";
    case ModelKind::kEncoderDecoder:
      return "encoder_decoder";
    case ModelKind::kClassifier:
      return "classifier";
  }
  return "";
}

const std::string* find_value(const Metadata& metadata, const std::string& key) {
  for (const auto& [k, v] : metadata)
    if (k == key) return &v;
  return nullptr;
}

// The whole text as a number, as written by model_field_text: no sign but
// '-', no space, finite.
template <class T>
T parse_number(const std::string& text) {
  T value{};
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc{} || ptr != end || text.empty()) fail("expected a number, got '", text, "'");
  if constexpr (std::is_floating_point_v<T>)
    if (!std::isfinite(value)) fail("expected a finite number, got '", text, "'");
  return value;
}

std::unique_ptr<Module> build(const ModelSpec& spec, Init init = {}) {
  switch (spec.kind) {
    case ModelKind::kDecoder:
      return std::make_unique<DecoderLM>(spec.config, init);
    case ModelKind::kEncoderDecoder:
      return std::make_unique<EncoderDecoder>(spec.config, init);
    case ModelKind::kClassifier:
      return std::make_unique<EncoderClassifier>(spec.classes, spec.config, init);
  }
  fail("load_model: unknown model kind");
}

// A name of layer i of a stack, "decoder.layers.3.ff.w1.weight", as layer 0's
// ("decoder.layers.0.ff.w1.weight"), if i < layers; else the name unchanged.
std::string as_layer_zero(const std::string& name, int64_t layers) {
  const std::string mark = ".layers.";
  const size_t at = name.find(mark);
  if (at == std::string::npos) return name;
  const size_t begin = at + mark.size(), dot = name.find('.', begin);
  if (dot == std::string::npos) return name;
  int64_t i = -1;
  auto [ptr, ec] = std::from_chars(name.data() + begin, name.data() + dot, i);
  if (ec != std::errc{} || ptr != name.data() + dot || i >= layers || i < 0) return name;
  return name.substr(0, begin) + "0" + name.substr(dot);
}

// A training program's file keeps each model flag as "flag.--heads" beside
// config.heads (examples/toolkit/training/run_flags.h); the two must agree.
void check_flags(const Metadata& metadata, const ModelConfig& config) {
  for (const ModelField& field : model_fields()) {
    if (field.from_data) continue;  // no flag sets it (seq2seq's --max-len is its task's)
    std::string flag = std::string("flag.--") + field.name;
    std::replace(flag.begin(), flag.end(), '_', '-');
    const std::string* given = find_value(metadata, flag);
    if (given && *given != model_field_text(field, config))
      fail(kBadConfig, "config.", field.name, " ", model_field_text(field, config),
           " differs from ", flag, " ", *given,
           " (an edited file?); refusing to guess which model it is");
  }
}

}  // namespace

std::string model_field_text(const ModelField& field, const ModelConfig& config) {
  return std::visit(
      [&config](auto member) -> std::string {
        const auto& value = config.*member;
        using T = std::decay_t<decltype(value)>;
        if constexpr (std::is_same_v<T, ScaleMode>) {
          return value.name();
        } else if constexpr (std::is_same_v<T, NormPlacement>) {
          return norm_placement_name(value);
        } else if constexpr (std::is_same_v<T, std::string>) {
          return value;
        } else {
          char buf[64];  // the shortest text that reads back exactly
          auto [ptr, ec] = std::to_chars(buf, buf + sizeof buf, value);
          return std::string(buf, ec == std::errc{} ? ptr : buf);
        }
      },
      field.member);
}

void set_model_field(const ModelField& field, ModelConfig& config, const std::string& text) {
  if (field.choices) {
    const std::vector<std::string> names = field.choices();
    if (std::find(names.begin(), names.end(), text) == names.end())
      fail("expected one of its choices, got '", text, "'");
  }
  ModelConfig out = config;
  std::visit(
      [&](auto member) {
        auto& value = out.*member;
        using T = std::decay_t<decltype(value)>;
        if constexpr (std::is_same_v<T, ScaleMode>)
          value = ScaleMode::parse(text);
        else if constexpr (std::is_same_v<T, NormPlacement>)
          value = parse_norm_placement(text);
        else if constexpr (std::is_same_v<T, std::string>)
          value = text;
        else
          value = parse_number<T>(text);
      },
      field.member);
  if (field.check) field.check(out);
  config = std::move(out);
}

Metadata config_metadata(const ModelConfig& config) {
  Metadata m;
  for (const ModelField& field : model_fields())
    m.emplace_back(std::string("config.") + field.name, model_field_text(field, config));
  return m;
}

ModelConfig config_from_metadata(const Metadata& metadata, FieldReader read) {
  ModelConfig c;
  for (const ModelField& field : model_fields()) {
    const std::string key = std::string("config.") + field.name;
    const std::string* value = find_value(metadata, key);
    // A field the file predates: the value it had then, if the table says.
    if (!value && field.absent == kRefuseIfAbsent) fail(kBadConfig, "no ", key);
    const std::string text = value ? *value : field.absent;
    try {
      read(field, c, text);
    } catch (const std::exception& e) {
      fail(kBadConfig, key, " \"", text, "\": ", e.what());
    }
  }
  try {
    c.validate();
  } catch (const std::exception& e) {
    fail(kBadConfig, e.what());
  }
  return c;
}

Metadata model_metadata(const ModelSpec& spec) {
  Metadata m = config_metadata(spec.config);
  m.emplace_back(kKindKey, kind_name(spec.kind));
  if (spec.kind == ModelKind::kClassifier)
    m.emplace_back(kClassesKey, std::to_string(spec.classes));
  return m;
}

ModelSpec model_spec(const SafetensorsHeader& header) {
  const Metadata& m = header.metadata;
  ModelSpec spec;
  const std::string* kind = find_value(m, kKindKey);
  const std::string* program = find_value(m, "program");
  const std::string name = kind ? *kind : program ? *program : "";
  if (name == "decoder" || (!kind && (name == "charlm" || name == "recall")))
    spec.kind = ModelKind::kDecoder;
  else if (name == "encoder_decoder" || (!kind && name == "seq2seq"))
    spec.kind = ModelKind::kEncoderDecoder;
  else if (name == "classifier" || (!kind && name == "classify"))
    spec.kind = ModelKind::kClassifier;
  else if (kind)
    fail("unknown model_kind '", *kind, "' (decoder, encoder_decoder or classifier)");
  else
    fail("no model_kind in the metadata (not saved by save_model or a training program)");
  spec.config = config_from_metadata(m);
  if (spec.kind != ModelKind::kClassifier) return spec;
  if (const std::string* classes = find_value(m, kClassesKey)) {
    spec.classes = parse_number<int64_t>(*classes);
    if (spec.classes < 0) fail("classes must be >= 0, got ", spec.classes);
    return spec;
  }
  // classify's files predate the key: its head says.
  for (const SafetensorsEntry& e : header.tensors)
    if ((e.name == "head.weight" || e.name == "model.head.weight") && e.shape.size() == 2)
      spec.classes = e.shape[0];
  return spec;
}

double count_parameters(const ModelSpec& spec) {
  const ModelConfig& c = spec.config;
  const double v = double(c.vocab), d = double(c.d_model), f = double(c.d_ff);
  const double a = double(c.heads) * double(c.d_k()), layers = double(c.layers);
  // nn/attention.cpp: q, k, v (C -> A with bias), o (A -> C with bias), and
  // the scale mode's own.
  const double attention = 4 * d * a + 3 * a + d + double(c.scale.parameters(c.heads, c.d_k()));
  const double norm = norm_kind(c.norm_type).parameters(d);
  const double block = attention + ffn_kind(c.ffn).parameters(d, f) + 2 * norm;
  const auto table = positional_scheme(c.positional).parameters;
  double p = v * d + (table ? table(double(c.max_len), d) : 0) + norm;
  const double out =
      spec.kind == ModelKind::kClassifier && spec.classes > 0 ? double(spec.classes) : v;
  p += layers * block + d * out + out;
  if (spec.kind == ModelKind::kEncoderDecoder) p += layers * (block + attention + norm);
  return p;
}

void check_model_file(const ModelSpec& spec, const SafetensorsHeader& header,
                      const std::string& prefix) {
  const double bytes = 4 * count_parameters(spec);
  const double memory = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE));
  if (memory > 0 && bytes > memory)
    fail("the config's model has ", count_parameters(spec), " parameters, ", bytes / (1 << 30),
         " GiB of weights, more than this machine's ", memory / (1 << 30),
         " GiB of memory (config.layers ", spec.config.layers, ", config.d_model ",
         spec.config.d_model, ")");
  // Names and shapes from a model of one layer: layer i's are layer 0's.
  ModelSpec one = spec;
  one.config.layers = 1;
  std::map<std::string, Shape> layer_zero;
  Generator scratch(0);  // a check draws nothing from the caller's default_generator()
  for (const auto& [name, t] : build(one, scratch)->state_dict()) layer_zero[name] = t.shape();
  std::map<std::string, const SafetensorsEntry*> file;
  for (const SafetensorsEntry& e : header.tensors)
    if (e.name.rfind(prefix, 0) == 0) file[e.name.substr(prefix.size())] = &e;
  for (const auto& [name, entry] : file) {
    auto it = layer_zero.find(as_layer_zero(name, spec.config.layers));
    if (it == layer_zero.end())
      fail("tensor '", name, "' is not in the model the config implies (config.layers ",
           spec.config.layers, ")");
    if (entry->shape != it->second)
      fail("tensor '", name, "' is ", shape_str(entry->shape), " in the file, the config implies ",
           shape_str(it->second));
  }
  // Every tensor of the file is one the config implies, under its own name;
  // is every one there? Counted per layer, so a million layers cost nothing.
  const std::string mark = ".layers.0.";
  std::vector<std::string> shared, per_layer;
  for (const auto& kv : layer_zero)
    (kv.first.find(mark) == std::string::npos ? shared : per_layer).push_back(kv.first);
  std::map<int64_t, size_t> in_layer;
  for (const auto& kv : file) {
    const size_t at = as_layer_zero(kv.first, spec.config.layers).find(mark);
    if (at == std::string::npos) continue;  // not a layer's
    const size_t begin = at + 8, end = kv.first.find('.', begin);
    ++in_layer[std::stoll(kv.first.substr(begin, end - begin))];
  }
  auto missing = [&](const std::string& name) {
    if (!file.count(name))
      fail("no tensor '", name, "' in the file, which the config implies (config.layers ",
           spec.config.layers, ")");
  };
  for (const std::string& name : shared) missing(name);
  int64_t layer = 0;
  for (const auto& [i, count] : in_layer) {
    if (i != layer || count != per_layer.size()) break;
    ++layer;
  }
  if (layer < spec.config.layers && !per_layer.empty())
    for (const std::string& name : per_layer) {
      const size_t at = name.find(mark) + 8;
      missing(name.substr(0, at) + std::to_string(layer) + name.substr(at + 1));
    }
}

void save_model(const std::string& path, const Module& model, const ModelSpec& spec,
                const Metadata& extra) {
  Metadata m = model_metadata(spec);
  m.insert(m.end(), extra.begin(), extra.end());
  save_weights(path, model, m);
}

void save_model(const std::string& path, const DecoderLM& model, const Metadata& extra) {
  save_model(path, model, {.kind = ModelKind::kDecoder, .config = model.config()}, extra);
}

void save_model(const std::string& path, const EncoderDecoder& model, const Metadata& extra) {
  save_model(path, model, {.kind = ModelKind::kEncoderDecoder, .config = model.config()}, extra);
}

LoadedModel load_model(const std::string& path, Init init) {
  LoadedModel out;
  try {
    // Not opened unless a file: a FIFO with no writer would block the open.
    std::error_code ec;
    const auto type = std::filesystem::status(path, ec).type();
    if (!ec && type != std::filesystem::file_type::regular)
      fail("not a regular file (a folder, a FIFO or a device)");
    const SafetensorsHeader header = load_safetensors_header(path);
    const std::string* format = find_value(header.metadata, "format");
    const bool checkpoint = format && format->rfind("gradflow-checkpoint", 0) == 0;
    out.spec = model_spec(header);
    check_model_file(out.spec, header, checkpoint ? "model." : "");
    out.metadata = header.metadata;
    check_flags(header.metadata, out.spec.config);
    out.module = build(out.spec, init);
    NamedTensors weights =
        load_safetensors(path, kMaxSafetensorsFileBytes, HalfPrecision::kToFloat32).tensors;
    if (checkpoint) {
      NamedTensors model_part;
      for (auto& [name, t] : weights)
        if (name.rfind("model.", 0) == 0) model_part.emplace_back(name.substr(6), t);
      weights = std::move(model_part);
    }
    for (const auto& [name, t] : weights)
      if (t.dtype() != DType::Int64 && !all_finite(t))
        fail("tensor '", name, "' holds a NaN or an infinity");
    out.module->load_state_dict(weights);
  } catch (const std::exception& e) {
    fail("load_model ", path, ": ", e.what());
  }
  return out;
}

}  // namespace gradflow::nn
