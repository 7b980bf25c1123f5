// scaling_study as a user runs it: --help, one-line errors with exit code 2
// for bad lists and flags, and a small run that writes its report.
#include <gtest/gtest.h>

#include <signal.h>
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/examples/html_check.h"
#include "tests/examples/run_program.h"

namespace gradflow::testing {
namespace {

namespace fs = std::filesystem;

using StudyProgramTest = ProgramTest;

TEST_F(StudyProgramTest, HelpListsTheFlags) {
  Result r = run(kScalingStudy, {"--help"});
  EXPECT_EQ(r.code, 0);
  for (const char* flag : {"--seeds", "--full", "--steps", "--tasks", "--d-ks", "--modes",
                           "--parts", "--recall-pairs", "--threads", "--out"})
    EXPECT_NE(r.out.find(flag), std::string::npos) << flag;
  for (const char* part : {"init", "train", "sgd", "depth", "lr", "width", "depth-train"})
    EXPECT_NE(r.out.find(part), std::string::npos) << part;
}

TEST_F(StudyProgramTest, TheSgdPartIsNamed) {
  // Accepted by --parts: the run goes on to its --out, here a file, and
  // stops there before training anything.
  std::ofstream(path("a file")) << "not a folder\n";
  Result r = run(kScalingStudy, {"--parts", "sgd", "--out", path("a file")});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("cannot create the directory"), std::string::npos) << r.err;
  r = run(kScalingStudy, {"--parts", "sgd,bogus"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("unknown part 'bogus' (expected init, train, sgd, depth,"),
            std::string::npos)
      << r.err;
}

// --modes takes its choices, help and errors from the arms table, and every
// scale mode of the library is an arm without a row of its own.
TEST_F(StudyProgramTest, ModesComeFromTheArmsTable) {
  Result r = run(kScalingStudy, {"--modes", "nnone"});
  EXPECT_EQ(r.code, 2);
  for (const char* arm :
       {"unknown arm 'nnone'", "none_small_init", "none_reparam", "learned_log", "const:<value>"})
    EXPECT_NE(r.err.find(arm), std::string::npos) << arm << " in " << r.err;
  r = run(kScalingStudy, {"--help"});
  EXPECT_NE(r.out.find("none_reparam"), std::string::npos);
  r = run(kScalingStudy, {"--parts", "train", "--modes", "log_n,inv_sqrt_dk", "--tasks", "reverse",
                          "--d-ks", "16", "--seeds", "2", "--steps", "20", "--out", path("log_n")});
  ASSERT_EQ(r.code, 0) << r.err;
  std::ifstream finals(path("log_n") + "/final_metrics.csv");
  const std::string text((std::istreambuf_iterator<char>(finals)),
                         std::istreambuf_iterator<char>());
  EXPECT_NE(text.find(",log_n,"), std::string::npos) << text.substr(0, 400);
}

TEST_F(StudyProgramTest, BadValuesAreOneLineErrors) {
  expect_usage_error(kScalingStudy, {"--tasks", "copy"});
  expect_usage_error(kScalingStudy, {"--tasks", "reverse,,recall"});
  expect_usage_error(kScalingStudy, {"--d-ks", "0"});
  expect_usage_error(kScalingStudy, {"--d-ks", "16,x"});
  expect_usage_error(kScalingStudy, {"--modes", "inv_sqrt_dk,bogus"});
  expect_usage_error(kScalingStudy, {"--parts", "A,G"});
  expect_usage_error(kScalingStudy, {"--parts", "init,bogus"});
  expect_usage_error(kScalingStudy, {"--recall-pairs", "40"});
  expect_usage_error(kScalingStudy, {"--seeds", "-1"});
  expect_usage_error(kScalingStudy, {"--seeds", "9223372036854775807"});
  expect_usage_error(kScalingStudy, {"--steps", "1000001"});
  // A repeated item would rerun the same runs and pool them as more seeds.
  expect_usage_error(kScalingStudy, {"--d-ks", "16,16,16"});
  expect_usage_error(kScalingStudy, {"--d-ks", "16,016"});
  expect_usage_error(kScalingStudy, {"--modes", "inv_sqrt_dk,none,none"});
  expect_usage_error(kScalingStudy, {"--tasks", "reverse,reverse"});
  expect_usage_error(kScalingStudy, {"--parts", "train,B"});
}

// --modes reads a mode's value as --scale reads it, naming a bad one (const:1e40 and const:nan
// were "unknown arm", const:1e-45 trained), before anything runs. (The library's modes alone
// are no longer refused: figures draw every arm trained, study_arms_drawn_test.cpp.)
TEST_F(StudyProgramTest, ModesAreReadAsScaleIs) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"inv_sqrt_dk,const:1e-45", "below float32's smallest normal number"},
      {"inv_sqrt_dk,const:1e40", "const:1e40"},
      {"inv_sqrt_dk,const:nan", "const:nan"}};
  for (const auto& [modes, message] : cases) {
    SCOPED_TRACE(modes);
    const Result r =
        run(kScalingStudy, {"--parts", "train", "--tasks", "reverse", "--d-ks", "8", "--modes",
                            modes, "--seeds", "1", "--steps", "4", "--out", path("s")});
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_EQ(lines(r.err), 1u) << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("unknown arm"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(path("s")));
  }
}

