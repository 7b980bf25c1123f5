// rebuild_batch_writer OUT_DIR: the inputs of docs/rebuild_in_pytorch.py,
// for the PyTorch rebuild tests (tests/CMakeLists.txt). For each model kind
// and each case of tests/nn/rebuild_cases.txt it trains a small model from a
// fixed seed until it has learned its task, then writes
//
//   OUT_DIR/<kind>.<case>/model.safetensors  the weights, with the model
//       config as metadata ("config.d_model", ...), as the programs save it
//   OUT_DIR/<kind>.<case>/batch.safetensors  a fresh batch and what
//       gradflow computed on it: float32 logits (B, T, V); float32 loss and
//       smoothed_loss (label smoothing 0.1), each of shape (); and
//         encoder_decoder: int64 src (B, S), tgt_in, tgt_out (B, T), float32
//                          src_pad (B, S), 1 at padding
//         decoder_lm:      int64 ids, targets (B, T), -100 where not scored,
//                          float32 pad (B, T), 1 at padding
//
// Trained, not fresh: an initial model's LayerNorms are all 1 and 0 and its
// attention nearly uniform, so a script that swapped a norm's weight and
// bias, or got the scale, a rotation or a mask wrong, would still match.
// The batches are padded on the right, so every query sees at least one key
// (PyTorch's softmax of a row of -inf is NaN where gradflow's is 0).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "examples/toolkit/training/run_flags.h"
#include "nn/data/toy_tasks.h"
#include "nn/io/checkpoint.h"
#include "nn/io/safetensors.h"
#include "nn/loss.h"
#include "nn/models.h"
#include "nn/optim/optim.h"
#include "tensor/ops.h"

using namespace gradflow;
namespace fs = std::filesystem;

namespace {

// Targets cross_entropy skips in a decoder_lm batch: PyTorch's default.
constexpr int64_t kIgnoredTarget = -100;
// With AdamW at 1e-2, 200 steps take every case from a loss of 2.6 to 2.9 to
// a fresh batch's 0.38 or less, the alibi DecoderLM's 0.81 (100 leave the
// rope ones above 0.8); 32 s for the 18 cases in Release on 2 busy cores.
constexpr int kSteps = 200;

// The reverse task: "3 1 4 -> 4 1 3", 1 to 8 symbols, padded on the right.
const nn::ToyTaskConfig kTask{.task = "reverse", .n_symbols = 10, .min_len = 1, .max_len = 8};

// One line of tests/nn/rebuild_cases.txt: a name and the config it trains.
struct Case {
  std::string name;
  nn::ModelConfig config;
};

// The cases of the list at `path`, each applied to `base` field by field as
// a checkpoint's metadata is read (examples/toolkit/training/model_flags.h), so a case
// names fields and values as config.* does. Throws on a line it cannot read.
std::vector<Case> read_cases(const std::string& path, const nn::ModelConfig& base) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read the cases, " + path);
  std::vector<Case> cases;
  int line_number = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_number;
    std::istringstream words(line);
    Case c{"", base};
    if (!(words >> c.name) || c.name[0] == '#') continue;
    for (std::string setting; words >> setting;) {
      const size_t eq = setting.find('=');
      const std::string field = setting.substr(0, eq);
      auto it = std::find_if(nn::model_fields().begin(), nn::model_fields().end(),
                             [&field](const nn::ModelField& f) { return field == f.name; });
      try {
        if (eq == std::string::npos || it == nn::model_fields().end())
          throw std::runtime_error("expected field=value with a config field, got " + setting);
        training::set_field(*it, c.config, setting.substr(eq + 1));
        c.config.validate();
      } catch (const std::exception& e) {
        throw std::runtime_error(path + ":" + std::to_string(line_number) + ": " + e.what());
      }
    }
    cases.push_back(c);
  }
  return cases;
}

nn::ModelConfig small_config() {
  nn::ModelConfig c;
  c.vocab = nn::vocab_size(kTask);
  c.max_len = nn::src_len(kTask) + nn::tgt_len(kTask);  // decoder_lm's (B, S + T)
  c.d_model = 32, c.heads = 4, c.layers = 2, c.d_ff = 64;
  return c;
}

