// TrainingProgram (examples/toolkit/training/program.h), in process: where every
// generator's seed comes from, where the model config comes from in a fresh
// and a resumed run, and the order of the lines that open and close a run.
#include "examples/toolkit/training/program.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "autograd/reference.h"
#include "nn/data/toy_tasks.h"
#include "nn/loss.h"
#include "nn/models.h"
#include "tensor/parallel.h"
#include "tests/examples/tiny_run.h"

namespace gradflow::training {
namespace {

// parse sets the process's threads, reference path and denormal mode
// (setup_run), as a program's start does: put back for the other tests.
class ProcessSettings {
 public:
  ProcessSettings()
      : threads_(num_threads()), reference_(reference_ops()), denormals_(flush_denormals()) {}
  ~ProcessSettings() {
    set_num_threads(threads_);
    set_reference_ops(reference_);
    set_flush_denormals(denormals_);
  }

 private:
  int threads_;
  bool reference_, denormals_;
};

// A command line as main receives it: the program's name, then `args`.
struct CommandLine {
  std::vector<std::string> words;
  std::vector<char*> argv;
  explicit CommandLine(std::vector<std::string> args) : words(std::move(args)) {
    words.insert(words.begin(), "test");
    for (std::string& w : words) argv.push_back(w.data());
  }
  int argc() const { return static_cast<int>(argv.size()); }
};

TEST(TrainingProgram, EveryGeneratorsSeedComesFromSeed) {
  ProcessSettings settings;
  TempDir dir("program_seeds");
  CommonFlags flags;
  TrainingProgram program("test", "", flags);
  program.add_common_flags();
  EXPECT_THROW(program.add_generator("early"), std::logic_error);  // no --seed yet
  CommandLine line({"--seed", "5", "--out", dir.str()});
  program.parse(line.argc(), line.argv.data());
  // Checkpoints of earlier versions were drawn with these: a resume needs them unchanged.
  EXPECT_EQ(program.init.state(), Generator(5).state());
  EXPECT_EQ(program.data.state(), Generator(6).state());
  EXPECT_EQ(program.add_generator("sample").state(), Generator(7).state());
  EXPECT_EQ(program.add_generator("more").state(), Generator(8).state());
  EXPECT_EQ(program.held_out_generator().state(), Generator(5 ^ 0x9e3779b97f4a7c15ull).state());
  // Held-out data is drawn afresh in every session, the same each time.
  Generator held_out = program.held_out_generator();
  held_out.next_u64();
  EXPECT_EQ(program.held_out_generator().state(), Generator(5 ^ 0x9e3779b97f4a7c15ull).state());
}

const nn::ToyTaskConfig kTask{
    .task = "reverse", .n_symbols = 5, .min_len = 2, .max_len = 4, .max_digits = 3};

// A tiny seq2seq run through the program, as examples/seq2seq.cpp makes it,
// with a vocabulary of `vocab` (at least the task's); returns train's exit
// code, with what the program printed in `out`.
int tiny_run(const std::vector<std::string>& args, int64_t vocab, std::string& out,
             nn::ModelConfig* config_used = nullptr, std::vector<std::string>* calls = nullptr) {
  CommonFlags flags{.steps = 4,
                    .batch = 8,
                    .eval_every = 0,
                    .model = {.d_model = 16, .heads = 2, .layers = 1, .d_ff = 32}};
  TrainingProgram program("test", "", flags);
  const nn::ToyTaskConfig task = kTask;
  program.add_common_flags();
  CommandLine line(args);
  program.parse(line.argc(), line.argv.data());
  const nn::ModelConfig config =
      program.prepare(vocab, std::max(nn::src_len(task), nn::tgt_len(task)),
                      {.kind = ModelKind::kEncoderDecoder,
                       .src_len = nn::src_len(task),
                       .tgt_len = nn::tgt_len(task)});
  if (config_used) *config_used = config;
  nn::EncoderDecoder model(config, program.init);
  program.add_generator("sample");
  Generator held_out_gen = program.held_out_generator();
  const nn::Seq2SeqBatch held_out = nn::make_batch(task, 8, held_out_gen);

  Hooks hooks;
  hooks.batch = [&]() -> PartLoss {
    nn::Seq2SeqBatch b = nn::make_batch(task, flags.batch, program.data);
    const int64_t count = nn::counted_targets(b.tgt_out, nn::kPadToken);
    return [&model, b, count](int64_t part, int64_t parts) {
      auto rows = [&](const Tensor& t) { return part_rows(t, part, parts); };
      return nn::cross_entropy(model.forward(rows(b.src), rows(b.tgt_in), rows(b.src_pad)),
                               rows(b.tgt_out), nn::kPadToken, 0.0, count);
    };
  };
  hooks.evaluate = [&] {
    if (calls) calls->push_back("evaluate");
    return Evaluation{
        {nn::cross_entropy(model.forward(held_out.src, held_out.tgt_in, held_out.src_pad),
                           held_out.tgt_out, nn::kPadToken)
             .item()},
        ""};
  };
  Report report{.batch_of = "pairs",
                .held_out = "8 held-out pairs",
                .metrics = {"val_loss"},
                .metadata = {{"extra", "1"}}};
  report.summary = [&](const std::vector<double>& metrics) {
    if (calls) calls->push_back("summary " + std::to_string(metrics.size()));
    std::printf("SUMMARY\n");
  };
  report.show = [&] {
    if (calls) calls->push_back(std::string("show ") + (grad_enabled() ? "grad" : "no grad"));
    std::printf("SHOW\n");
  };
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  int code = -1;
  std::string error;
  try {
    code = program.train(model, hooks, report);
  } catch (const std::exception& e) {
    error = e.what();
  }
  out = ::testing::internal::GetCapturedStdout();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(error, "") << err;
  return code;
}

// The header says how many threads run, and when the default 1 leaves
// cores idle, how to use them and what changes.
TEST(TrainingProgram, TheHeaderSaysTheThreadsAndWhenMoreCoresAreIdle) {
  EXPECT_EQ(threads_text(1, false, 1), "1 thread");
  EXPECT_EQ(threads_text(2, true, 8), "2 threads");  // chosen: no advice
  EXPECT_EQ(threads_text(1, false, 2),
            "1 thread (the default; this machine has 2 cores: --threads 2 is faster, and a run "
            "repeats bitwise at the same --threads)");
  EXPECT_EQ(threads_text(4, false, 4), "4 threads");  // every core already used
}

TEST(TrainingProgram, ARunOpensAndClosesInOrderAndAResumeTakesTheCheckpointsConfig) {
  ProcessSettings settings;
  TempDir dir("program_run");
  std::string out;
  std::vector<std::string> calls;
  nn::ModelConfig config;
  const int64_t vocab = nn::vocab_size(kTask) + 1;
  ASSERT_EQ(tiny_run({"--out", dir.str(), "--schedule", "constant"}, vocab, out, &config, &calls),
            0);
  EXPECT_EQ(config.vocab, vocab);  // the flags with the data's vocabulary
  EXPECT_EQ(config.d_model, 16);
  // One evaluation, at the last step; the summary, then show without gradients.
  EXPECT_EQ(calls, (std::vector<std::string>{"evaluate", "summary 1", "show no grad"}));
  EXPECT_EQ(out, "  4 steps of 8 pairs, constant(lr=0.001); 8 held-out pairs; " +
                     threads_text(1, false, std::thread::hardware_concurrency()) + "; output in " +
                     dir.str() + "\nSUMMARY\nSHOW\nwrote " +
                     (std::filesystem::path(dir.str()) / "log.csv").string() + " " +
                     (std::filesystem::path(dir.str()) / "attention_grads.csv").string() + " " +
                     (std::filesystem::path(dir.str()) / "checkpoint.safetensors").string() + " " +
                     (std::filesystem::path(dir.str()) / "model.safetensors").string() + " " +
                     (std::filesystem::path(dir.str()) / "index.html").string() + "\n");
  const nn::Metadata saved = nn::read_checkpoint_metadata(checkpoint_path(dir.str()));
  EXPECT_EQ(nn::metadata_value(saved, "program"), "test");
  EXPECT_EQ(nn::metadata_value(saved, "config.vocab"), std::to_string(vocab));
  EXPECT_EQ(nn::metadata_value(saved, "flag.--schedule"), "constant");
  EXPECT_EQ(nn::metadata_value(saved, "extra"), "1");

  // Resumed at its last step: the config is the checkpoint's whatever the
  // data says, nothing trains, and the summary gets a fresh evaluation.
  calls.clear();
  ASSERT_EQ(tiny_run({"--resume", dir.str()}, vocab + 50, out, &config, &calls), 0);
  EXPECT_EQ(config.vocab, vocab);
  EXPECT_EQ(calls, (std::vector<std::string>{"evaluate", "summary 1", "show no grad"}));
  EXPECT_NE(out.find("SUMMARY\nSHOW\nwrote"), std::string::npos) << out;

  // A run that does not finish prints no summary and returns its exit code.
  TempDir stopped("program_stopped");
  calls.clear();
  EXPECT_EQ(tiny_run({"--out", stopped.str(), "--lr", "1e30", "--stop-on-nan"}, vocab, out, nullptr,
                     &calls),
            kExitStoppedOnNan);
  EXPECT_EQ(calls, std::vector<std::string>{});
  EXPECT_EQ(out.find("SUMMARY"), std::string::npos) << out;

  // One that finishes with steps skipped says so between the summary and the rest.
  TempDir skipped("program_skipped");
  ASSERT_EQ(
      tiny_run({"--out", skipped.str(), "--lr", "1e30", "--max-skipped-steps", "0"}, vocab, out),
      0);
  const size_t summary = out.find("SUMMARY\n"), show = out.find("SHOW\n"),
               line = out.find(" steps skipped for non-finite values\n");
  ASSERT_NE(line, std::string::npos) << out;
  EXPECT_LT(summary, line);
  EXPECT_LT(line, show);
}

}  // namespace
}  // namespace gradflow::training
