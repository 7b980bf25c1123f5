// charlm: trains a character-level decoder-only transformer (DecoderLM) on a
// text file, or by default on the built-in English-like corpus (no
// download), reports training and validation loss, and samples text with
// the KV cache.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "examples/toolkit/cli/args.h"
#include "examples/toolkit/cli/csv_log.h"
#include "examples/toolkit/cli/number_text.h"
#include "examples/toolkit/training/attention_maps.h"
#include "examples/toolkit/training/program.h"
#include "nn/data/char_dataset.h"
#include "nn/data/text_corpus.h"
#include "nn/generate.h"
#include "nn/loss.h"
#include "nn/models.h"
#include "tensor/creation.h"

namespace gradflow::training {
namespace {

// The vocabulary as byte codes, "10,32,33,...": metadata must be text, and
// a text file's bytes need not be UTF-8.
std::string vocab_codes(const std::string& chars) {
  std::string out;
  for (unsigned char c : chars) out += (out.empty() ? "" : ",") + std::to_string(c);
  return out;
}

// The digest (csv_log.h's FNV-1a) of the file's bytes, read in pieces.
std::string file_digest(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string chunk(1 << 20, '\0');
  uint64_t digest = cli::kLogDigestStart;
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    digest =
        cli::log_digest(std::string_view(chunk.data(), static_cast<size_t>(in.gcount())), digest);
  }
  if (in.bad()) throw cli::UsageError("--text " + cli::quote(path) + ": cannot read it again");
  return cli::digest_hex(digest);
}

// Samples n tokens after `prompt` with generate() and its KV cache; past the
// model's max_len, each token follows from the last max_len (nn/generate.h).
std::string sample(const nn::DecoderLM& model, const nn::CharDataset& data,
                   const std::vector<int64_t>& prompt, int64_t n, nn::GenerateOptions options,
                   Generator& gen) {
  options.new_tokens = n;
  const auto p = static_cast<int64_t>(prompt.size());
  const Tensor out = nn::generate(model, from_indices(prompt, {1, p}), options, gen);
  return data.decode(prompt) + data.decode(out.narrow(1, p, n).contiguous().to_int64_vector());
}

// The default prompt, made of characters the model knows: "The " if the text
// has them, else its opening up to and including its first space or newline
// (at most 16 bytes).
std::string default_prompt(const nn::CharDataset& data) {
  try {
    data.encode("The ");
    return "The ";
  } catch (const std::exception&) {
  }
  const int64_t n = std::min<int64_t>(data.size(), 16);
  std::string out;
  for (int64_t i = 0; i < n; ++i) {
    const std::vector<int64_t> ids = {data.id_at(i)};
    out += data.decode(ids);
    if (out.back() == ' ' || out.back() == '\n') break;
  }
  return out;
}

// One window of text as --attention-maps draws it, each character visible ("␣" a space).
AttentionExample map_example(const nn::DecoderLM& model, const nn::CharDataset& data,
                             const Tensor& window) {
  AttentionExample e{.title = "charlm"};
  for (int64_t j = 0; j < window.shape()[1]; ++j) {
    const std::vector<int64_t> id = {static_cast<int64_t>(window.at({0, j}))};
    e.decoder_tokens.push_back(visible_char(static_cast<unsigned char>(data.decode(id).at(0))));
  }
  e.forward = [&model, window] { model.forward(window); };
  return e;
}

int run(int argc, char** argv) {
  CommonFlags flags{.steps = 600,
                    .batch = 16,
                    .warmup = 30,
                    .eval_every = 200,
                    .save_every = 200,
                    .lr = 4e-3,
                    .out = "runs/charlm"};
  TrainingProgram program("charlm",
                          "Train a character-level transformer language model (decoder-only) on "
                          "a text file, or on a built-in generated English-like corpus, and "
                          "sample from it.",
                          flags);
  std::string text_file;
  int64_t corpus_chars = 200000, context = 64;
  program.run_flags.add("--text", &text_file, "train on this file instead of the built-in corpus")
      .metavar("FILE")
      .check([](const std::string& file) {
        if (!file.empty()) cli::require_regular_file(file);
      })
      // Kept absolute, so a resume from another directory reads the same file.
      .normalize([](const std::string& file) {
        return file.empty() ? file : std::filesystem::absolute(file).lexically_normal().string();
      });
  program.run_flags.add("--corpus-chars", &corpus_chars, "size of the built-in corpus")
      .min(1000)
      .max(int64_t{1} << 28);
  program.run_flags.add("--context", &context, "characters the model sees (its max_len)")
      .min(2)
      .max(4096);
  program.add_common_flags();
  double temperature = 0.8;
  int64_t top_k = 0, sample_tokens = 300, eval_batches = 8;
  std::string prompt;
  bool sample_each_eval = false;
  program.args.add("--temperature", &temperature, "sampling temperature (0: greedy)")
      .min(0)
      .max(100);
  program.args.add("--top-k", &top_k, "sample from the k likeliest characters (0: all)").min(0);
  program.args.add("--sample-tokens", &sample_tokens, "characters to sample at the end").min(0);
  program.args
      .add("--prompt", &prompt,
           "text the samples start from (if not given: \"The \" if the text has those characters, "
           "else its first word)")
      .check([](const std::string& p) {
        if (p.empty()) throw cli::UsageError("must not be empty");
      });
  program.args.add_flag("--sample-each-eval", &sample_each_eval,
                        "also print a sample at each evaluation");
  add_attention_maps_flag(program.args, &flags.attention_maps);
  // A run flag: what val_loss is measured on.
  program.run_flags.add("--eval-batches", &eval_batches, "batches of held-out text per evaluation")
      .min(1)
      .max(10000);
  program.parse(argc, argv);

  const nn::CharDataset data =
      text_file.empty()
          ? nn::CharDataset(nn::generate_corpus(corpus_chars, static_cast<uint64_t>(flags.seed)))
          : nn::CharDataset::from_file(text_file);
  for (nn::Split split : {nn::Split::Train, nn::Split::Val})
    if (data.split_size(split) < context + 1)
      throw cli::UsageError(
          "the text is too short: its " +
          std::string(split == nn::Split::Train ? "training" : "validation") + " part has " +
          std::to_string(data.split_size(split)) +
          " characters, fewer than --context + 1 = " + std::to_string(context + 1));
  if (prompt.empty()) prompt = default_prompt(data);
  std::vector<int64_t> prompt_ids;
  try {
    prompt_ids = data.encode(prompt);
  } catch (const std::exception& e) {
    throw cli::UsageError(std::string("--prompt: ") + e.what());
  }
  const nn::Metadata& resumed = program.checkpoint();
  if (!resumed.empty() && nn::metadata_value(resumed, "vocab_bytes") != vocab_codes(data.chars()))
    throw cli::UsageError("--resume: the text's characters differ from the checkpoint's");
  // A text edited in place may keep its characters and still be other data.
  const std::string digest = text_file.empty() ? "" : file_digest(text_file);
  for (const auto& [key, value] : resumed)
    if (key == "text_digest" && value != digest)
      throw cli::UsageError("--resume: --text " + cli::quote(text_file) +
                            " is not the text the checkpoint trained on (its digest differs: "
                            "edited or replaced since); restore it, or start a new run");

  const nn::ModelConfig config =
      program.prepare(data.vocab_size(), context,
                      {.kind = ModelKind::kDecoder,
                       .tgt_len = context,
                       .eval_batch = flags.batch});  // split_loss's batches
  nn::DecoderLM model(config, program.init);
  Generator& sampler = program.add_generator("sample");
  const nn::GenerateOptions sampling{.temperature = temperature, .top_k = top_k};
  std::cout << "charlm: " << (text_file.empty() ? "built-in corpus" : text_file) << ", "
            << data.size() << " characters (" << data.split_size(nn::Split::Val)
            << " held out), vocabulary " << data.vocab_size() << "; "
            << describe_model(model, config, "context " + std::to_string(config.max_len)) << "\n";

  // Mean loss of eval_batches fixed windows of a split, drawn from a
  // generator of their own so evaluation never moves the training stream.
  auto split_generator = [&](nn::Split split) {
    return Generator(static_cast<uint64_t>(flags.seed) ^
                     (split == nn::Split::Val ? 0x5eedull : 0x7a1ull));
  };
  auto split_loss = [&](nn::Split split) {
    Generator gen = split_generator(split);
    double total = 0;
    for (int64_t i = 0; i < eval_batches; ++i) {
      auto [x, y] = data.batch(split, flags.batch, context, gen);
      total += nn::cross_entropy(model.forward(x), y).item();
    }
    return total / static_cast<double>(eval_batches);
  };
  Hooks hooks;
  hooks.batch = [&]() -> PartLoss {
    // The next training windows, drawn with the run's data generator.
    auto [x, y] = data.batch(nn::Split::Train, flags.batch, context, program.data);
    const int64_t count = y.numel();
    return [&model, x, y, count](int64_t part, int64_t parts) {
      return nn::cross_entropy(model.forward(part_rows(x, part, parts)), part_rows(y, part, parts),
                               -100, 0.0, count);
    };
  };
  hooks.evaluate = [&] {
    Evaluation e{{split_loss(nn::Split::Train), split_loss(nn::Split::Val)}, ""};
    if (sample_each_eval)
      e.text = "sample: " + sample(model, data, prompt_ids, std::min<int64_t>(sample_tokens, 120),
                                   sampling, sampler);
    return e;
  };
  // The page's sample at each evaluation: from a generator of its own, the same draws each
  // time, so two evaluations' samples differ by what the model learned in between.
  hooks.page_text = [&] {
    Generator page_sampler(static_cast<uint64_t>(flags.seed) ^ 0x9a6eull);
    return "sample (temperature " + cli::number_text(temperature) + ", top-k " +
           std::to_string(top_k) + "):\n" +
           sample(model, data, prompt_ids,
                  std::min<int64_t>(std::max<int64_t>(sample_tokens, 1), 300), sampling,
                  page_sampler);
  };
  const Tensor map_window = [&] {  // the first held-out window the evaluation scores
    Generator gen = split_generator(nn::Split::Val);
    return data.batch(nn::Split::Val, flags.batch, context, gen).first.narrow(0, 0, 1).contiguous();
  }();
  hooks.attention_example = [&] { return map_example(model, data, map_window); };
  Report report{.batch_of = "windows",
                .metrics = {"train_loss", "val_loss"},
                .metadata = {{"vocab_bytes", vocab_codes(data.chars())}}};
  if (!digest.empty()) report.metadata.emplace_back("text_digest", digest);
  report.summary = [&](const std::vector<double>& metrics) {
    std::printf("loss: train %.4f, validation %.4f (nats per character; uniform would be %.2f)\n",
                metrics[0], metrics[1], std::log(static_cast<double>(data.vocab_size())));
  };
  report.show = [&] {
    if (sample_tokens > 0)
      std::printf("sample (temperature %s, top-k %lld):\n%s\n",
                  cli::number_text(temperature).c_str(), static_cast<long long>(top_k),
                  sample(model, data, prompt_ids, sample_tokens, sampling, sampler).c_str());
    if (!flags.attention_maps.empty())
      write_attention_maps(model, map_example(model, data, map_window), flags.attention_maps,
                           std::cout);
  };
  return program.train(model, hooks, report);
}

}  // namespace
}  // namespace gradflow::training

int main(int argc, char** argv) {
  return gradflow::cli::run_cli(argc, argv, gradflow::training::run);
}
