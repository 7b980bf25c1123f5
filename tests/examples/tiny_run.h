// The pieces the in-process tests of the training loop share: a temporary
// directory, a tiny encoder-decoder run with everything run_training needs,
// and readers for what it writes.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "examples/toolkit/training/training.h"
#include "nn/data/toy_tasks.h"
#include "nn/loss.h"
#include "nn/optim/optim.h"

namespace gradflow::training {

namespace fs = std::filesystem;

// A fresh directory per test, removed afterwards.
class TempDir {
 public:
  explicit TempDir(const std::string& name)
      : path_(fs::temp_directory_path() /
              ("gradflow_training_" + name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string str(const std::string& sub = "") const { return (path_ / sub).string(); }

 private:
  fs::path path_;
};

// A tiny encoder-decoder on the reverse task, everything the loop needs.
struct TinyRun {
  nn::ToyTaskConfig task{
      .task = "reverse", .n_symbols = 5, .min_len = 2, .max_len = 4, .max_digits = 3};
  Generator init, data;
  nn::EncoderDecoder model;
  nn::AdamW optimizer;
  nn::LrSchedule schedule = nn::LrSchedule::warmup_cosine(3e-3, 2, 8);
  std::ostringstream err;  // progress and messages, kept out of the test output

  explicit TinyRun(uint64_t seed)
      : init(seed), data(seed + 1), model(config(task), init), optimizer(model.parameters()) {}

  static nn::ModelConfig config(const nn::ToyTaskConfig& task) {
    nn::ModelConfig c;
    c.vocab = nn::vocab_size(task);
    c.d_model = 16, c.heads = 2, c.layers = 1, c.d_ff = 32;
    c.max_len = std::max(nn::src_len(task), nn::tgt_len(task));
    return c;
  }
  Hooks hooks() {
    Hooks h;
    h.batch = [this]() -> PartLoss {
      nn::Seq2SeqBatch b = nn::make_batch(task, 8, data);
      const int64_t count = nn::counted_targets(b.tgt_out, nn::kPadToken);
      return [this, b, count](int64_t part, int64_t parts) {
        auto rows = [&](const Tensor& t) { return part_rows(t, part, parts); };
        return nn::cross_entropy(model.forward(rows(b.src), rows(b.tgt_in), rows(b.src_pad)),
                                 rows(b.tgt_out), nn::kPadToken, 0.0, count);
      };
    };
    h.evaluate = [this] {
      nn::Seq2SeqBatch b = nn::make_eval_set(task, 1, 8, 5).front();
      return Evaluation{
          {nn::cross_entropy(model.forward(b.src, b.tgt_in, b.src_pad), b.tgt_out, nn::kPadToken)
               .item()},
          ""};
    };
    return h;
  }
  LoopOptions options(const std::string& out, int64_t steps) {
    return {.out_dir = out,
            .steps = steps,
            .eval_every = 3,
            .save_every = 2,
            .clip = 1.0,
            .metrics = {"val_loss"},
            .metadata = {{"program", "test"}},
            .err = &err,
            .tty = false};
  }
  TrainResult train(const LoopOptions& o, const Hooks& h) {
    return run_training(model, optimizer, schedule, {{"init", &init}, {"data", &data}}, o, h);
  }
  TrainResult train(const LoopOptions& o) { return train(o, hooks()); }
};

inline std::vector<std::vector<std::string>> read_csv(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::vector<std::string>> rows;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::stringstream s(line);
    for (std::string cell; std::getline(s, cell, ',');) cells.push_back(cell);
    if (!line.empty() && line.back() == ',') cells.push_back("");
    rows.push_back(cells);
  }
  return rows;
}

// The step, loss, lr, grad_norm and skipped columns (each session also
// evaluates at its last step, so the metrics differ where a run was split).
inline std::vector<std::vector<std::string>> step_columns(
    std::vector<std::vector<std::string>> rows) {
  for (auto& row : rows) row.resize(5);
  return rows;
}

inline std::vector<std::vector<double>> weights(const nn::Module& m) {
  std::vector<std::vector<double>> out;
  for (auto& [name, t] : m.state_dict()) out.push_back(t.to_vector());
  return out;
}

}  // namespace gradflow::training
