#include "examples/toolkit/training/attention_maps.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <ostream>
#include <system_error>

#include "autograd/variable.h"
#include "examples/toolkit/plot/svg_heatmap.h"
#include "examples/toolkit/training/training.h"
#include "nn/io/atomic_file.h"
#include "nn/models.h"
#include "tensor/error.h"

namespace gradflow::training {
namespace {

namespace fs = std::filesystem;

// Cells of 12 pixels fit a 10-pixel label on every row: a 64-character context is 768 pixels,
// and longer ones stay that size with every k-th label (svg_heatmap.h).
constexpr double kCellPixels = 12, kSmallestMatrix = 150, kLargestMatrix = 768;
// The most positions drawn on an axis: 128 x 128 cells in a figure, its heads together (a
// cell is 77 bytes of SVG: 1.3 MB), so 128 for one head, 90 for two, 32 for sixteen, and at
// least 16; sixteen heads of 128 x 128 made 20 MB, and a longer example (classify --max-len
// 4096) would be a gigabyte. Entropies still cover every position.
int64_t most_positions(int64_t heads) {
  int64_t n = 128;
  while (n > 16 && n * n * heads > 128 * 128) --n;
  return n;
}

std::string fixed(double v, int digits) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", digits, v);
  return text;
}

// The probe's mask as 1 (hidden) or 0 for each (head, query, key) of the first example,
// (H, T, S) row-major; all 0 when there is none. A mask broadcasts from the right (masks.h).
std::vector<double> hidden_keys(const Tensor& mask, int64_t h, int64_t t, int64_t s) {
  if (!mask.defined()) return std::vector<double>(static_cast<size_t>(h * t * s), 0.0);
  Shape full = mask.shape();
  full.insert(full.begin(), 4 - full.size(), int64_t{1});
  const Tensor first = mask.contiguous().reshape(full).narrow(0, 0, 1);
  return first.expand({1, h, t, s}).contiguous().to_vector();
}

// "rows: target queries, columns: source keys": which positions the axes hold. The sides are
// named only when the model has both an encoder (source) and a decoder (target).
std::string axes(const AttentionLayer& a, const AttentionExample& example) {
  const bool both = !example.encoder_tokens.empty() && !example.decoder_tokens.empty();
  auto side = [&](bool decoder) { return both ? (decoder ? "target " : "source ") : ""; };
  std::string text = std::string("rows: ") + side(a.decoder) +
                     "queries, columns: " + side(a.decoder && !a.cross) + "keys";
  if (a.decoder && !a.cross) text += " (causal: a query sees itself and the keys before it)";
  return text;
}

// One layer's weights on the first example and which keys its mask hides, (H, T, S) each.
struct LayerWeights {
  std::vector<double> weights, hidden;
  int64_t t = 0, s = 0;
  size_t at(int64_t h, int64_t i, int64_t j) const {
    return static_cast<size_t>((h * t + i) * s + j);
  }
};

// Head h's panel: its first `most` queries and keys, its entropy over all of them.
plot::Heatmap head_panel(const LayerWeights& l, int64_t h, const std::string& layer,
                         const std::vector<std::string>& queries,
                         const std::vector<std::string>& keys, int64_t most) {
  const auto rows = static_cast<int64_t>(queries.size());
  const auto columns = static_cast<int64_t>(keys.size());
  const int64_t drawn_rows = std::min(rows, most);
  const int64_t drawn_columns = std::min(columns, most);
  plot::Heatmap map{.title = "head " + std::to_string(h),
                    .rows = drawn_rows,
                    .columns = drawn_columns,
                    .row_labels = {queries.begin(), queries.begin() + drawn_rows},
                    .column_labels = {keys.begin(), keys.begin() + drawn_columns}};
  double entropy = 0, uniform = 0;
  int64_t counted = 0;
  for (int64_t i = 0; i < rows; ++i) {
    double row_entropy = 0;
    int64_t seen = 0;
    for (int64_t j = 0; j < l.s; ++j) {
      const double p = l.weights[l.at(h, i, j)];
      if (l.hidden[l.at(h, i, j)] == 0) {
        ++seen;
        if (j >= columns)
          fail("attention_maps: layer ", layer, ": query ", i, " sees key ", j,
               ", which the example's ", columns, " tokens leave out as padding");
      }
      if (p > 0) row_entropy -= p * std::log(p);  // a hidden key's weight is 0: it adds nothing
      if (i < drawn_rows && j < drawn_columns)
        map.values.push_back(std::clamp(p, 0.0, 1.0));  // rounding may pass 1
    }
    if (seen == 0) continue;  // every key hidden: no distribution, zero weights
    entropy += row_entropy;
    uniform += std::log(static_cast<double>(seen));
    ++counted;
  }
  const double n = static_cast<double>(std::max<int64_t>(counted, 1));
  map.notes = {"entropy " + fixed(entropy / n, 3) + " nats", "uniform " + fixed(uniform / n, 3)};
  return map;
}

// One layer's figure: a panel per head of the first example's weights, padding left out.
AttentionMapFile figure(const AttentionLayer& a, const AttentionExample& example) {
  const std::vector<std::string>& queries =
      a.decoder ? example.decoder_tokens : example.encoder_tokens;
  const std::vector<std::string>& keys = a.cross ? example.encoder_tokens : queries;
  const Tensor weights =
      a.layer->probe.weights.defined() ? a.layer->probe.weights.data() : Tensor();
  if (!weights.defined() || weights.shape().size() != 4)
    fail("attention_maps: layer ", a.name,
         " recorded no weights; did the example's forward run it?");
  const int64_t heads = weights.shape()[1], t = weights.shape()[2], s = weights.shape()[3];
  const auto rows = static_cast<int64_t>(queries.size());
  const auto columns = static_cast<int64_t>(keys.size());
  if (rows < 1 || rows > t || columns < 1 || columns > s)
    fail("attention_maps: layer ", a.name, " has ", t, " queries and ", s, " keys but the example ",
         "gives ", rows, " query and ", columns, " key tokens");
  const LayerWeights l{weights.narrow(0, 0, 1).contiguous().to_vector(),
                       hidden_keys(a.layer->probe.mask, heads, t, s), t, s};
  std::vector<plot::Heatmap> panels;
  for (int64_t h = 0; h < heads; ++h)
    panels.push_back(head_panel(l, h, a.name, queries, keys, most_positions(heads)));
  const int64_t drawn_rows = panels.front().rows, drawn_columns = panels.front().columns;

  const double matrix =
      std::clamp(kCellPixels * static_cast<double>(std::max(drawn_rows, drawn_columns)),
                 kSmallestMatrix, kLargestMatrix);
  const size_t per_row = matrix > 400 ? 2 : 4;  // so a figure stays within a screen or two
  std::vector<plot::HeatmapRow> grid;
  for (size_t i = 0; i < panels.size(); i += per_row)
    grid.push_back(
        {.panels = std::vector<plot::Heatmap>(
             panels.begin() + static_cast<std::ptrdiff_t>(i),
             panels.begin() + static_cast<std::ptrdiff_t>(std::min(i + per_row, panels.size())))});
  const std::string cut = drawn_rows < rows || drawn_columns < columns
                              ? ", the first " + std::to_string(drawn_rows) + " of " +
                                    std::to_string(rows) + " queries and " +
                                    std::to_string(drawn_columns) + " of " +
                                    std::to_string(columns) + " keys drawn"
                              : "";
  const std::string what = std::string(a.decoder ? "decoder" : "encoder") + " layer " +
                           std::to_string(a.index) + (a.cross ? " cross" : " self") + "-attention";
  AttentionMapFile file{.name = a.name + ".svg", .panels = panels};
  file.svg = plot::render_heatmap_grid(
      grid, {.matrix_size = matrix,
             .legend = "attention weight",
             .title = {example.title + ": " + what + " (" + a.name + ")", axes(a, example),
                       "one held-out example, padding left out" + cut +
                           "; under each head: its entropy in nats (mean over the queries) and "
                           "that of uniform attention over the same keys"}});
  return file;
}

// Puts the model's mode and its layers' probe switches back as they were, however the
// forward ends.
class ProbesOn {
 public:
  ProbesOn(nn::Module& model, const std::vector<AttentionLayer>& layers)
      : model_(model), layers_(layers), training_(model.is_training()) {
    for (const AttentionLayer& a : layers) {
      recording_.push_back(a.layer->record_probe);
      a.layer->record_probe = true;
    }
    model.eval();
  }
  ~ProbesOn() {
    model_.train(training_);
    for (size_t i = 0; i < layers_.size(); ++i) layers_[i].layer->record_probe = recording_[i];
  }
  ProbesOn(const ProbesOn&) = delete;
  ProbesOn& operator=(const ProbesOn&) = delete;