// A decoder-only batch from a seq2seq one: the same task as language
// modelling, "BOS 3 1 4 EOS 4 1 3 EOS", each token predicting the next and
// only the answer scored (it needs attention to the right positions), padded
// on the right. (B, S + T).
struct LmBatch {
  Tensor ids, targets, pad;
};
LmBatch lm_batch(const nn::Seq2SeqBatch& b) {
  const int64_t rows = b.src.shape()[0], len = b.src.shape()[1] + b.tgt_out.shape()[1];
  LmBatch out{zeros({rows, len}, DType::Int64),
              full({rows, len}, static_cast<double>(kIgnoredTarget), DType::Int64),
              full({rows, len}, 1)};
  for (int64_t i = 0; i < rows; ++i) {
    std::vector<int64_t> seq = {nn::kBosToken};
    for (const Tensor* part : {&b.src, &b.tgt_out}) {  // each up to its EOS
      int64_t t = 0;
      do seq.push_back(static_cast<int64_t>(part->at({i, t++})));
      while (seq.back() != nn::kEosToken);
    }
    const size_t answer = std::find(seq.begin(), seq.end(), nn::kEosToken) - seq.begin() + 1;
    for (size_t t = 0; t + 1 < seq.size(); ++t) {
      out.ids.set({i, static_cast<int64_t>(t)}, static_cast<double>(seq[t]));
      out.pad.set({i, static_cast<int64_t>(t)}, 0);
      if (t + 1 >= answer)
        out.targets.set({i, static_cast<int64_t>(t)}, static_cast<double>(seq[t + 1]));
    }
  }
  return out;
}

// A model's logits on a batch, the batch's inputs as batch.safetensors
// names them, and what its loss scores.
struct Scored {
  NamedTensors inputs;
  Variable logits;
  Tensor targets;
  int64_t ignore_index;
  Variable loss(double label_smoothing = 0) const {
    return nn::cross_entropy(logits, targets, ignore_index, label_smoothing);
  }
};
Scored score(const nn::EncoderDecoder& m, const nn::Seq2SeqBatch& b) {
  return {{{"src", b.src}, {"tgt_in", b.tgt_in}, {"tgt_out", b.tgt_out}, {"src_pad", b.src_pad}},
          m.forward(b.src, b.tgt_in, b.src_pad),
          b.tgt_out,
          nn::kPadToken};
}
Scored score(const nn::DecoderLM& m, const nn::Seq2SeqBatch& seq2seq) {
  LmBatch b = lm_batch(seq2seq);
  return {{{"ids", b.ids}, {"targets", b.targets}, {"pad", b.pad}},
          m.forward(b.ids, b.pad),
          b.targets,
          kIgnoredTarget};
}

// Trains kSteps AdamW steps, then writes the model and a fresh batch scored.
template <class Model>
void write_case(const fs::path& dir, const nn::ModelConfig& config, uint64_t seed) {
  Generator gen(seed);
  Model model(config, gen);
  nn::AdamW optimizer(model.parameters(), /*lr=*/1e-2);
  double first = 0, last = 0;
  for (int step = 0; step < kSteps; ++step) {
    Variable loss = score(model, nn::make_batch(kTask, 32, gen)).loss();
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();
    (step == 0 ? first : last) = loss.item();
  }
  NoGradGuard no_grad;
  Scored scored = score(model, nn::make_batch(kTask, 16, gen));
  const Tensor loss = scored.loss().data();
  NamedTensors batch = scored.inputs;
  batch.emplace_back("logits", scored.logits.data());
  batch.emplace_back("loss", loss);
  batch.emplace_back("smoothed_loss", scored.loss(0.1).data());
  fs::create_directories(dir);
  nn::save_weights((dir / "model.safetensors").string(), model, training::config_metadata(config));
  nn::save_safetensors((dir / "batch.safetensors").string(), batch);
  std::printf("%s: trained loss %.4f -> %.4f, batch loss %.9g\n", dir.string().c_str(), first, last,
              loss.item());
}

}  // namespace

int main(int argc, char** argv) {
  // A test fixture, not a program, but it answers like one: a flag is never
  // taken for the folder it would fill.
  const bool help =
      argc == 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0);
  if (help) {
    std::printf(
        "usage: rebuild_batch_writer OUT_DIR\n\nTrain a small model of each kind and "
        "case (%s) and write it with a batch (the PyTorchRebuild tests' fixture).\n",
        GRADFLOW_REBUILD_CASES);
    return 0;
  }
  if (argc != 2 || argv[1][0] == '-') {
    std::fprintf(stderr,
                 "rebuild_batch_writer: error: expected one argument, OUT_DIR (see --help)\n");
    return 2;
  }
  try {
    const fs::path out = argv[1];
    uint64_t seed = 1;
    for (const Case& c : read_cases(GRADFLOW_REBUILD_CASES, small_config())) {
      write_case<nn::EncoderDecoder>(out / ("encoder_decoder." + c.name), c.config, seed++);
      write_case<nn::DecoderLM>(out / ("decoder_lm." + c.name), c.config, seed++);
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rebuild_batch_writer: %s\n", e.what());
    return 1;
  }
}