TEST_F(StudyProgramTest, SizesThatCannotFitAreRefusedBeforeRunning) {
  // Attention over 2,048 keys at d_k 4096, two runs at once: tens of GiB.
  Result r = run(kScalingStudy, {"--parts", "train", "--tasks", "recall", "--recall-pairs", "512",
                                 "--recall-keys", "4096", "--d-ks", "4096", "--out", path("big")});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("the study needs about"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(path("big") + "/report.md"));
}

// A study small enough for the sanitizer build: one mode, one seed, 4 steps.
std::vector<std::string> tiny_study(const std::string& out) {
  return {"--parts",     "train",   "--tasks", "reverse", "--d-ks", "8",     "--modes",
          "inv_sqrt_dk", "--seeds", "1",       "--steps", "4",      "--out", out};
}

TEST_F(StudyProgramTest, TheReportQuotesItsCommandLineAsAShellReadsIt) {
  const std::string out = path("a study's folder");
  ASSERT_EQ(run(kScalingStudy, tiny_study(out)).code, 0);
  const std::string report = read(out + "/report.md");
  EXPECT_NE(report.find("--steps 4 --out '" + path("a study") + "'\\''s folder'`"),
            std::string::npos)
      << report.substr(0, 400);
  // The train part ran, so the header gives its seeds (the other parts give theirs).
  EXPECT_NE(report.find("(seed 0, 1 training seed, "), std::string::npos) << report.substr(0, 400);
}

TEST_F(StudyProgramTest, AFolderHoldsOneStudyAndOverwriteReplacesIt) {
  const std::string out = path("one");
  ASSERT_EQ(run(kScalingStudy, tiny_study(out)).code, 0);
  Result again = run(kScalingStudy, tiny_study(out));
  EXPECT_EQ(again.code, 2);
  EXPECT_NE(again.err.find("already holds a study (report.md)"), std::string::npos) << again.err;
  EXPECT_NE(again.err.find("--overwrite"), std::string::npos) << again.err;
  // An older study's file that this one does not write: --overwrite removes
  // it once the new study is complete, so none stays beside it.
  std::ofstream(out + "/depth_metrics.csv") << "mode,norm_placement\n";
  const std::string old_report = read(out + "/report.md"), old_page = read(out + "/index.html");
  std::vector<std::string> args = tiny_study(out);
  args.push_back("--overwrite");
  Result replaced = run(kScalingStudy, args);
  ASSERT_EQ(replaced.code, 0) << replaced.err;
  EXPECT_NE(replaced.err.find("--overwrite: replaced the previous study"), std::string::npos)
      << replaced.err;
  EXPECT_TRUE(fs::exists(out + "/final_metrics.csv"));
  EXPECT_FALSE(fs::exists(out + "/depth_metrics.csv"));
  EXPECT_FALSE(fs::exists(out + "/.scaling_study.new"));
  EXPECT_NE(read(out + "/report.md"), old_report);  // its time and seconds differ
  EXPECT_NE(read(out + "/index.html"), old_page);   // and so does its page
}

