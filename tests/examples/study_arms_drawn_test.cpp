// Every arm a run trained or measured is drawn and judged, not only the
// table's (issue #49): the order figures list arms in, the look of an arm
// without a row, and the flags each part's row reads.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "examples/study/arms.h"
#include "examples/study/part_table.h"
#include "examples/study/study_flags.h"
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
