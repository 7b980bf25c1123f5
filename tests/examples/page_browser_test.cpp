// The pages as a person opens them: each program writes index.html in its run folder, a page
// well-formed and offline (html_check.h) that holds its figures, and a real browser opens it
// from file:// with no script error and with its slider working. The browser is Debian's
// chromium (.ci/setup installs it), run headless; without one those tests are skipped, saying
// why. One page load each: a few seconds.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "nn/io/atomic_file.h"
#include "tests/examples/html_check.h"
#include "tests/examples/run_program.h"

namespace gradflow::testing {
namespace {

namespace fs = std::filesystem;

const std::string kScriptText = "<script>alert(1)</script>";
const std::string kScriptEscaped = "&lt;script&gt;alert(1)&lt;/script&gt;";

size_t count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// The first of chromium, chromium-browser, google-chrome on PATH, or "".
std::string find_browser() {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "";
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
    size_t from = 0;
    while (from <= dirs.size()) {
      size_t end = dirs.find(':', from);
      if (end == std::string::npos) end = dirs.size();
      const fs::path candidate = fs::path(dirs.substr(from, end - from)) / name;
      if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
      from = end + 1;
    }
  }
  return "";
}

// The fill of each attention cell in the figure with this id, in order.
std::vector<std::string> cell_fills(const std::string& html, const std::string& id) {
  std::vector<std::string> fills;
  const size_t start = html.find("id=\"" + id + "\"");
  const size_t end = html.find("</svg>", start);
  for (size_t at = html.find("class=\"cell\"", start); at < end;
       at = html.find("class=\"cell\"", at + 1)) {
    const size_t fill = html.find("fill=\"", at);
    fills.push_back(html.substr(fill + 6, 7));
  }
  return fills;
}

class PageTest : public ProgramTest {
 protected:
  // What the browser made of the page: its DOM once the script ran, and what it logged.
  struct Opened {
    std::string dom, log;
  };
  Opened open_in_browser(const std::string& browser, const std::string& page,
                         const std::string& fragment = "") {
    const std::string url = "file://" + fs::absolute(page).string() + fragment;
    const pid_t pid =
        spawn(browser, {"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                        "--user-data-dir=" + path("browser-profile"), "--enable-logging=stderr",
                        "--v=0", "--virtual-time-budget=5000", "--dump-dom", url});
    // A browser that hangs fails the test rather than the suite.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
    int status = 0;
    while (::waitpid(pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        ADD_FAILURE() << browser << " did not finish loading " << url << " in 90 s";
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return {read(path("stdout")), read(path("stderr"))};
  }

  // Every message the page's scripts logged, script errors among them ("Uncaught ...").
  static std::string console_lines(const std::string& log) {
    std::string out;
    size_t from = 0;
    while (from < log.size()) {
      size_t end = log.find('\n', from);
      if (end == std::string::npos) end = log.size();
      const std::string line = log.substr(from, end - from);
      if (line.find(":CONSOLE") != std::string::npos) out += line + "\n";
      from = end + 1;
    }
    return out;
  }

  // The page of `seq2seq --steps 30 --eval-every 10`, checked as a file.
  std::string seq2seq_page() {
    const Result r = run(kSeq2seq, {"--steps", "30", "--eval-every", "10", "--out", path("run")});
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find(path("run") + "/index.html"), std::string::npos) << r.out;  // "wrote"
    const std::string html = read(path("run/index.html"));
    const HtmlCheck c = check_html(html);
    EXPECT_TRUE(c.problems.empty()) << c.summary();
    for (const char* id : {"curves-figure", "attention-gradients-figure", "map-0", "map-5",
                           "attention-step", "graph-0"})
      EXPECT_TRUE(c.ids.count(id)) << id;
    EXPECT_NE(html.find("{\"steps\": [10,20,30]"), std::string::npos);
    EXPECT_LT(html.size(), 3u << 20);
    return html;
  }

  // A charlm run on a corpus of lines "<script>alert(1)</script>", sampled from that prompt.
  std::string charlm_page() {
    std::string corpus;
    for (int i = 0; i < 200; ++i) corpus += kScriptText + "\n";
    write_file_atomic(path("corpus.txt"), corpus);
    std::vector<std::string> args = kTiny;
    args.insert(args.end(), {"--text", path("corpus.txt"), "--context", "16", "--steps", "4",
                             "--eval-every", "2", "--eval-batches", "1", "--prompt", kScriptText,
                             "--sample-tokens", "20", "--out", path("run")});
    const Result r = run(kCharlm, args);
    EXPECT_EQ(r.code, 0) << r.err;
    const std::string html = read(path("run/index.html"));
    const HtmlCheck c = check_html(html);
    EXPECT_TRUE(c.problems.empty()) << c.summary();
    EXPECT_EQ(c.elements.at("script"), 2);  // the page's and its data: none from the corpus
    EXPECT_EQ(html.find(kScriptText), std::string::npos);
    EXPECT_GE(count(html, kScriptEscaped), 2u);  // the command's --prompt, and each sample
    return html;
  }
};

TEST_F(PageTest, Seq2seqLeavesAPageWithCurvesMapsAndTheGraph) { seq2seq_page(); }

TEST_F(PageTest, CharlmShowsACorpusHoldingAScriptAsText) { charlm_page(); }

// A page opened while the run trains shows it so far and reloads itself; stopped, the run
// leaves a page that says how it ended and no longer reloads.
TEST_F(PageTest, APageOpenedDuringTrainingShowsTheRunSoFarAndReloads) {
  const std::string out = path("live"), page = out + "/index.html";
  const pid_t pid = spawn(
      kSeq2seq, {"--steps", "1000000", "--eval-every", "5", "--save-every", "0", "--out", out});
  // The page of the first evaluation: written at the start, then at each evaluation.
  std::string html;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (html.find("\"steps\": [5") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    html = read(page);  // whole or absent: it is written atomically
  }
  ::kill(pid, SIGTERM);
  const Result stopped = wait(pid);
  EXPECT_EQ(stopped.code, 128 + SIGTERM) << stopped.err;
  ASSERT_NE(html.find("\"steps\": [5"), std::string::npos) << "no evaluation on the page in 60 s";
  const HtmlCheck live = check_html(html);
  EXPECT_TRUE(live.problems.empty()) << live.summary();
  EXPECT_NE(html.find("<meta http-equiv=\"refresh\" content=\"15\"/>"), std::string::npos);
  EXPECT_NE(html.find("<span class=\"live\">Running</span>: step "), std::string::npos);
  EXPECT_TRUE(live.ids.count("map-0"));
  const std::string last = read(page);
  EXPECT_TRUE(check_html(last).problems.empty());
  EXPECT_EQ(last.find("http-equiv=\"refresh\""), std::string::npos);
  EXPECT_NE(last.find("Interrupted (SIGTERM): step "), std::string::npos);
}

TEST_F(PageTest, EveryTrainingProgramWritesItsPage) {
  for (const ListedProgram& p : programs_of_kind("training")) {
    const std::string out = path(p.name);
    std::vector<std::string> args = tiny_run_args(p.name, out, "2");
    const Result r = run(p.path, args);
    ASSERT_EQ(r.code, 0) << p.name << "\n" << r.err;
    const HtmlCheck c = check_html(read(out + "/index.html"));
    EXPECT_TRUE(c.problems.empty()) << p.name << "\n" << c.summary();
    EXPECT_TRUE(c.ids.count("curves-figure")) << p.name;
    EXPECT_TRUE(c.ids.count("map-0")) << p.name;  // the last step is evaluated
    EXPECT_TRUE(c.ids.count("graph-0")) << p.name;
  }
}

TEST_F(PageTest, ABrowserOpensTheRunsPageAndItsSliderChangesTheMap) {
  const std::string browser = find_browser();
  if (browser.empty())
    GTEST_SKIP() << "no headless browser to open the pages with: chromium, chromium-browser or "
                    "google-chrome on PATH (Debian: apt-get install chromium; .ci/setup does)";
  const std::string html = seq2seq_page();
  // Evaluation 0 of 3 asked for in the address: the script moves the slider there, as a
  // person would, and the map it shows is step 10's, not the file's step 30.
  const Opened opened = open_in_browser(browser, path("run/index.html"), "#map=0");
  EXPECT_EQ(console_lines(opened.log), "");
  EXPECT_NE(opened.dom.find("data-script=\"ran\""), std::string::npos) << opened.log;
  EXPECT_NE(opened.dom.find("after step 10 (evaluation 1 of 3)"), std::string::npos);
  const std::vector<std::string> shown = cell_fills(opened.dom, "map-0"),
                                 written = cell_fills(html, "map-0");
  ASSERT_FALSE(written.empty());
  EXPECT_EQ(shown.size(), written.size());
  EXPECT_NE(shown, written);
  for (const char* figure : {"id=\"curves-figure\"", "id=\"graph-0\"", "class=\"curve\""})
    EXPECT_NE(opened.dom.find(figure), std::string::npos) << figure;
}

TEST_F(PageTest, ABrowserShowsACorpusScriptAsTextAndRunsNoneOfIt) {
  const std::string browser = find_browser();
  if (browser.empty()) GTEST_SKIP() << "no headless browser (chromium) on PATH";
  charlm_page();
  const Opened opened = open_in_browser(browser, path("run/index.html"));
  EXPECT_EQ(console_lines(opened.log), "");
  EXPECT_NE(opened.dom.find("data-script=\"ran\""), std::string::npos) << opened.log;
  EXPECT_EQ(count(opened.dom, "<script"), 2u);
  EXPECT_NE(opened.dom.find(kScriptEscaped), std::string::npos);
}

// The page a small study leaves (scaling_study writes it after report.md): its figures, the
// curves' legends and the verdict table, with no script error.
TEST_F(PageTest, ABrowserOpensTheStudysPage) {
  const std::string browser = find_browser();
  if (browser.empty()) GTEST_SKIP() << "no headless browser (chromium) on PATH";
  const Result r = run(
      kScalingStudy, {"--parts", "train", "--tasks", "reverse", "--d-ks", "8", "--modes",
                      "inv_sqrt_dk,none", "--seeds", "1", "--steps", "4", "--out", path("study")});
  ASSERT_EQ(r.code, 0) << r.err;
  const Opened opened = open_in_browser(browser, path("study/index.html"));
  EXPECT_EQ(console_lines(opened.log), "");
  EXPECT_NE(opened.dom.find("data-script=\"ran\""), std::string::npos) << opened.log;
  for (const char* figure : {"id=\"fig-loss-curves-svg\"", "id=\"fig-attention-maps-svg\"",
                             "class=\"legend-entry\"", "class=\"verdict-"})
    EXPECT_NE(opened.dom.find(figure), std::string::npos) << figure;
}

}  // namespace
}  // namespace gradflow::testing