// --overwrite keeps the old study whole until the new one is complete: a
// new run stopped half way leaves every old file as it was.
TEST_F(StudyProgramTest, AnInterruptedOverwriteLeavesTheOldStudy) {
  const std::string out = path("kept");
  ASSERT_EQ(run(kScalingStudy, tiny_study(out)).code, 0);
  const std::string report = read(out + "/report.md"), finals = read(out + "/final_metrics.csv");
  std::vector<std::string> args = tiny_study(out);
  args[args.size() - 3] = "100000";  // --steps: long enough to be stopped in training
  args.push_back("--overwrite");
  const pid_t pid = spawn(kScalingStudy, args);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  ::kill(pid, SIGTERM);
  const Result stopped = wait(pid);
  EXPECT_EQ(stopped.code, 128 + SIGTERM) << stopped.err;
  EXPECT_EQ(read(out + "/report.md"), report);
  EXPECT_EQ(read(out + "/final_metrics.csv"), finals);
  EXPECT_FALSE(fs::exists(out + "/.scaling_study.new"));
}

std::string read_text(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The study's page, DIR/index.html, checked as a file: well-formed and offline (html_check.h),
// and every figure (NAME.svg) report.md names is drawn in it once, the file's own drawing with
// the caption's link to the file. So is every SVG file of the folder: the report names them
// all under "Plots".
void expect_page_holds_every_figure(const std::string& dir) {
  ASSERT_TRUE(fs::is_regular_file(dir + "/index.html"));
  const std::string page = read_text(dir + "/index.html");
  const HtmlCheck c = check_html(page);
  EXPECT_TRUE(c.problems.empty()) << c.summary();
  const std::string report = read_text(dir + "/report.md");
  std::set<std::string> named;
  for (size_t end = report.find(".svg"); end != std::string::npos;
       end = report.find(".svg", end + 1)) {
    size_t start = end;
    while (start > 0 && (std::isalnum(static_cast<unsigned char>(report[start - 1])) ||
                         report[start - 1] == '_' || report[start - 1] == '-'))
      --start;
    named.insert(report.substr(start, end + 4 - start));
  }
  std::set<std::string> files;
  for (const fs::directory_entry& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".svg") files.insert(e.path().filename().string());
  EXPECT_EQ(named, files) << "report.md names a figure the folder does not hold, or omits one";
  ASSERT_FALSE(named.empty());
  size_t figures = 0;
  for (size_t at = page.find("<figure "); at != std::string::npos;
       at = page.find("<figure ", at + 1))
    ++figures;
  EXPECT_EQ(figures, named.size());
  for (const std::string& name : named) {
    const std::string caption = "<figcaption><a href=\"" + name + "\">" + name + "</a>";
    const size_t at = page.find(caption);
    ASSERT_NE(at, std::string::npos) << name << " is not a figure of the page";
    EXPECT_EQ(page.find(caption, at + 1), std::string::npos) << name << " is drawn twice";
    // The figure holds the file's drawing as it is, but for its ids, which the page prefixes
    // with the figure's own id (page/html.h's inline_svg) so two figures' ids never clash.
    const size_t figure = page.rfind("<figure ", at);
    const size_t id = page.find("id=\"", figure) + 4;
    const std::string prefix = page.substr(id, page.find('"', id) - id) + "-";
    std::string drawn = page.substr(figure, at - figure);
    for (size_t p = drawn.find(prefix); p != std::string::npos; p = drawn.find(prefix, p))
      drawn.erase(p, prefix.size());
    const std::string svg = read_text(dir + "/" + name);
    ASSERT_NE(svg.find("<svg"), std::string::npos) << name;
    EXPECT_NE(drawn.find(svg.substr(svg.find("<svg"))), std::string::npos)
        << name << ": its drawing is not the file's";
  }
}

TEST_F(StudyProgramTest, ASmallRunWritesItsReport) {
  const std::string out = path("study");
  Result r =
      run(kScalingStudy, {"--parts", "train,depth", "--tasks", "reverse", "--d-ks", "8", "--modes",
                          "inv_sqrt_dk,none", "--seeds", "2", "--steps", "10", "--out", out});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* file :
       {"report.md", "final_metrics.csv", "train_metrics.csv", "train_layers.csv",
        "depth_metrics.csv", "accuracy_curves.svg", "depth_gradients.svg"})
    EXPECT_TRUE(fs::is_regular_file(out + "/" + file)) << file;
  EXPECT_EQ(lines(read(out + "/final_metrics.csv")), 1u + 2 * 2);  // header, modes x seeds
  EXPECT_NE(r.out.find("report: " + out + "/report.md"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("page:   " + out + "/index.html"), std::string::npos) << r.out;
  expect_page_holds_every_figure(out);
}

// --full trains ten arms, two of which share a colour (inv_dk, and
// inv_2sqrt_dk dashed): every train figure must still draw them apart (the
// mechanism figure once put them in one panel, and --full failed after
// training, at its figures).
TEST_F(StudyProgramTest, TheFullArmsDrawEveryTrainFigure) {
  const std::string out = path("full");
  Result r = run(kScalingStudy, {"--full", "--parts", "train", "--d-ks", "16", "--seeds", "2",
                                 "--steps", "10", "--out", out});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::is_regular_file(out + "/entropy_and_logit_gradient.svg"));
  EXPECT_EQ(lines(read(out + "/final_metrics.csv")), 1u + 2 * 11 * 2);  // tasks x arms x seeds
}

