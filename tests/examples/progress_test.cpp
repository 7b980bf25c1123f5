#include "examples/toolkit/cli/progress.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "tensor/error.h"

namespace gradflow::cli {
namespace {

// A clock the test moves by hand, so nothing sleeps and timings are exact.
struct FakeClock {
  double now = 0;
  Clock fn() {
    return [this] { return now; };
  }
};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

size_t redraws(const std::string& text) { return std::count(text.begin(), text.end(), '\r'); }

TEST(FormatDuration, UsesTheTwoLargestUnits) {
  EXPECT_EQ(format_duration(0), "0s");
  EXPECT_EQ(format_duration(59.9), "59s");
  EXPECT_EQ(format_duration(60), "1m00s");
  EXPECT_EQ(format_duration(83), "1m23s");
  EXPECT_EQ(format_duration(3599), "59m59s");
  EXPECT_EQ(format_duration(3600), "1h00m");
  EXPECT_EQ(format_duration(2 * 3600 + 3 * 60 + 59), "2h03m");
  EXPECT_EQ(format_duration(86400 + 3600), "1d01h");
  EXPECT_EQ(format_duration(-1), "--");
  EXPECT_EQ(format_duration(std::nan("")), "--");
  EXPECT_EQ(format_duration(HUGE_VAL), "--");
}

TEST(Progress, PlainLineShowsRateElapsedEtaAndText) {
  FakeClock clock;
  std::ostringstream out;
  Progress p(100, out, {.tty = false, .clock = clock.fn()});
  clock.now = 10;
  p.update(50, "loss 1.234");
  EXPECT_EQ(out.str(), "step 50/100 50%  5.0 steps/s  elapsed 10s  eta 10s  loss 1.234\n");
}

TEST(Progress, PlainModePrintsEveryTenPercentWhenFast) {
  FakeClock clock;
  std::ostringstream out;
  Progress p(100, out, {.tty = false, .clock = clock.fn()});
  for (int step = 1; step <= 100; ++step) {
    clock.now = step * 0.01;  // one second for the whole run
    p.update(step, "loss 0.5");
  }
  std::vector<std::string> lines = lines_of(out.str());
  ASSERT_EQ(lines.size(), 10u) << out.str();
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string head = "step " + std::to_string((i + 1) * 10) + "/100 ";
    EXPECT_EQ(lines[i].rfind(head, 0), 0u) << lines[i];
  }
  EXPECT_EQ(out.str().find('\r'), std::string::npos);
  EXPECT_EQ(out.str().find('\x1b'), std::string::npos);
}

TEST(Progress, PlainModePrintsEveryTenSecondsWhenSlow) {
  FakeClock clock;
  std::ostringstream out;
  Progress p(1000, out, {.tty = false, .clock = clock.fn()});
  for (int step = 1; step <= 1000; ++step) {
    clock.now = step;  // one second per step: 10% takes 100 s
    p.update(step);
  }
  std::vector<std::string> lines = lines_of(out.str());
  ASSERT_EQ(lines.size(), 100u);
  EXPECT_EQ(lines[0], "step 10/1000 1%  1.0 steps/s  elapsed 10s  eta 16m30s");
  EXPECT_EQ(lines[1].rfind("step 20/1000 2%", 0), 0u);
  EXPECT_EQ(lines.back(), "step 1000/1000 100%  1.0 steps/s  elapsed 16m40s  eta 0s");
}

TEST(Progress, PlainModeAlwaysPrintsTheLastStepOnce) {
  FakeClock clock;
  std::ostringstream out;
  Progress p(1000, out, {.tty = false, .clock = clock.fn()});
  p.update(1);  // nothing yet: neither 10% nor 10 s
  EXPECT_EQ(out.str(), "");
  p.update(1000);
  p.update(1000);
  EXPECT_EQ(lines_of(out.str()).size(), 1u);
  p.finish("loss 0.1");
  EXPECT_EQ(lines_of(out.str()).back(), "done 1000/1000 in 0s  -- steps/s  loss 0.1");
}

TEST(Progress, TerminalRedrawsOneLineAtMostTenTimesASecond) {
  FakeClock clock;
  std::ostringstream out;
  Progress p(100, out, {.tty = true, .clock = clock.fn(), .columns = 200});
  clock.now = 10;
  p.update(50, "loss 1.234");
  EXPECT_EQ(out.str(),
            "\r[##########----------] 50/100 50%  5.0 steps/s  10s eta 10s  loss 1.234\x1b[K");
  clock.now = 10.05;
  p.update(51);  // too soon: skipped
  EXPECT_EQ(redraws(out.str()), 1u);
  clock.now = 10.2;
  p.update(52);
  EXPECT_EQ(redraws(out.str()), 2u);
  p.update(100);  // the last step draws regardless of time
  EXPECT_EQ(redraws(out.str()), 3u);
  EXPECT_EQ(out.str().find('\n'), std::string::npos);
  clock.now = 20;
  p.finish("loss 0.5");
  std::string s = out.str();
  EXPECT_EQ(s.substr(s.rfind('\r')), "\rdone 100/100 in 20s  5.0 steps/s  loss 0.5\x1b[K\n");
  p.update(100, "ignored after finish");
  p.finish();
  EXPECT_EQ(out.str(), s);
}

TEST(Progress, TerminalLineFitsTheWidthShrinkingTheBarFirst) {
  FakeClock clock;
  std::ostringstream narrow, tiny;
  Progress p(10, narrow, {.tty = true, .clock = clock.fn(), .columns = 50});
  Progress q(10, tiny, {.tty = true, .clock = clock.fn(), .columns = 40});
  clock.now = 1;
  p.update(5);  // one column spare, so the terminal never wraps
  EXPECT_EQ(narrow.str(), "\r[#######-------] 5/10 50%  5.0 steps/s  1s eta 1s\x1b[K");
  q.update(5, "loss " + std::string(100, '9'));
  std::string s = tiny.str();
  EXPECT_EQ(s.substr(0, 40), "\r5/10 50%  5.0 steps/s  1s eta 1s  loss ");
  EXPECT_EQ(s.find("\x1b[K"), 40u);
}

TEST(Progress, NotesKeepTheBarIntactAndDestructorEndsTheLine) {
  FakeClock clock;
  std::ostringstream out;
  {
    Progress p(10, out, {.tty = true, .clock = clock.fn(), .columns = 200});
    p.update(1);
    size_t before = out.str().size();
    p.note("eval\nacc 0.9");
    std::string after = out.str().substr(before);
    EXPECT_EQ(after.rfind("\r\x1b[Keval acc 0.9\n\r[##", 0), 0u) << after;
  }
  EXPECT_EQ(out.str().back(), '\n');

  std::ostringstream plain;
  {
    Progress p(10, plain, {.tty = false, .clock = clock.fn()});
    p.update(1);
    p.note("eval acc 0.9");
  }
  EXPECT_EQ(plain.str(), "step 1/10 10%  -- steps/s  elapsed 0s  eta --\neval acc 0.9\n");
}

TEST(Progress, ResumedRunCountsRateFromItsStartStep) {
  FakeClock clock;
  std::ostringstream out;
  Progress p(1000, out, {.tty = false, .clock = clock.fn(), .start_step = 500});
  clock.now = 10;
  p.update(600, "loss\t2");
  EXPECT_EQ(out.str(), "step 600/1000 60%  10.0 steps/s  elapsed 10s  eta 40s  loss 2\n");
}

TEST(Progress, SlowStepsShowSecondsPerStep) {
  FakeClock clock;
  std::ostringstream out;
  Progress p(10, out, {.tty = false, .clock = clock.fn()});
  clock.now = 4;
  p.update(1);
  EXPECT_EQ(out.str(), "step 1/10 10%  4.0 s/step  elapsed 4s  eta 36s\n");
}

TEST(Progress, DetectsNonTerminalsAndRejectsBadTotals) {
  std::ostringstream out;
  EXPECT_FALSE(Progress(10, out).is_tty());
  EXPECT_THROW(Progress(0, out), Error);
  EXPECT_THROW(Progress(10, out, {.start_step = 11}), Error);
  EXPECT_THROW(Progress(10, out, {.unit = ""}), Error);
}

// A caller counting something else than steps says so, in both modes and in
// the final line; the plural is unit + "s" unless given.
TEST(Progress, NamesTheUnitItCounts) {
  FakeClock clock;
  std::ostringstream plain, fast, tty, odd;
  Progress runs(126, plain, {.unit = "run", .tty = false, .clock = clock.fn()});
  Progress draws(1000, fast, {.unit = "draw", .tty = false, .clock = clock.fn()});
  Progress bar(126, tty, {.unit = "run", .tty = true, .clock = clock.fn(), .columns = 200});
  Progress queries(1000, odd,
                   {.unit = "query", .units = "queries", .tty = false, .clock = clock.fn()});
  clock.now = 40;
  runs.update(13, "part B");
  draws.update(100);
  bar.update(13);
  queries.update(100);
  EXPECT_EQ(plain.str(), "run 13/126 10%  3.1 s/run  elapsed 40s  eta 5m47s  part B\n");
  EXPECT_EQ(fast.str(), "draw 100/1000 10%  2.5 draws/s  elapsed 40s  eta 6m00s\n");
  EXPECT_EQ(tty.str(), "\r[##------------------] 13/126 10%  3.1 s/run  40s eta 5m47s\x1b[K");
  EXPECT_EQ(odd.str(), "query 100/1000 10%  2.5 queries/s  elapsed 40s  eta 6m00s\n");
  clock.now = 50;
  draws.update(1000);
  draws.finish();
  EXPECT_EQ(lines_of(fast.str()).back(), "done 1000/1000 in 50s  20.0 draws/s");
}

// A rate over a moment measures the clock, not the work: a first update
// right after construction once showed "914913 steps/s". Until 0.5 s have
// passed the rate and the ETA say "--".
TEST(Progress, ShowsNoRateUntilHalfASecondHasPassed) {
  FakeClock clock;
  std::ostringstream first, later, tty;
  Progress p(126, first, {.unit = "run", .tty = false, .clock = clock.fn()});
  Progress q(100, later, {.tty = false, .clock = clock.fn()});
  Progress t(100, tty, {.tty = true, .clock = clock.fn(), .columns = 200});
  clock.now = 1e-6;
  p.update(13);  // a 10% boundary: printed at once
  t.update(1);
  EXPECT_EQ(first.str(), "run 13/126 10%  -- runs/s  elapsed 0s  eta --\n");
  EXPECT_EQ(tty.str(), "\r[--------------------] 1/100 1%  -- steps/s  0s eta --\x1b[K");
  clock.now = 0.49;
  q.update(10);
  EXPECT_EQ(later.str(), "step 10/100 10%  -- steps/s  elapsed 0s  eta --\n");
  clock.now = 0.5;
  q.update(20);
  EXPECT_EQ(lines_of(later.str()).back(), "step 20/100 20%  40.0 steps/s  elapsed 0s  eta 2s");
}

// An 80-column terminal and the text a training program shows after an
// evaluation ("loss ...  val_loss ...  accuracy ..."): the bar stays whole
// and the line ends at a field, never inside a number; the dropped fields
// are the evaluation's, which the program also prints as a note.
TEST(Progress, EightyColumnsKeepTheBarAndWholeFields) {
  FakeClock clock;
  std::ostringstream out, wide;
  Progress p(1000, out, {.tty = true, .clock = clock.fn(), .columns = 80});
  Progress q(1000, wide, {.tty = true, .clock = clock.fn(), .columns = 120});
  clock.now = 9.9;
  const std::string text = "loss 0.001704  val_loss 0.001514  accuracy 0.9998";
  p.update(560, text);
  q.update(560, text);
  EXPECT_EQ(out.str(),
            "\r[###########---------] 560/1000 56%  56.6 steps/s  9s eta 7s  loss 0.001704\x1b[K");
  EXPECT_EQ(wide.str(),
            "\r[###########---------] 560/1000 56%  56.6 steps/s  9s eta 7s  " + text + "\x1b[K");
  // seq2seq's four fields: as many as fit beside a bar of at least 10 columns.
  clock.now = 100;
  p.update(999, "loss 0.01  val_loss 0.02  token_acc 0.99  seq_acc 0.9");
  std::string s = out.str().substr(out.str().rfind('\r'));
  EXPECT_EQ(s,
            "\r[#########-] 999/1000 99%  10.0 steps/s  1m40s eta 0s  loss 0.01  "
            "val_loss 0.02\x1b[K");
  EXPECT_LE(s.size() - 1 - 3, 79u);  // without '\r' and the escape code
  // The final line is not redrawn, so it is printed whole even if it wraps.
  p.finish("loss 0.0008434  val_loss 0.0008516  accuracy 1  and more to say");
  EXPECT_EQ(out.str().substr(out.str().rfind('\r')),
            "\rdone 999/1000 in 1m40s  10.0 steps/s  loss 0.0008434  val_loss 0.0008516  "
            "accuracy 1  and more to say\x1b[K\n");
}

// Every redraw on an 80-column terminal, whatever the run's size and speed
// and however long the text after an evaluation: the line stays within 79
// columns (the last would wrap), starts with a bar of at least 10 columns and
// keeps the loss whole.
TEST(Progress, EveryLineFitsEightyColumnsWithItsBar) {
  const std::string loss = "loss 0.0001234";
  const std::string evaluation =
      "  val_loss 0.0001514  token_acc 0.9998  seq_acc 0.9961  perplexity 1.0001  "
      "a_metric_with_a_long_name 123456.7";
  int lines = 0;
  for (int64_t total : {10, 400, 2000, 123456, 1000000}) {
    for (double seconds_per_step : {1e-4, 0.02, 3.0, 400.0}) {
      FakeClock clock;
      std::ostringstream out;
      Progress p(total, out,
                 {.tty = true, .clock = clock.fn(), .redraw_interval = 0, .columns = 80});
      for (int64_t step : {int64_t{1}, total / 3, total - 1, total}) {
        if (step < 1) continue;
        clock.now = seconds_per_step * static_cast<double>(step);
        const size_t before = out.str().size();
        p.update(step, loss + evaluation);
        std::string line = out.str().substr(before);
        ASSERT_EQ(line.rfind('\r', 0), 0u) << line;
        ASSERT_EQ(line.substr(line.size() - 3), "\x1b[K") << line;
        line = line.substr(1, line.size() - 4);
        SCOPED_TRACE(line);
        EXPECT_LE(line.size(), 79u);
        ASSERT_EQ(line[0], '[');
        const size_t close = line.find("] ");
        ASSERT_NE(close, std::string::npos);
        EXPECT_GE(close - 1, 10u);
        EXPECT_EQ(line.find_first_not_of("#-", 1), close);
        EXPECT_NE(line.find("  " + loss), std::string::npos);
        ++lines;
      }
    }
  }
  EXPECT_EQ(lines, 80);
}

}  // namespace
}  // namespace gradflow::cli
