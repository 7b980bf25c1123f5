// docs/library.md's second program, built against the installed package:
// a character model trained on a text file, sampled past its context, saved,
// then built again from its checkpoint alone in a fresh process and trained
// on. tests/package/run_consumers.cmake checks that "train 6, resume 4" and
// "train 10" write the same checkpoint, byte for byte.
#include <gradflow/gradflow.h>

#include <cstdio>
#include <string>

using namespace gradflow;

constexpr int64_t kContext = 32, kBatch = 8;

// One step of AdamW on a batch of windows drawn with `data`.
double train_step(nn::DecoderLM& model, nn::AdamW& optimizer, const nn::CharDataset& text,
                  Generator& data) {
  auto [x, y] = text.batch(nn::Split::Train, kBatch, kContext, data);
  optimizer.zero_grad();
  Variable loss = nn::cross_entropy(model.forward(x), y);
  loss.backward();
  optimizer.step();
  return loss.data().item();
}

// 200 characters after "The", though the model sees 32 at a time: past
// max_len, generate() predicts each token from the last 32.
void print_sample(const nn::DecoderLM& model, const nn::CharDataset& text) {
  Generator sampling(7);
  const std::vector<int64_t> prompt = text.encode("The");
  const Tensor ids = nn::generate(model, from_indices(prompt, {1, 3}),
                                  {.new_tokens = 200, .temperature = 0.8}, sampling);
  std::printf("%s\n", text.decode(ids.to_int64_vector()).c_str());
}

// char_model train TEXT DIR STEPS: a new model, trained and saved in DIR.
int train(const std::string& text_file, const std::string& dir, int64_t steps) {
  const nn::CharDataset text = nn::CharDataset::from_file(text_file);
  nn::ModelConfig config;
  config.vocab = text.vocab_size(), config.max_len = kContext;
  config.d_model = 32, config.heads = 4, config.layers = 2, config.d_ff = 64;
  Generator init(1), data(2);
  nn::DecoderLM model(config, init);
  nn::AdamW optimizer(model.parameters(), 3e-3);
  for (int64_t step = 1; step <= steps; ++step) {
    const double loss = train_step(model, optimizer, text, data);
    std::printf("step %lld: loss %.4f\n", static_cast<long long>(step), loss);
  }
  print_sample(model, text);
  // The checkpoint holds the weights, AdamW's moments and the data
  // generator; model_metadata adds the config, so the file alone builds it.
  nn::Metadata metadata = nn::model_metadata({.kind = nn::ModelKind::kDecoder, .config = config});
  metadata.emplace_back("text", text_file);
  nn::save_checkpoint(dir + "/checkpoint.safetensors", model, optimizer, {{"data", &data}}, steps,
                      metadata);
  nn::save_model(dir + "/model.safetensors", model);  // weights and config, for sampling
  return 0;
}

// char_model resume DIR STEPS: the model built from DIR's checkpoint alone,
// trained STEPS more and saved again.
int resume(const std::string& dir, int64_t steps) {
  const std::string path = dir + "/checkpoint.safetensors";
  const nn::LoadedModel loaded = nn::load_model(path);
  nn::DecoderLM& model = loaded.as<nn::DecoderLM>();
  const nn::CharDataset text =
      nn::CharDataset::from_file(nn::metadata_value(loaded.metadata, "text"));
  nn::AdamW optimizer(model.parameters(), 3e-3);
  Generator data(0);  // its state comes from the checkpoint
  const nn::CheckpointContents saved =
      nn::load_checkpoint(path, model, optimizer, {{"data", &data}});
  const int64_t done = saved.step;
  for (int64_t step = done + 1; step <= done + steps; ++step) {
    const double loss = train_step(model, optimizer, text, data);
    std::printf("step %lld: loss %.4f\n", static_cast<long long>(step), loss);
  }
  print_sample(model, text);
  nn::save_checkpoint(path, model, optimizer, {{"data", &data}}, done + steps, saved.metadata);
  return 0;
}

int main(int argc, char** argv) try {
  set_num_threads(1);         // the default; a fixed count gives the same bits every run
  set_flush_denormals(true);  // as the programs do: no slow subnormal arithmetic
  const std::string command = argc > 1 ? argv[1] : "";
  if (command == "train" && argc == 5) return train(argv[2], argv[3], std::stoll(argv[4]));
  if (command == "resume" && argc == 4) return resume(argv[2], std::stoll(argv[3]));
  std::fprintf(stderr, "usage: char_model train TEXT DIR STEPS | resume DIR STEPS\n");
  return 2;
} catch (const std::exception& e) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return 1;
}