 private:
  nn::Module& model_;
  const std::vector<AttentionLayer>& layers_;
  bool training_;
  std::vector<bool> recording_;
};

}  // namespace

void add_attention_maps_flag(cli::ArgParser& args, std::string* dir) {
  args.add("--attention-maps", dir,
           "at the end, draw each attention layer's heads on one held-out example, with its "
           "tokens: one SVG per layer, in DIR (made if need be)")
      .metavar("DIR")
      .check([](const std::string& path) {
        if (path.empty()) throw cli::UsageError("must not be empty");
        cli::require_writable_folder(path);  // made when the maps are written, not before
        std::error_code ec;
        for (const auto& entry : fs::directory_iterator(path, ec))
          if (entry.path().extension() == ".svg" &&
              entry.symlink_status(ec).type() != fs::file_type::regular)
            throw cli::UsageError(cli::quote(entry.path().string()) +
                                  " is not a regular file (a map would replace it)");
      });
}

std::vector<AttentionLayer> attention_layers(nn::Module& model) {
  std::vector<AttentionLayer> out;
  auto encoder = [&](const nn::Encoder& e) {
    for (size_t i = 0; i < e.layers.size(); ++i)
      out.push_back({"encoder.layers." + std::to_string(i) + ".self_attn",
                     e.layers[i]->self_attn.get(), static_cast<int64_t>(i), false, false});
  };
  auto decoder = [&](const nn::Decoder& d) {
    for (size_t i = 0; i < d.layers.size(); ++i) {
      const std::string block = "decoder.layers." + std::to_string(i);
      const auto index = static_cast<int64_t>(i);
      out.push_back({block + ".self_attn", d.layers[i]->self_attn.get(), index, true, false});
      if (d.layers[i]->cross_attn)
        out.push_back({block + ".cross_attn", d.layers[i]->cross_attn.get(), index, true, true});
    }
  };
  if (auto* m = dynamic_cast<nn::EncoderDecoder*>(&model)) {
    encoder(*m->encoder);
    decoder(*m->decoder);
  } else if (auto* lm = dynamic_cast<nn::DecoderLM*>(&model)) {
    decoder(*lm->decoder);
  } else if (auto* c = dynamic_cast<nn::EncoderClassifier*>(&model)) {
    encoder(*c->encoder);
  } else {
    fail("attention_layers: ", model.describe(),
         " is not an EncoderDecoder, DecoderLM or EncoderClassifier");
  }
  // The names above follow the models' registration; checked against the parameters' own, so
  // a renamed child cannot give a file a name no state_dict key has.
  const auto params = model.named_parameters();
  for (const AttentionLayer& a : out) {
    const std::string key = a.name + ".q_proj.weight";
    auto it =
        std::find_if(params.begin(), params.end(), [&](const auto& p) { return p.first == key; });
    if (it == params.end() || it->second.impl() != a.layer->q_proj->weight.impl())
      fail("attention_layers: ", key, " is not the parameter of the layer named ", a.name);
  }
  return out;
}

