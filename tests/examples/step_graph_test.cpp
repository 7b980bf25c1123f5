// --graph end to end: every training program draws one step's graph with the
// gradient norms on its edges, and the run it draws is the same run, bit for
// bit, as without the flag.
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/examples/run_program.h"

namespace gradflow::testing {
namespace {

namespace fs = std::filesystem;

using StepGraphTest = ProgramTest;

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST_F(StepGraphTest, EveryTrainingProgramDrawsAStepWithItsGradientNorms) {
  for (const ListedProgram& program : programs_of_kind("training")) {
    SCOPED_TRACE(program.name);
    const std::string svg = path(program.name + ".svg");
    std::vector<std::string> args = tiny_run_args(program.name, path(program.name), "2");
    args.insert(args.end(), {"--graph", svg});
    Result r = run(program.path, args);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.err.find("graph of step 1 ("), std::string::npos) << r.err;
    const std::string text = read(svg);
    EXPECT_EQ(text.rfind("<svg", 0), 0u);
    EXPECT_GT(count(text, "class=\"node\""), 20u);
    // Every edge reaches a parameter or an op that needs a gradient: each
    // carries a norm after the backward.
    EXPECT_EQ(count(text, "class=\"norm\""), count(text, "class=\"edge\""));
    EXPECT_NE(text.find("cross_entropy"), std::string::npos);
    EXPECT_NE(text.find("q_proj.weight"), std::string::npos);  // a parameter, by its name
  }
}

// The default model at the default depth: attention drawn as its ops, the
// softmax a box of its own, and the drawing no wider or taller than a screen.
TEST_F(StepGraphTest, AtTheDefaultDepthTheSoftmaxShowsAndTheDrawingFitsAScreen) {
  Result r = run(kSeq2seq, {"--steps", "1", "--eval-every", "0", "--eval-examples", "16", "--show",
                            "0", "--out", path("run"), "--graph", path("g.svg")});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string svg = read(path("g.svg"));
  EXPECT_GT(count(svg, ">softmax</text>"), 0u);
  EXPECT_EQ(count(svg, ">fused_attention</text>"), 0u);
  const double width = std::stod(svg.substr(svg.find("width=\"") + 7));
  const double height = std::stod(svg.substr(svg.find("height=\"") + 8));
  EXPECT_LE(width, 2400);
  EXPECT_LE(height, 2400);
  // The key projections' biases get a zero by structure, drawn as such.
  EXPECT_GT(count(svg, ">~0</text>"), 0u);
}

// Folded to the model's parts and written as Graphviz text; at step 2.
TEST_F(StepGraphTest, DotFoldedIntoModulesAtALaterStep) {
  std::vector<std::string> args = tiny_run_args("seq2seq", path("run"), "3");
  args.insert(args.end(), {"--graph", path("g.dot"), "--graph-depth", "2", "--graph-step", "2"});
  Result r = run(kSeq2seq, args);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("graph of step 2 ("), std::string::npos) << r.err;
  const std::string dot = read(path("g.dot"));
  EXPECT_EQ(dot.rfind("digraph gradflow {", 0), 0u);
  for (const char* part : {"label=\"encoder\n", "label=\"decoder\n", "label=\"cross_entropy\n"})
    EXPECT_NE(dot.find(part), std::string::npos) << part << "\n" << dot;
  EXPECT_NE(dot.find("penwidth="), std::string::npos);
}

// The drawing's extra pass draws the step's batch from saved generators and
// throws its gradients away: the run is unchanged, dropout included.
TEST_F(StepGraphTest, TheRunIsTheSameWithAndWithoutAGraph) {
  for (const std::string dropout : {"0", "0.1"}) {
    SCOPED_TRACE("dropout " + dropout);
    std::vector<std::string> plain = tiny_run_args("seq2seq", path("plain" + dropout), "4");
    plain.insert(plain.end(), {"--dropout", dropout, "--threads", "2"});
    std::vector<std::string> drawn = tiny_run_args("seq2seq", path("drawn" + dropout), "4");
    drawn.insert(drawn.end(), {"--dropout", dropout, "--threads", "2", "--graph",
                               path("g" + dropout + ".svg"), "--graph-step", "2"});
    ASSERT_EQ(run(kSeq2seq, plain).code, 0);
    Result r = run(kSeq2seq, drawn);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_TRUE(fs::is_regular_file(path("g" + dropout + ".svg")));
    EXPECT_EQ(read(path("plain" + dropout + "/log.csv")),
              read(path("drawn" + dropout + "/log.csv")));
    // (Compared whole; the bytes are not printed when they differ.)
    EXPECT_TRUE(read(path("plain" + dropout + "/model.safetensors")) ==
                read(path("drawn" + dropout + "/model.safetensors")))
        << "model.safetensors differs";
  }
}

