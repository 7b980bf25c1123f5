#include "examples/study/part_table.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace gradflow::study {

StudyRun::StudyRun(const Settings& s)
    : settings(s),
      init_options(study::init_options(s)),
      train_options(study::train_options(s)),
      sgd_options(study::sgd_options(s)),
      depth_options(study::depth_options(s)),
      lr_options(study::lr_options(s)),
      width_options(study::width_options(s)),
      depth_train_options(study::depth_train_options(s)),
      length_options(study::length_options(s)),
      qk_rate_options(study::qk_rate_options(s)) {}

namespace {

// The parts' costs in units of the calibration workload (study_time.h),
// fitted on a 2-core AMD EPYC (examples/study/README.md says how). The
// default parts' from four default runs on 2 threads (fresh clone of
// aa33a31, calibration 0.024 s: init 19.9 s, train 140, sgd 41.9, depth
// 3.28; this study at seeds 0, 1, 2, calibration 0.018-0.019 s: init 12.5 to
// 18.6 s, train 127 to 140): the middle of what they took per unit, so
// they include what two threads side by side cost each other. Train's
// against init's matters most, as the ETA after the first 10% of the work
// (init) extrapolates init's pace: it was 7.0 to 10.5 times init's in
// those runs, and is 8.6 here. The --full parts' from their seconds beside
// train's in the --full run of docs/programs.md. A training part's units
// per training_units() of its runs (its evaluations, probes and early
// stops differ), and the measurements'.
constexpr double kTrainUnits = 67, kSgdUnits = 45, kLrUnits = 40, kWidthUnits = 97,
                 kDepthTrainUnits = 36, kLengthUnits = 74;
constexpr double kInitUnitsPerMillion = 151;  // per million d_k x max(n_keys, 64) of a row
constexpr double kDepthUnitsPerLayer = 0.39;  // per layer of a stack and 8 draws
constexpr double kLengthMeasureUnits = 2200;  // the length part's measurements at initialisation

// init's jobs: a (mode, d_k, n_keys) row each, largest d_k x n_keys first
// (run_init's order). Its random draws cost d_k x max(n_keys, 64), its
// layer draws about a fixed amount per 1024 rows (--full: 8192).
PartCost init_cost(const Settings& settings, const InitOptions& o) {
  std::vector<double> sizes;
  for (size_t m = 0; m < measured_arms(settings.modes).size(); ++m)
    for (int64_t d_k : o.d_ks)
      for (int64_t n : o.n_keys)
        sizes.push_back(static_cast<double>(d_k * std::max<int64_t>(n, 64)) +
                        4096.0 * static_cast<double>(o.layer_rows) / 1024.0);
  std::stable_sort(sizes.begin(), sizes.end(), std::greater<>());
  PartCost cost{.unit = "draw set"};
  for (double s : sizes) cost.jobs.push_back(kInitUnitsPerMillion * s * 1e-6);
  return cost;
}

// depth's jobs: a (mode, norm placement, depth) stack each, in that order;
// a stack's draws cost per layer, and building it about 4 layers' worth.
PartCost depth_cost(const Settings& settings, const DepthOptions& o) {
  PartCost cost{.unit = "stack"};
  for (size_t m = 0; m < measured_arms(settings.modes).size(); ++m)
    for (int placement = 0; placement < 2; ++placement)
      for (int64_t layers : o.depths)
        cost.jobs.push_back(
            kDepthUnitsPerLayer *
            ((static_cast<double>(layers) + 0.5) * static_cast<double>(o.draws) / 8.0 + 4));
  return cost;
}

// qk-rate's runs: a step's cost grows as d_model^2 at these widths (its
// products), where training_units() is linear in the width, so the part
// prices its runs itself: seconds a budgeted step, 5e-4 + 8e-7 d_model^2,
// fitted to the 876 runs of `--parts qk-rate --seed 0` on a 2-core AMD EPYC
// (7677 CPU-s), over the calibration workload's 0.018 s there. A step of
// recall (17 tokens) measured as dear as one of charlm (32), within 30%, at
// every width, so the tokens do not enter.
PartCost qk_rate_cost(const Settings& settings, const QkRateOptions& o) {
  PartCost cost{.unit = "run"};
  for (const RunSpec& r : qk_rate_runs(settings, o)) {
    const double d = static_cast<double>(r.task.model.d_model);
    cost.jobs.push_back(static_cast<double>(r.task.steps) * (5e-4 + 8e-7 * d * d) / 0.018);
  }
  std::sort(cost.jobs.begin(), cost.jobs.end(), std::greater<>());
  return cost;
}

// length: its measurements at initialisation, then its training runs.
PartCost length_cost(const Settings& settings, const LengthOptions& o) {
  PartCost cost = training_cost(length_runs(settings, o), kLengthUnits);
  cost.before_jobs = kLengthMeasureUnits;
  return cost;
}

std::vector<Part>& table() {
  static std::vector<Part> rows = {
      {.name = "init",
       .letter = 'A',
       .summary = "attention at initialisation, over many random draws, for d_k 4 to 1024 and "
                  "8, 64, 512 keys",
       .cost = [](const StudyRun& r) { return init_cost(r.settings, r.init_options); },
       .run = [](StudyRun& r) { r.init = run_init(r.settings, r.init_options); },
       .section =
           [](const StudyRun& r) {
             return init_section(r.init_options, r.init, summarise_training(r.train.finals),
                                 &r.train);
           },
       .reads = {"train"},
       .flags = {"--modes"},
       .files = {"init_metrics.csv", "logit_std.svg", "softmax_shape.svg", "layer_gradients.svg"}},
      {.name = "train",
       .letter = 'B',
       .summary = "an encoder-decoder on reverse and a two-layer decoder on associative recall, "
                  "trained under each arm over several seeds",
       .plan = [](const StudyRun& r) { return train_runs(r.settings, r.train_options); },
       .cost =
           [](const StudyRun& r) {
             return training_cost(train_runs(r.settings, r.train_options), kTrainUnits);
           },
       .run = [](StudyRun& r) { r.train = run_train(r.settings, r.train_options); },
       .section = [](const StudyRun& r) { return train_section(r.train_options, r.train, r.lr); },
       .reads = {"lr"},
       .flags = {"--tasks", "--d-ks", "--recall-pairs", "--recall-keys", "--modes", "--seeds",
                 "--steps"},
       .files = {"train_metrics.csv", "train_layers.csv", "final_metrics.csv",
                 "accuracy_curves.svg", "loss_curves.svg", "max_logit.svg", "grad_ratio.svg",
                 "final_accuracy.svg", "gradient_and_update.svg", "attention_maps.svg",
                 "gradient_flow.svg", "gradient_flow.csv", "entropy_and_logit_gradient.svg"}},
      {.name = "sgd",
       .summary = "three arms on reverse under plain SGD: learning rates chosen on some seeds, "
                  "compared on others, with and without clipping",
       .plan = [](const StudyRun& r) { return sgd_runs(r.settings, r.sgd_options); },
       .cost =
           [](const StudyRun& r) {
             return training_cost(sgd_runs(r.settings, r.sgd_options), kSgdUnits);
           },
       // Its rows say which seeds and clip each run had (SgdRow), which
       // StudyRun::sgd's FinalRows cannot: they are kept under the part's name.
       .run = [](StudyRun& r) { r.more["sgd"] = run_sgd(r.settings, r.sgd_options); },
       .section =
           [](const StudyRun& r) {
             const auto it = r.more.find("sgd");
             return sgd_section(r.sgd_options,
                                it == r.more.end()
                                    ? std::vector<SgdRow>{}
                                    : std::any_cast<const std::vector<SgdRow>&>(it->second));
           },
       .flags = {"--seeds", "--steps"},
       .files = {"sgd_sweep.csv", "sgd_lr.svg"}},
      {.name = "depth",
       .letter = 'D',
       .summary = "gradient norms and token similarity across 1 to 8 layers at initialisation",
       .cost = [](const StudyRun& r) { return depth_cost(r.settings, r.depth_options); },
       .run = [](StudyRun& r) { r.depth = run_depth(r.settings, r.depth_options); },
       .section = [](const StudyRun& r) { return depth_section(r.depth_options, r.depth); },
       .flags = {"--modes"},
       .files = {"depth_metrics.csv", "depth_gradients.svg", "depth_cosine.svg"}},
      {.name = "lr",
       .letter = 'C',
       .in_default = false,
       .summary = "learning-rate sensitivity per arm",
       .plan = [](const StudyRun& r) { return lr_runs(r.settings, r.lr_options); },
       .cost =
           [](const StudyRun& r) {
             return training_cost(lr_runs(r.settings, r.lr_options), kLrUnits);
           },
       .run = [](StudyRun& r) { r.lr = run_lr(r.settings, r.lr_options); },
       .section = [](const StudyRun& r) { return lr_section(r.lr_options, r.lr); },
       .flags = {"--modes", "--seeds", "--steps"},
       .files = {"lr_sweep.csv", "lr_sensitivity.svg", "lr_max_logit.svg", "entropy_collapse.svg"}},
      {.name = "width",
       .letter = 'E',
       .in_default = false,
       .summary = "the best learning rate across width, standard against muP",
       .plan = [](const StudyRun& r) { return width_runs(r.settings, r.width_options); },
       .cost =
           [](const StudyRun& r) {
             return training_cost(width_runs(r.settings, r.width_options), kWidthUnits);
           },
       .run = [](StudyRun& r) { r.width = run_width(r.settings, r.width_options); },
       .section = [](const StudyRun& r) { return width_section(r.width_options, r.width); },
       .flags = {"--seeds", "--steps"},
       .files = {"width_sweep.csv", "width_lr.svg", "width_best_lr.svg"}},
      {.name = "depth-train",
       .letter = 'F',
       .in_default = false,
       .summary = "depth in training, pre- against post-LN, with and without warm-up",
       .plan =
           [](const StudyRun& r) { return depth_train_runs(r.settings, r.depth_train_options); },
       .cost =
           [](const StudyRun& r) {
             return training_cost(depth_train_runs(r.settings, r.depth_train_options),
                                  kDepthTrainUnits);
           },
       .run =
           [](StudyRun& r) { r.depth_train = run_depth_train(r.settings, r.depth_train_options); },
       .section =
           [](const StudyRun& r) {
             return depth_train_section(r.depth_train_options, r.depth_train);
           },
       .flags = {"--seeds", "--steps"},
       .files = {"depth_train.csv", "depth_train_loss.svg"}},
      {.name = "length",
       .in_default = false,
       .summary = "the scale against the number of keys, at initialisation and trained short, "
                  "tested long",
       .plan = [](const StudyRun& r) { return length_runs(r.settings, r.length_options); },
       .cost = [](const StudyRun& r) { return length_cost(r.settings, r.length_options); },
       .run = [](StudyRun& r) { r.length = run_length(r.settings, r.length_options); },
       .section = [](const StudyRun& r) { return length_section(r.length_options, r.length); },
       .flags = {"--modes", "--seeds", "--steps"},
       .files = {"length_metrics.csv", "length_train.csv", "length_critical.csv", "length_init.svg",
                 "length_train.svg", "length_critical.svg"}},
      {.name = "qk-rate",
       .in_default = false,
       .summary = "how W_Q and W_K's learning rate should scale with d_k: unscaled attention "
                  "over starts and multipliers at four widths",
       .plan = [](const StudyRun& r) { return qk_rate_runs(r.settings, r.qk_rate_options); },
       .cost = [](const StudyRun& r) { return qk_rate_cost(r.settings, r.qk_rate_options); },
       .run = [](StudyRun& r) { r.more["qk-rate"] = run_qk_rate(r.settings, r.qk_rate_options); },
       .section =
           [](const StudyRun& r) {
             const auto it = r.more.find("qk-rate");
             return qk_rate_section(r.qk_rate_options,
                                    it == r.more.end()
                                        ? std::vector<QkRateRow>{}
                                        : std::any_cast<const std::vector<QkRateRow>&>(it->second),
                                    r.settings.seed);
           },
       // --d-ks gives its widths (d_model = 4 d_k); its arms are its own grid.
       .flags = {"--d-ks", "--seeds", "--steps"},
       .files = {"qk_rate.csv", "qk_rate.svg"}},
  };
  return rows;
}
}  // namespace