// The study runs whole runs side by side, each on one thread: --threads
// changes how long it takes, never a number (docs/programs.md says so).
TEST_F(StudyProgramTest, TheThreadsChangeTheTimeNotTheNumbers) {
  std::vector<std::string> folders;
  for (const char* threads : {"1", "2"}) {
    folders.push_back(path(std::string("threads") + threads));
    Result r = run(kScalingStudy, {"--parts", "train,depth", "--tasks", "reverse", "--d-ks", "8",
                                   "--modes", "inv_sqrt_dk,none", "--seeds", "2", "--steps", "10",
                                   "--threads", threads, "--out", folders.back()});
    ASSERT_EQ(r.code, 0) << r.err;
  }
  for (const char* file :
       {"final_metrics.csv", "train_metrics.csv", "train_layers.csv", "depth_metrics.csv"}) {
    const std::string one = read(folders[0] + "/" + file);
    EXPECT_FALSE(one.empty()) << file;
    EXPECT_EQ(one, read(folders[1] + "/" + file)) << file;
  }
}

// Waits (up to two minutes) until `file` holds `text`; false if it never does.
bool wait_for_text(const std::string& file, const std::string& text) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream in(file);
    const std::string held((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (held.find(text) != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// The number after `prefix` in `text`, or -1.
long number_after(const std::string& text, const std::string& prefix) {
  const size_t at = text.find(prefix);
  return at == std::string::npos ? -1 : std::atol(text.c_str() + at + prefix.size());
}

// Before it starts the study says what it will run and how long that takes
// here; --estimate says only that, and writes nothing.
TEST_F(StudyProgramTest, TheEstimateFlagPrintsThePlanAndExits) {
  const std::string out = path("estimated");
  Result r = run(kScalingStudy, {"--estimate", "--out", out});
  ASSERT_EQ(r.code, 0) << r.err;
  // The default run's parts and their jobs: init's 11 arms x 5 d_k x 3 key
  // counts; train's 2 tasks x 2 d_k x 7 arms x 5 seeds and the 155 runs of
  // the seeds its criteria need beyond them (extra_seeds: 60 at each task's
  // d_k 256, 25 at reverse's d_k 16, 10 at recall's); sgd's 36 selection
  // runs (2 d_k x 3 arms x 3 rates x 2 seeds) and at most 80 compared (2
  // arms x 10 seeds at each d_k, clipped, at d_k 256 unclipped, and at the
  // common rate 0.1 where an arm's chosen one is not it); depth's 11 arms x
  // 2 norm placements x 4 depths.
  EXPECT_NE(r.out.find("plan: init 165 draw sets, train 295 runs, sgd 116 runs, depth 88 stacks "
                       "(664 jobs)\n"),
            std::string::npos)
      << r.out;
  const size_t estimate = r.out.find("\nestimate: about ");
  ASSERT_NE(estimate, std::string::npos) << r.out;
  const std::string line = r.out.substr(estimate + 1, r.out.find('\n', estimate + 1) - estimate);
  EXPECT_NE(line.find(" on 2 threads here ("), std::string::npos) << line;
  EXPECT_GT(number_after(line, "here ("), 0) << line;
  EXPECT_NE(line.find(" s of one thread at this machine's speed now; the calibration run took "),
            std::string::npos)
      << line;
  EXPECT_FALSE(fs::exists(out));
  r = run(kScalingStudy, {"--estimate", "--threads", "1", "--parts", "depth", "--out", out});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("plan: depth 88 stacks (88 jobs)\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" on 1 thread here ("), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(out));
}

// One progress line for the study: it counts each job of each part once,
// and ends with all of them.
TEST_F(StudyProgramTest, OneProgressLineCountsEveryJob) {
  const std::string out = path("counted");
  Result r =
      run(kScalingStudy, {"--parts", "train,depth", "--tasks", "reverse", "--d-ks", "8", "--modes",
                          "inv_sqrt_dk,none", "--seeds", "2", "--steps", "10", "--out", out});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("plan: train 4 runs, depth 88 stacks (92 jobs)\n"), std::string::npos)
      << r.out;
  // Plain lines (stderr is a file), the last after the last job, then the total.
  EXPECT_NE(r.err.find("job 92/92  work 100%  elapsed "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("\ndone: 92 of 92 jobs in "), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("/4 "), std::string::npos) << "a part's own bar: " << r.err;
  EXPECT_EQ(r.err.find("/80 "), std::string::npos) << "a part's own bar: " << r.err;
  size_t last = 0;  // the count never goes back
  for (size_t at = r.err.find("job "); at != std::string::npos; at = r.err.find("\njob ", at + 1)) {
    const long done = number_after(r.err.substr(at), "job ");
    EXPECT_GE(done, static_cast<long>(last)) << r.err;
    last = static_cast<size_t>(std::max(0L, done));
  }
}

// A flag no chosen part reads is named on stderr, in one line, and the
// run goes on; its value is checked only where it is used.
TEST_F(StudyProgramTest, FlagsThePartsDoNotUseAreNamedNotChecked) {
  Result r = run(kScalingStudy, {"--parts", "depth", "--recall-pairs", "40", "--recall-keys", "8",
                                 "--d-ks", "0", "--estimate"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err,
            "scaling_study: warning: --d-ks, --recall-pairs, --recall-keys are not used by the "
            "parts run here (depth); ignored\n");
  r = run(kScalingStudy,
          {"--parts", "train", "--tasks", "reverse", "--recall-pairs", "40", "--estimate"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err,
            "scaling_study: warning: --recall-pairs is not used by the parts run here (train; "
            "train without recall); ignored\n");
  // Where it is used, a bad value is still refused.
  expect_usage_error(kScalingStudy, {"--parts", "train", "--recall-pairs", "40", "--recall-keys",
                                     "8", "--estimate"});
  r = run(kScalingStudy, {"--parts", "train", "--tasks", "reverse", "--modes", "inv_sqrt_dk",
                          "--seeds", "1", "--estimate"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
}

// The length part measures at initialisation before its first job, outside
// the job runner: a signal there stops it as one in a job does.
TEST_F(StudyProgramTest, ASignalDuringTheLengthMeasurementsStopsLikeAnyOther) {
  for (int signal : {SIGTERM, SIGINT}) {
    const std::string out = path("length" + std::to_string(signal));
    const pid_t pid = spawn(kScalingStudy, {"--parts", "length", "--out", out});
    // The estimate is printed after the calibration, as the part starts.
    ASSERT_TRUE(wait_for_text(path("stdout"), "\nestimate: ")) << read(path("stderr"));
    ::kill(pid, signal);
    const Result r = wait(pid);
    EXPECT_EQ(r.code, 128 + signal) << r.err;
    EXPECT_EQ(r.killed_by, 0);
    const std::string name = signal == SIGTERM ? "SIGTERM" : "SIGINT";
    EXPECT_NE(r.err.find("scaling_study: interrupted by " + name + " in length (0 of "),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("done); nothing written to " + out + "\n"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("error:"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(out + "/report.md"));
  }
}

// A signal that comes while the report is written: the study is complete,
// but the run was asked to stop, and exit 0 would hide that.
TEST_F(StudyProgramTest, ASignalWhileTheReportIsWrittenIsNotExitZero) {
  const std::string out = path("written");
  // Holds the run once its report is written until a signal comes.
  ::setenv("GRADFLOW_STUDY_PAUSE_AFTER_REPORT", "120", 1);
  const pid_t pid = spawn(kScalingStudy, tiny_study(out));
  ::unsetenv("GRADFLOW_STUDY_PAUSE_AFTER_REPORT");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  while (!fs::exists(out + "/report.md") && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ::kill(pid, SIGTERM);
  const Result r = wait(pid);
  EXPECT_EQ(r.code, 128 + SIGTERM) << r.err;
  EXPECT_NE(r.err.find("scaling_study: interrupted by SIGTERM while writing the report; the study "
                       "in " +
                       out + " is complete\n"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(fs::exists(out + "/final_metrics.csv"));
}

}  // namespace
}  // namespace gradflow::testing
