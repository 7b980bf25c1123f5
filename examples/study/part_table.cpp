#include "examples/study/part_table.h"

#include <algorithm>

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
      length_options(study::length_options(s)) {}

namespace {
std::vector<Part>& table() {
  static std::vector<Part> rows = {
      {.name = "init",
       .letter = 'A',
       .summary = "attention at initialisation, over many random draws, for d_k 4 to 1024 and "
                  "8, 64, 512 keys",
       .run = [](StudyRun& r) { r.init = run_init(r.settings, r.init_options); },
       .section =
           [](const StudyRun& r) {
             return init_section(r.init_options, r.init, summarise_training(r.train.finals));
           },
       .reads = {"train"},
       .files = {"init_metrics.csv", "logit_std.svg", "softmax_shape.svg", "layer_gradients.svg"}},
      {.name = "train",
       .letter = 'B',
       .summary = "an encoder-decoder on reverse and a two-layer decoder on associative recall, "
                  "trained under each arm over several seeds",
       .plan = [](const StudyRun& r) { return train_runs(r.settings, r.train_options); },
       .run = [](StudyRun& r) { r.train = run_train(r.settings, r.train_options); },
       .section = [](const StudyRun& r) { return train_section(r.train_options, r.train, r.lr); },
       .reads = {"lr"},
       .files = {"train_metrics.csv", "train_layers.csv", "final_metrics.csv",
                 "accuracy_curves.svg", "loss_curves.svg", "max_logit.svg", "grad_ratio.svg",
                 "final_accuracy.svg", "gradient_and_update.svg", "attention_maps.svg",
                 "gradient_flow.svg"}},
      {.name = "sgd",
       .summary = "three arms on reverse under plain SGD over a few learning rates",
       .plan = [](const StudyRun& r) { return sgd_runs(r.settings, r.sgd_options); },
       .run = [](StudyRun& r) { r.sgd = run_sgd(r.settings, r.sgd_options); },
       .section = [](const StudyRun& r) { return sgd_section(r.sgd_options, r.sgd); },
       .files = {"sgd_sweep.csv", "sgd_lr.svg"}},
      {.name = "depth",
       .letter = 'D',
       .summary = "gradient norms and token similarity across 1 to 8 layers at initialisation",
       .run = [](StudyRun& r) { r.depth = run_depth(r.settings, r.depth_options); },
       .section = [](const StudyRun& r) { return depth_section(r.depth_options, r.depth); },
       .files = {"depth_metrics.csv", "depth_gradients.svg", "depth_cosine.svg"}},
      {.name = "lr",
       .letter = 'C',
       .in_default = false,
       .summary = "learning-rate sensitivity per arm",
       .plan = [](const StudyRun& r) { return lr_runs(r.settings, r.lr_options); },
       .run = [](StudyRun& r) { r.lr = run_lr(r.settings, r.lr_options); },
       .section = [](const StudyRun& r) { return lr_section(r.lr_options, r.lr); },
       .files = {"lr_sweep.csv", "lr_sensitivity.svg", "lr_max_logit.svg", "entropy_collapse.svg"}},
      {.name = "width",
       .letter = 'E',
       .in_default = false,
       .summary = "the best learning rate across width, standard against muP",
       .plan = [](const StudyRun& r) { return width_runs(r.settings, r.width_options); },
       .run = [](StudyRun& r) { r.width = run_width(r.settings, r.width_options); },
       .section = [](const StudyRun& r) { return width_section(r.width_options, r.width); },
       .files = {"width_sweep.csv", "width_lr.svg", "width_best_lr.svg"}},
      {.name = "depth-train",
       .letter = 'F',
       .in_default = false,
       .summary = "depth in training, pre- against post-LN, with and without warm-up",
       .plan =
           [](const StudyRun& r) { return depth_train_runs(r.settings, r.depth_train_options); },
       .run =
           [](StudyRun& r) { r.depth_train = run_depth_train(r.settings, r.depth_train_options); },
       .section =
           [](const StudyRun& r) {
             return depth_train_section(r.depth_train_options, r.depth_train);
           },
       .files = {"depth_train.csv", "depth_train_loss.svg"}},
      {.name = "length",
       .in_default = false,
       .summary = "the scale against the number of keys, at initialisation and trained short, "
                  "tested long",
       .plan = [](const StudyRun& r) { return length_runs(r.settings, r.length_options); },
       .run = [](StudyRun& r) { r.length = run_length(r.settings, r.length_options); },
       .section = [](const StudyRun& r) { return length_section(r.length_options, r.length); },
       .files = {"length_metrics.csv", "length_train.csv", "length_critical.csv", "length_init.svg",
                 "length_train.svg", "length_critical.svg"}},
  };
  return rows;
}
}  // namespace

const std::vector<Part>& parts() { return table(); }

void add_part(const Part& row) {
  if (row.name.empty() || find_part(row.name))
    fail("add_part: the name '", row.name, "' is empty or taken");
  if (!row.run || !row.section) fail("add_part: part '", row.name, "' needs a run and a section");
  table().push_back(row);
}

const Part* find_part(const std::string& name) {
  for (const Part& p : parts())
    if (p.name == name || (name.size() == 1 && p.letter != '\0' && name[0] == p.letter)) return &p;
  return nullptr;
}

const std::vector<std::string>& study_files() {
  static const std::vector<std::string> files = [] {
    std::vector<std::string> out = {"report.md"};
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

}  // namespace gradflow::study
