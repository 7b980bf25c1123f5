// The worked examples of docs/extending_the_study.md, byte for byte (its
// code blocks are cut out of the page and looked for here by
// tests/doc_snippets.cmake): an arm added as one row, and a part added as
// its own code and one row, each registered and run.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "examples/study/part_table.h"
#include "tensor/creation.h"

namespace gradflow::study {
namespace {

// ---- Adding an arm ----

Arm tiny_init_row() {
  return {.name = "none_tiny_init",
          .scale = "none",
          .summary = "unscaled, W_Q and W_K started d_k^(-1/2) smaller: 1/d_k's logits at first",
          .qk_init_power = -0.5,
          .trained = Trained::OnRequest,
          .look = {"#D55E00", true}};
}

TEST(StudyExtension, TheArmOfTheWorkedExample) {
  add_arm(tiny_init_row());
  ASSERT_TRUE(find_arm("none_tiny_init").has_value());
  EXPECT_TRUE(changes_qk_init("none_tiny_init"));
  EXPECT_FALSE(trained_by_default("none_tiny_init"));
  EXPECT_NE(arm_names().find("none_tiny_init"), std::string::npos);
  // Its W_Q starts d_k^(-1/2) = 1/4 times a plain layer's at d_k 16.
  Generator a(7), b(7);
  nn::MultiHeadAttention plain(16, {.heads = 1, .head_dim = 16, .scale = "none"}, a);
  nn::MultiHeadAttention tiny(16, {.heads = 1, .head_dim = 16, .scale = "none"}, b);
  apply_mode_init(tiny, "none_tiny_init");
  EXPECT_EQ(tiny.q_proj->weight.data().at({0, 0}), plain.q_proj->weight.data().at({0, 0}) * 0.25);
  // And it trains: a short run on reverse.
  RunSpec spec;
  spec.key = {"reverse", "none_tiny_init", 16, 0};
  spec.task = reverse_setup();
  spec.task.steps = 4;
  spec.eval_every = 2;
  const RunOutput out = train_one(spec);
  EXPECT_EQ(out.final.steps_run, 4);
  EXPECT_TRUE(std::isfinite(out.final.final_loss));
}

// ---- An arm the library already has: softcap ----

TEST(StudyExtension, SoftcapIsAnArmOnRequest) {
  const std::optional<Arm> softcap = find_arm("softcap");
  ASSERT_TRUE(softcap.has_value());
  EXPECT_FALSE(trained_by_default("softcap"));
  EXPECT_TRUE(softcap->look.dashed);
  EXPECT_NE(arm_names().find("softcap[:<value>, default 30]"), std::string::npos);
  // Trained on request, it is listed after the table's arms.
  EXPECT_EQ(in_drawing_order({"softcap", "inv_sqrt_dk"}),
            (std::vector<std::string>{"inv_sqrt_dk", "softcap"}));
  // Its scores at initialisation are capped: 2 tanh(10 / 2) for softcap:2.
  const auto cap = mode_variant(nn::ScaleMode("softcap:2"), 64, 8);
  const Tensor scores = transformed_scores(cap.get(), from_vector({10.0, -10.0}, {1, 2}));
  EXPECT_NEAR(scores.to_vector()[0], 2 * std::tanh(5.0), 1e-6);
  EXPECT_NEAR(scores.to_vector()[1], -2 * std::tanh(5.0), 1e-6);
}

// ---- Adding a part ----

struct SpreadRow {
  std::string mode;
  int64_t d_k = 0;
  double logit_std = 0;
};

std::vector<SpreadRow> run_spread(const Settings& settings) {
  std::vector<SpreadRow> rows;
  for (const std::string& mode : default_modes())
    for (int64_t d_k : {16, 256}) rows.push_back({mode, d_k});
  run_jobs(
      "logit-spread", rows.size(), settings.threads,
      [&](size_t i) {
        SpreadRow& row = rows[i];
        Generator gen = init_generator(settings.seed, 9, 0, row.d_k, 32);  // the same for every arm
        nn::MultiHeadAttention layer(
            64, {.heads = 1, .head_dim = row.d_k, .scale = scale_mode_of(row.mode), .max_len = 32},
            gen);
        apply_mode_init(layer, row.mode);
        layer.record_probe = true;
        const Variable x(randn({1, 32, 64}, gen));
        layer.forward(x, x);
        row.logit_std = visible_std(layer.probe.logits.data(), layer.probe.mask);
      },
      settings.progress_for("logit-spread: a fresh layer's logits", "layer"));
  return rows;
}

Section spread_section(const std::vector<SpreadRow>& rows) {
  Section s{.part = "logit-spread"};
  CsvFile csv{.name = "logit_spread.csv", .columns = {"mode", "d_k", "logit_std"}, .rows = {}};
  std::string table = "| mode | d_k | logit std |\n|---|---|---|\n";
  for (const SpreadRow& r : rows) {
    csv.rows.push_back({r.mode, r.d_k, csv_number(r.logit_std)});
    table += "| " + r.mode + " | " + std::to_string(r.d_k) + " | " + significant(r.logit_std, 3) +
             " |\n";
  }
  s.markdown = "## logit-spread: a fresh layer's logits\n\n" + table;
  s.csvs.push_back(csv);
  return s;
}

Part spread_row() {
  return {.name = "logit-spread",
          .in_default = false,
          .summary = "the spread of a fresh layer's scaled logits, per arm and d_k",
          .run = [](StudyRun& r) { r.more["logit-spread"] = run_spread(r.settings); },
          .section =
              [](const StudyRun& r) {
                return spread_section(
                    std::any_cast<const std::vector<SpreadRow>&>(r.more.at("logit-spread")));
              },
          .files = {"logit_spread.csv"}};
}

TEST(StudyExtension, ThePartOfTheWorkedExample) {
  add_part(spread_row());
  ASSERT_NE(find_part("logit-spread"), nullptr);
  Settings settings;
  settings.threads = 2;
  StudyRun run(settings);
  find_part("logit-spread")->run(run);
  const Section s = find_part("logit-spread")->section(run);
  ASSERT_EQ(s.csvs.size(), 1u);
  ASSERT_EQ(s.csvs[0].rows.size(), default_modes().size() * 2);
  const auto& rows = std::any_cast<const std::vector<SpreadRow>&>(run.more.at("logit-spread"));
  // Unscaled logits spread sqrt(d_k) times wider than 1/sqrt(d_k)'s on the same weights.
  EXPECT_NEAR(rows[0].logit_std / rows[2].logit_std, 4.0, 1e-3);  // none, inv_sqrt_dk at d_k 16
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "gradflow_spread";
  std::filesystem::create_directories(dir);
  write_report(dir.string(), {.command = "scaling_study --parts logit-spread"}, {s});
  EXPECT_TRUE(std::filesystem::exists(dir / "logit_spread.csv"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gradflow::study
