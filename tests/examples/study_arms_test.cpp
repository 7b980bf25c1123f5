// The arms table (examples/study/arms.h) is the one place an arm's meaning
// lives: no study file compares a mode with an arm's name, and no AdamW
// setting is written outside its presets (nn/optim/optim.h) and
// minimal_train, the raw loop on purpose.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>
#include <vector>

#include "examples/study/arms.h"

namespace gradflow::study {
namespace {

namespace fs = std::filesystem;
const fs::path kRoot = GRADFLOW_SOURCE_DIR;

std::vector<fs::path> sources_under(const fs::path& folder) {
  std::vector<fs::path> out;
  for (const auto& entry : fs::recursive_directory_iterator(kRoot / folder))
    if (entry.path().extension() == ".cpp" || entry.path().extension() == ".h")
      out.push_back(entry.path());
  return out;
}

// Each line of `file` matching `pattern`, as "file:line: text".
std::vector<std::string> matches(const fs::path& file, const std::regex& pattern) {
  std::vector<std::string> out;
  std::ifstream in(file);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n)
    if (std::regex_search(line, pattern))
      out.push_back(fs::relative(file, kRoot).string() + ":" + std::to_string(n) + ": " + line);
  return out;
}

TEST(StudyArms, NoStudyFileComparesAModeWithAnArmsName) {
  std::string names = "kControl|kReparam|kDefaultMode";
  for (const Arm& a : arms()) names += "|\"" + a.name + "\"";
  for (const nn::ScaleModeEntry& e : nn::scale_modes()) names += "|\"" + std::string(e.name) + "\"";
  const std::regex comparison("(==|!=)\\s*(" + names + ")\\b|(" + names + ")\\s*(==|!=)");
  std::vector<std::string> found;
  for (const fs::path& file : sources_under("examples/study")) {
    if (file.filename() == "arms.cpp") continue;  // the table itself
    for (const std::string& m : matches(file, comparison)) found.push_back(m);
  }
  for (const fs::path& file : sources_under("examples"))
    if (file.filename() == "scaling_study.cpp")
      for (const std::string& m : matches(file, comparison)) found.push_back(m);
  EXPECT_TRUE(found.empty()) << "read the arm's row instead (arms.h):\n"
                             << [&] {
                                  std::string all;
                                  for (const std::string& f : found) all += f + "\n";
                                  return all;
                                }();
}

TEST(StudyArms, NoAdamWSettingOutsideItsPresets) {
  // Two betas and an epsilon written as numbers: "0.9, 0.98, 1e-9".
  const std::regex setting("0\\.9\\d*\\s*,\\s*0\\.9\\d*\\s*,\\s*1e-\\d");
  std::vector<std::string> found;
  for (const char* folder : {"tensor", "autograd", "nn", "examples", "bench"})
    for (const fs::path& file : sources_under(folder)) {
      const std::string name = fs::relative(file, kRoot).string();
      if (name == "nn/optim/optim.h" || name == "examples/minimal_train.cpp") continue;
      for (const std::string& m : matches(file, setting)) found.push_back(m);
    }
  for (const std::string& f : found) ADD_FAILURE() << "an AdamW setting outside its preset: " << f;
}

// The table's promises: the default run's arms, --full's, and the library's
// other scale modes as arms of their own.
TEST(StudyArms, TheTableSaysWhatEachArmIs) {
  EXPECT_EQ(default_modes(), (std::vector<std::string>{"none", "inv_sqrt_dk", "inv_dk", "qk_norm",
                                                       kControl, kReparam, kSlowQk}));
  EXPECT_EQ(study_modes().size(), 11u);
  EXPECT_TRUE(is_reference(kDefaultMode));
  EXPECT_TRUE(changes_qk_init(kControl));
  EXPECT_FALSE(has_qk_lr_factor(kControl));
  EXPECT_TRUE(has_qk_lr_factor(kReparam));
  // The factorial's fourth cell: the saturated start, the slower rate.
  EXPECT_FALSE(changes_qk_init(kSlowQk));
  EXPECT_DOUBLE_EQ(qk_lr_factor(kSlowQk, 256), 0.25);
  EXPECT_DOUBLE_EQ(qk_lr_factor(kReparam, 256), 0.25);
  EXPECT_TRUE(qk_normalised("qk_norm"));
  EXPECT_TRUE(qk_normalised("qk_l2norm"));
  EXPECT_FALSE(qk_normalised("none"));
  // Every scale mode of the library is an arm, trained only when asked for.
  for (const nn::ScaleModeEntry& e : nn::scale_modes()) {
    const std::string name = std::string(e.name) + (e.takes_value ? ":0.125" : "");
    const std::optional<Arm> a = find_arm(name);
    ASSERT_TRUE(a.has_value()) << name;
    EXPECT_TRUE(scale_mode_of(name) == nn::ScaleMode(name)) << name;
  }
  EXPECT_FALSE(find_arm("nnone").has_value());
  EXPECT_THROW(arm("nnone"), Error);
  EXPECT_THROW(add_arm(Arm{.name = "none", .scale = "none"}), Error);    // taken
  EXPECT_THROW(add_arm(Arm{.name = "fresh", .scale = "bogus"}), Error);  // no such scale
}

}  // namespace
}  // namespace gradflow::study