std::vector<AttentionMapFile> attention_maps(nn::Module& model, const AttentionExample& example) {
  if (!example.forward) fail("attention_maps: the example has no forward to run");
  const std::vector<AttentionLayer> layers = attention_layers(model);
  {
    ProbesOn on(model, layers);
    NoGradGuard no_grad;
    example.forward();
  }
  std::vector<AttentionMapFile> files;
  for (const AttentionLayer& a : layers) {
    files.push_back(figure(a, example));
    a.layer->probe = {};  // the example's activations, not needed any more
  }
  return files;
}

void write_attention_maps(nn::Module& model, const AttentionExample& example,
                          const std::string& dir, std::ostream& out) {
  std::vector<std::string> names;
  for (const AttentionMapFile& f : attention_maps(model, example)) {
    const fs::path path = fs::path(dir) / f.name;
    try {  // atomically: a kill or a full disk leaves the old map or none, never a cut one
      fs::create_directories(dir);
      write_file_atomic(path.string(), f.svg);
    } catch (const std::exception& e) {
      throw cli::UsageError(std::string("--attention-maps: ") + e.what());
    }
    names.push_back(f.name);
  }
  out << "attention maps: " << wrote_line(dir, names) << "\n";
}

std::string visible_char(unsigned char c) {
  if (c == ' ') return "\u2423";   // ␣
  if (c == '\n') return "\u21b5";  // ↵
  if (c == '\t') return "\u21e5";  // ⇥
  if (c > 0x20 && c < 0x7f) return std::string(1, static_cast<char>(c));
  char code[8];
  std::snprintf(code, sizeof code, "\\x%02x", static_cast<unsigned>(c));
  return code;
}

}  // namespace gradflow::training
