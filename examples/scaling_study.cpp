// scaling_study: how the attention scale (1/sqrt(d_k), none, 1/d_k, ...)
// affects attention and gradient flow, at initialisation (Part A), in
// training (Part B) and across learning rates (Part C, --full). Writes CSV
// files, SVG plots and report.md with a verdict on each claim of
// ../shared/STUDY.md computed from this run's numbers.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "examples/common/args.h"
#include "examples/common/progress.h"
#include "examples/study/report.h"
#include "examples/study/study.h"
#include "tensor/parallel.h"

using namespace gradflow;

namespace {

std::string command_line(int argc, char** argv) {
  std::string out = "scaling_study";
  for (int i = 1; i < argc; ++i) out += std::string(" ") + argv[i];
  return out;
}

int run(int argc, char** argv) {
  cli::ArgParser args(
      "scaling_study",
      "Measures how the attention scale affects attention and gradient flow. Part A: "
      "at initialisation for d_k in {4, 16, 64, 256, 1024}. Part B: trains small "
      "transformers (reverse with an encoder-decoder, copy with a decoder) under each "
      "scale mode for d_k in {16, 64, 256}. Part C (--full): a learning-rate sweep. "
      "Writes report.md, CSV files and SVG plots to --out.");
  std::string out = "runs/scaling_study";
  args.add("--out", &out, "output directory");
  int64_t seed = 0;
  args.add("--seed", &seed, "random seed (every mode of a setting shares it)").min(0);
  int threads = 2;
  args.add("--threads", &threads, "training runs side by side (each single-threaded)")
      .min(1)
      .max(64);
  bool full = false;
  args.add_flag("--full", &full,
                "longer training and the learning-rate sweep (Part C); about 45 minutes");
  int64_t steps = 0;
  args.add("--steps", &steps, "training steps per run in Part B (0: 400, or 1000 with --full)")
      .min(0);
  bool skip_training = false;
  args.add_flag("--skip-training", &skip_training, "Part A only");
  args.parse(argc, argv);

  const auto start = std::chrono::steady_clock::now();
  std::filesystem::create_directories(out);
  study::RunInfo info;
  info.command = command_line(argc, argv);
  info.seed = static_cast<uint64_t>(seed);
  info.threads = threads;
  info.full = full;
  info.part_a.seed = info.seed;
  info.part_b.seed = info.seed;
  info.part_b.threads = threads;
  info.part_b.steps = steps > 0 ? steps : full ? 1000 : 400;
  set_num_threads(1);  // parallelism comes from running several trainings at once
  // Unscaled attention saturates, and its gradients are then full of denormal
  // floats, which Intel cores handle several times slower: the default run
  // took 268 s instead of 51 there (tensor/parallel.h).
  set_flush_denormals(true);

  std::printf("Part A: attention at initialisation...\n");
  std::fflush(stdout);
  std::vector<study::InitRow> init = study::run_part_a(info.part_a);
  // A bar on a terminal, plain periodic lines otherwise (runs finish on
  // worker threads, one report at a time).
  std::unique_ptr<cli::Progress> bar;
  auto progress = [&bar](size_t done, size_t total) {
    if (!bar) bar = std::make_unique<cli::Progress>(static_cast<int64_t>(total));
    bar->update(static_cast<int64_t>(done), "training runs");
    if (done == total) {
      bar->finish("done");
      bar.reset();
    }
  };
  study::PartBResult training, sweep;
  if (!skip_training) {
    std::printf("Part B: training under each scale mode (%lld steps per run)...\n",
                static_cast<long long>(info.part_b.steps));
    std::fflush(stdout);
    training = study::run_part_b(info.part_b, {info.part_b.lr}, true, progress);
    if (full) {
      info.sweep_lrs = {3e-4, 1e-3, 3e-3, 1e-2, 3e-2};
      study::PartBOptions o = info.part_b;
      o.tasks = {"reverse"};
      std::printf("Part C: learning-rate sweep...\n");
      std::fflush(stdout);
      sweep = study::run_part_b(o, info.sweep_lrs, false, progress);
    }
  }
  info.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  study::write_report(out, info, init, training, sweep);

  std::printf("\n%-4s %-15s %s\n", "id", "verdict", "why");
  for (const study::Verdict& v : study::judge_claims(init, training))
    std::printf("%-4s %-15s %s\n", v.id.c_str(), v.verdict.c_str(), v.why.c_str());
  if (!training.finals.empty()) {
    std::printf("\n%-13s %5s", "task", "d_k");
    for (const std::string& m : study::study_modes()) std::printf(" %12s", m.c_str());
    std::printf("   (held-out accuracy)\n");
    for (size_t i = 0; i < training.finals.size(); i += study::study_modes().size()) {
      std::printf("%-13s %5lld", training.finals[i].task.c_str(),
                  static_cast<long long>(training.finals[i].d_k));
      for (size_t m = 0; m < study::study_modes().size(); ++m)
        std::printf(" %12.4f", training.finals[i + m].final_accuracy);
      std::printf("\n");
    }
  }
  std::printf("\nreport: %s/report.md (%.0f s)\n", out.c_str(), info.seconds);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return cli::run_cli(argc, argv, run); }