const std::vector<Part>& parts() { return table(); }

void add_part(const Part& row) {
  if (row.name.empty() || find_part(row.name))
    fail("add_part: the name '", row.name, "' is empty or taken");
  if (!row.run || !row.section) fail("add_part: part '", row.name, "' needs a run and a section");
  for (const std::string& flag : row.flags)
    if (std::find(part_flags().begin(), part_flags().end(), flag) == part_flags().end())
      fail("add_part: part '", row.name, "' reads ", flag, ", not a flag a part may read");
  table().push_back(row);
}

const Part* find_part(const std::string& name) {
  for (const Part& p : parts())
    if (p.name == name || (name.size() == 1 && p.letter != '\0' && name[0] == p.letter)) return &p;
  return nullptr;
}

const std::vector<std::string>& study_files() {
  static const std::vector<std::string> files = [] {
    std::vector<std::string> out = {"report.md", "index.html", "criteria.csv"};
    for (const Part& p : parts()) out.insert(out.end(), p.files.begin(), p.files.end());
    return out;
  }();
  return files;
}

void check_section_files(const Section& section) {
  const Part* p = find_part(section.part);
  if (p == nullptr) fail("scaling_study: a section of no part ('", section.part, "')");
  auto listed = [p](const std::string& name) {
    return std::find(p->files.begin(), p->files.end(), name) != p->files.end();
  };
  for (const CsvFile& c : section.csvs)
    if (!listed(c.name))
      fail("scaling_study: part ", p->name, " writes ", c.name, ", not in its row");
  for (const PlotFile& f : section.plots)
    if (!listed(f.name))
      fail("scaling_study: part ", p->name, " writes ", f.name, ", not in its row");
}

std::string part_names() {
  std::string out;
  for (const Part& p : parts()) out += (out.empty() ? "" : ", ") + p.name;
  return out;
}

const std::vector<std::string>& part_flags() {
  static const std::vector<std::string> flags = {
      "--tasks", "--d-ks", "--recall-pairs", "--recall-keys", "--modes", "--seeds", "--steps"};
  return flags;
}

std::string parts_reading(const std::string& flag) {
  std::string out;
  for (const Part& p : parts())
    if (std::find(p.flags.begin(), p.flags.end(), flag) != p.flags.end())
      out += (out.empty() ? "" : ", ") + p.name;
  return out;
}

}  // namespace gradflow::study
