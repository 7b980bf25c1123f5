// Every arm a run trained or measured is drawn and judged, not only the
// table's (issue #49): the order figures list arms in, the look of an arm
// without a row, the flags each part's row reads, and a mode's transform of
// the scores measured by the parts at initialisation, against figures
// computed by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "examples/study/arms.h"
#include "examples/study/length_probe.h"
#include "examples/study/part_table.h"
#include "examples/study/run_model.h"
#include "examples/study/study_flags.h"
#include "nn/data/toy_tasks.h"
#include "tensor/creation.h"
#include "tests/examples/run_program.h"

namespace gradflow::testing {
namespace {

namespace fs = std::filesystem;
using namespace gradflow::study;
using StudyArmsDrawnTest = ProgramTest;

std::string read_text(const std::string& file) {
  std::ifstream in(file);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(StudyArmsDrawn, TableOrderThenRequestOrder) {
  EXPECT_EQ(in_drawing_order({"softcap", "log_n", "const:0.25", "inv_sqrt_dk", "none", "log_n"}),
            (std::vector<std::string>{"none", "inv_sqrt_dk", "log_n", "softcap", "const:0.25"}));
  // The parts at initialisation keep the --full arms first (their random streams).
  const std::vector<std::string> measured = measured_arms({"softcap:2", "none"});
  EXPECT_EQ(measured.size(), study_modes().size() + 1);
  EXPECT_EQ(measured.back(), "softcap:2");
}

// An arm without a row is dashed in a colour no row has, one per library mode.
TEST(StudyArmsDrawn, AnArmWithoutARowHasALookOfItsOwn) {
  const ModeLook softcap = mode_look("softcap:5"), konst = mode_look("const:0.25");
  EXPECT_TRUE(softcap.dashed);
  EXPECT_FALSE(softcap.color.empty());
  EXPECT_NE(softcap.color, konst.color);
  EXPECT_EQ(mode_look("softcap").color, softcap.color);  // the same mode, any value
  for (const Arm& a : arms()) {
    EXPECT_NE(a.look.color, softcap.color) << a.name;
    EXPECT_NE(a.look.color, konst.color) << a.name;
  }
  // Every arm together still renders: no panel shows a colour twice.
  std::vector<std::string> all = study_modes();
  all.insert(all.end(), {"log_n", "ssmax", "softcap", "const:0.25", "const:0.5"});
  for (const std::vector<std::string>& panel : mode_panels(all)) {
    plot::Figure f = figure("panel", "x", false, "y", false);
    for (const std::string& m : panel) {
      plot::Series s = mode_series(m);
      s.x = {1, 2}, s.y = {1, 2};
      f.series.push_back(s);
    }
    EXPECT_NO_THROW(plot::render_svg(f));
  }
}

TEST(StudyArmsDrawn, ArmNamesSayTheDefaultFromTheTable) {
  const std::string names = arm_names();
  // The default is the library table's (c = 30 for softcap), written as --scale reads it.
  const nn::ScaleMode softcap("softcap");
  EXPECT_DOUBLE_EQ(softcap.constant(), 30);
  EXPECT_NE(names.find("softcap[:<value>, default 30]"), std::string::npos) << names;
  EXPECT_NE(names.find("const:<value>"), std::string::npos) << names;
}

// The warning follows the rows: init and depth read --modes, sgd does not.
TEST(StudyArmsDrawn, TheUnusedFlagWarningFollowsTheRows) {
  Flags f;
  f.modes = "softcap,none";
  f.given = {"--modes"};
  EXPECT_EQ(unused_flags_warning(f, {find_part("init")}), "");
  EXPECT_EQ(unused_flags_warning(f, {find_part("depth")}), "");
  EXPECT_NE(unused_flags_warning(f, {find_part("sgd")}).find("--modes is not used"),
            std::string::npos);
  for (const Part& p : parts())
    for (const std::string& flag : p.flags) {
      Flags g;
      g.given = {flag};
      EXPECT_EQ(unused_flags_warning(g, {&p}), "") << p.name << " " << flag;
    }
}

// softcap's cap at initialisation: scores c tanh(x / c), the library's own
// transform, in the init part's random-vector experiment and in the length
// part's weights.
TEST(StudyArmsDrawn, TheInitAndLengthPartsMeasureTheCap) {
  const auto variant = mode_variant(nn::ScaleMode("softcap:2"), 64, 8);
  const Tensor raw = from_vector({10.0, -3.0, 0.5, 0.0}, {2, 2});
  const std::vector<double> capped = transformed_scores(variant.get(), raw).to_vector();
  EXPECT_NEAR(capped[0], 2 * std::tanh(5.0), 1e-6);  // 1.99982: within 2
  EXPECT_NEAR(capped[1], 2 * std::tanh(-1.5), 1e-6);
  EXPECT_NEAR(capped[2], 2 * std::tanh(0.25), 1e-6);
  EXPECT_EQ(transformed_scores(nullptr, raw).to_vector()[0], 10.0f);

  Settings settings;
  settings.threads = 2;
  settings.modes = {"softcap:2"};
  InitOptions o;
  o.d_ks = {64}, o.n_keys = {8, 512}, o.draws = 64, o.layer_rows = 64;
  const std::vector<InitRow> rows = run_init(settings, o);
  auto row = [&](const std::string& mode, int64_t n_keys = 8) {
    for (const InitRow& r : rows)
      if (r.mode == mode && r.n_keys == n_keys) return r;
    ADD_FAILURE() << mode;
    return InitRow{};
  };
  // Unit-variance q and k: unscaled logits have variance d_k = 64 (std 8),
  // 1/sqrt(d_k)'s 1. softcap:2's are 2 tanh(x / 2) of the latter, x ~ N(0, 1):
  // variance E[4 tanh^2(x / 2)] = 0.6941 (the quadrature below), below 4.
  double expected = 0;
  for (double x = -10; x < 10; x += 1e-3)
    expected +=
        4 * std::pow(std::tanh(x / 2), 2) * std::exp(-x * x / 2) / std::sqrt(2 * M_PI) * 1e-3;
  EXPECT_NEAR(expected, 0.6941, 1e-3);
  const InitRow none = row("none"), ref = row("inv_sqrt_dk"), cap = row("softcap:2");
  EXPECT_NEAR(std::sqrt(none.logit_var.mean), 8, 0.4);
  EXPECT_NEAR(ref.logit_var.mean, 1, 0.06);
  EXPECT_NEAR(cap.logit_var.mean, expected, 0.05);
  EXPECT_LT(cap.layer_logit_var.mean, 4);
  EXPECT_TRUE(std::isnan(cap.logit_var_theory));
  // The init part's entropy, by hand: n logits i.i.d. N(0, v) have softmax
  // entropy log n - v / 2 + O(1/n), so at 1/sqrt(d_k) (v = 1 for each
  // query on average) and 512 keys entropy_norm is 1 - 1 / (2 log 512) =
  // 0.9199 (0.9207 in a simulation of 3000 rows, the O(1/n) term).
  EXPECT_NEAR(row(kDefaultMode, 512).entropy_norm.mean, 1 - 1 / (2 * std::log(512.0)), 4e-3);

  // One query against two keys in one dimension: logits 16 and 0, uncapped a
  // weight of 1 / (1 + e^-16) on the first, capped 2 tanh(8) and 0: e^2 / (e^2 + 1).
  const std::vector<double> plain = length_weights("const:1", {4}, {{4}, {0}}, 64);
  const std::vector<double> capped_w = length_weights("softcap:2", {4}, {{4}, {0}}, 64);
  EXPECT_NEAR(plain[0], 1 / (1 + std::exp(-16.0)), 1e-6);
  EXPECT_NEAR(capped_w[0], std::exp(2 * std::tanh(8.0)) / (std::exp(2 * std::tanh(8.0)) + 1), 1e-5);
}

// The depth part as an absolute value: a scale of 1e-12 makes every logit 0
// in float32, so attention alone gives every token the same output (the
// mean of the values, through W_O) and their mean cosine after the layer is
// exactly 1, in either placement; the arm is measured because --modes names it.
TEST(StudyArmsDrawn, UniformAttentionMakesTokensAlikeInTheDepthPart) {
  Settings settings;
  settings.threads = 2;
  settings.modes = {"const:1e-12"};
  DepthOptions o;
  o.depths = {1}, o.draws = 2;
  int found = 0;
  for (const DepthRow& r : run_depth(settings, o)) {
    if (r.mode != "const:1e-12") continue;
    ++found;
    EXPECT_NEAR(r.pure_attention_cosine.mean, 1, 1e-5) << r.norm_placement;
  }
  EXPECT_EQ(found, 2);  // pre-LN and post-LN
}

// The train part's entropy of a layer, as an absolute value: with W_Q and
// its bias zero every query scores every key alike, so each row's weights
// are uniform over the keys it sees and entropy_norm is exactly 1, for
// reverse's padded source (cross-attention), its decoder's causal rows and
// the encoder. A probe that forgot the padding mask would count the hidden
// keys in log(n) and give less (issue #49: such a plant moved the values
// 20% with every study test green).
TEST(StudyArmsDrawn, UniformAttentionHasEntropyOneInEveryLayer) {
  RunSpec spec;
  spec.key = {"reverse", "none", 16, 0};
  spec.task = reverse_setup();
  Generator gen(3);
  StudyModel model = build_model(spec, gen);
  for (auto& [name, a] : model.attention) {
    for (Variable* p : {&a->q_proj->weight, &a->q_proj->bias})
      if (p->defined()) {
        Tensor values = p->data();  // a handle to the parameter's storage
        values.fill_(0);
      }
    a->record_probe = true;
  }
  const nn::Seq2SeqBatch s = nn::make_batch(
      {.task = "reverse", .n_symbols = 8, .min_len = 2, .max_len = 8, .max_digits = 3}, 16, gen);
  const Batch batch{s.src, s.src_pad, s.tgt_in, s.tgt_out};
  const std::vector<double> pad = s.src_pad.to_vector();
  ASSERT_GT(std::count(pad.begin(), pad.end(), 1.0), 0) << "the batch has padding";
  model.forward(batch);
  std::vector<LayerRow> rows;
  record_layers(model, spec.key, 0, batch, rows);
  ASSERT_EQ(rows.size(), model.attention.size());
  for (const LayerRow& r : rows) EXPECT_NEAR(r.entropy_norm, 1, 1e-5) << r.layer;
}

// The done-when: a mode trained on request is drawn in the
// training figures, and the library's modes alone train and draw.
TEST_F(StudyArmsDrawnTest, AnArmTrainedOnRequestIsDrawn) {
  for (const auto& [modes, drawn] : std::vector<std::pair<std::string, std::string>>{
           {"inv_sqrt_dk,log_n", "log_n"}, {"const:0.25", "const:0.25"}}) {
    SCOPED_TRACE(modes);
    const std::string out = path(drawn);
    const Result r =
        run(kScalingStudy, {"--parts", "train", "--tasks", "reverse", "--d-ks", "16", "--modes",
                            modes, "--seeds", "2", "--steps", "10", "--out", out});
    ASSERT_EQ(r.code, 0) << r.err;
    for (const char* svg :
         {"accuracy_curves.svg", "loss_curves.svg", "max_logit.svg", "grad_ratio.svg",
          "final_accuracy.svg", "gradient_and_update.svg", "entropy_and_logit_gradient.svg"})
      EXPECT_NE(read_text(out + "/" + svg).find("data-label=\"" + drawn + "\""), std::string::npos)
          << svg;
    EXPECT_NE(read_text(out + "/attention_maps.svg").find(drawn), std::string::npos);
  }
}

}  // namespace
}  // namespace gradflow::testing