TEST_F(StepGraphTest, ADrawingThatCannotBeMadeIsAOneLineError) {
  const std::vector<std::string> tiny = tiny_run_args("seq2seq", path("run"), "2");
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> args = tiny;
    args.insert(args.end(), more.begin(), more.end());
    return args;
  };
  expect_usage_error(kSeq2seq, with({"--graph", path("no/such/folder/g.svg")}));
  expect_usage_error(kSeq2seq, with({"--graph", path("g.svg"), "--graph-step", "3"}));
  expect_usage_error(kSeq2seq, with({"--graph", path(""), "--graph-step", "1"}));  // a folder
  expect_usage_error(kSeq2seq, with({"--graph-depth", "-1"}));
  EXPECT_FALSE(fs::exists(path("run")));  // refused before the run claimed its folder
}

// --graph replaced whatever its path named: another run's checkpoint (that run could no longer
// resume), charlm's --text, the run's own log, /dev/null (as root, the system's), a symlink's
// target. Each is refused before training, and so are an empty --graph (it drew nothing,
// silently), a folder that cannot be written and a path in the --attention-maps folder. A
// drawing of an earlier run is replaced, as a rerun needs.
TEST_F(StepGraphTest, APathThatIsNotADrawingOfOursIsRefusedBeforeTraining) {
  ASSERT_EQ(run(kSeq2seq, tiny_run_args("seq2seq", path("other"), "2")).code, 0);
  const std::string checkpoint = read(path("other/checkpoint.safetensors"));
  std::ofstream(path("t.txt")) << "the text of a corpus, the text of a corpus\n";
  std::ofstream(path("notes.svg")) << "a file of the user's, named .svg";
  ASSERT_EQ(::mkfifo(path("fifo.svg").c_str(), 0600), 0);
  fs::create_symlink(path("t.txt"), path("link.svg"));
  fs::create_directories(path("maps"));
  const std::vector<std::string> tiny = tiny_run_args("seq2seq", path("run"), "2");
  auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> args = tiny;
    args.insert(args.end(), more.begin(), more.end());
    return args;
  };
  for (const std::string& graph :
       {path("other/checkpoint.safetensors"), path("other/log.csv"), path("t.txt"),
        std::string("/dev/null"), path("fifo.svg"), path("link.svg"), path("notes.svg"),
        std::string(""), std::string("/proc/g.svg")})
    expect_usage_error(kSeq2seq, with({"--graph", graph}));
  expect_usage_error(kSeq2seq,
                     with({"--graph", path("maps/g.svg"), "--attention-maps", path("maps")}));
  std::vector<std::string> charlm = tiny_run_args("charlm", path("run"), "2");
  charlm.insert(charlm.end(), {"--text", path("t.txt"), "--graph", path("t.txt")});
  expect_usage_error(program_path("charlm"), charlm);
  EXPECT_FALSE(fs::exists(path("run")));
  EXPECT_TRUE(read(path("other/checkpoint.safetensors")) == checkpoint);
  EXPECT_EQ(read(path("t.txt")), "the text of a corpus, the text of a corpus\n");
  EXPECT_EQ(read(path("notes.svg")), "a file of the user's, named .svg");
  // A drawing of ours is replaced.
  ASSERT_EQ(run(kSeq2seq, with({"--graph", path("g.svg")})).code, 0);
  Result again = run(kSeq2seq, with({"--graph", path("g.svg"), "--overwrite"}));
  EXPECT_EQ(again.code, 0) << again.err;
}

}  // namespace
}  // namespace gradflow::testing
