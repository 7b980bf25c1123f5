// A model in one file, with what it takes to build it again: the weights
// (as save_weights writes them, or under "model." in a training checkpoint)
// and, in the safetensors metadata, its ModelConfig (config.d_model = "64",
// ... one entry per row of model_fields()) and its kind (model_kind =
// "decoder", "encoder_decoder" or "classifier"; a classifier's classes).
// Files the programs wrote before model_kind existed name their program
// instead, which says the kind (charlm and recall: decoder; seq2seq:
// encoder_decoder; classify: classifier).
//
// A file comes from anywhere, and its config says what to allocate: before
// building, the config's parameter count is checked against the machine's
// memory, and the names and shapes of the tensors it implies against those
// the file holds, so a tampered config (a million layers) is refused in one
// line at once, not after minutes of allocating.
#pragma once

#include <memory>
#include <string>

#include "nn/io/checkpoint.h"
#include "nn/io/safetensors.h"
#include "nn/models.h"

namespace gradflow::nn {

enum class ModelKind { kDecoder, kEncoderDecoder, kClassifier };

// What a file says its model is: enough to build it.
struct ModelSpec {
  ModelKind kind = ModelKind::kDecoder;
  ModelConfig config = {};
  int64_t classes = 0;  // a classifier's outputs (0: one logit per token over the vocabulary)
};

// A field's value as text ("64", "const:0.25", "post") and back, running the
// field's own check; set_model_field throws an Error with just the problem.
std::string model_field_text(const ModelField& field, const ModelConfig& config);
void set_model_field(const ModelField& field, ModelConfig& config, const std::string& text);

// Every field as metadata and back, checked with validate(). A field the
// metadata lacks (a file older than the field) takes its row's `absent`, or
// is refused where the row says so. `read` sets one field from its text (the
// programs pass their flags' parser, so a file reads as their command line).
// Throws one line: "bad model config in the file: no config.heads".
Metadata config_metadata(const ModelConfig& config);
using FieldReader = void (*)(const ModelField&, ModelConfig&, const std::string&);
ModelConfig config_from_metadata(const Metadata& metadata, FieldReader read = set_model_field);

// The config's metadata, the kind and a classifier's classes.
Metadata model_metadata(const ModelSpec& spec);
// The spec of a file from its header; throws if it names no kind.
ModelSpec model_spec(const SafetensorsHeader& header);

// The parameters the spec's model has, computed from the tables of its parts
// (norm_kinds.h, ffn_kinds.h, positional_schemes.h, scale_modes.h) without
// building it; a double, as a hostile config need not fit in int64.
double count_parameters(const ModelSpec& spec);

// Throws unless the model's float32 weights fit in the machine's memory, and
// unless the tensors of `header` whose names start with `prefix` ("model."
// in a checkpoint) are exactly those the spec's model has, shape for shape.
// Allocates no more than a one-layer model of the spec. One line naming the
// tensor: "tensor 'decoder.layers.0.ff.w1.weight' is (8, 4) in the file,
// the config implies (16, 4)".
void check_model_file(const ModelSpec& spec, const SafetensorsHeader& header,
                      const std::string& prefix);

// A model built from its file alone.
struct LoadedModel {
  ModelSpec spec;
  Metadata metadata;  // every entry of the file's, the config's among them
  std::shared_ptr<Module> module;
  // The model as its class; throws if the file holds another kind.
  template <class M>
  M& as() const {
    auto* m = dynamic_cast<M*>(module.get());
    if (!m) fail("load_model: the file holds a ", module->describe(), ", not the model asked for");
    return *m;
  }
};

// Weights with the spec's metadata (and the caller's `extra` entries),
// written atomically. The two models that know their config need no spec.
void save_model(const std::string& path, const Module& model, const ModelSpec& spec,
                const Metadata& extra = {});
void save_model(const std::string& path, const DecoderLM& model, const Metadata& extra = {});
void save_model(const std::string& path, const EncoderDecoder& model, const Metadata& extra = {});

// Reads the spec of a save_model or save_weights file or a training
// checkpoint, checks it with check_model_file, then builds the model and
// loads its weights. Throws one line naming the file and the problem: also a
// NaN or infinite weight, and a config.* entry that differs from the file's
// flag.* entry (a training program's file, edited: it would build another
// model, config.heads 2 for 4 loading as d_k 4 for 2). The model is built
// with `init`: its dropout masks draw from init's generator (a resumed run
// that passes the generator its checkpoint saved repeats bitwise; Init{}
// draws from default_generator()).
LoadedModel load_model(const std::string& path, Init init = {});

}  // namespace gradflow::nn
