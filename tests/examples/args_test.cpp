#include "examples/toolkit/cli/args.h"

#include <gtest/gtest.h>

#include <sstream>
#include <stdexcept>

namespace gradflow::cli {
namespace {

// The options of a typical training program, with their defaults.
struct Seq2Seq {
  int64_t steps = 1500;
  int heads = 4;
  int offset = 0;
  double lr = 1e-3;
  std::string scale = "inv_sqrt_dk";
  std::string task = "reverse";
  bool full = false;
  std::string file;
  ArgParser args{"seq2seq", "Train an encoder-decoder transformer on a toy task."};

  Seq2Seq() {
    args.add("--steps", &steps, "training steps").min(1);
    args.add("--heads", &heads, "attention heads").min(1).max(64);
    args.add("--offset", &offset, "index offset");
    args.add("--lr", &lr, "peak learning rate").above(0);
    args.add("--scale", &scale, "attention scale mode");
    args.add_choice("--task", &task, {"copy", "reverse", "sort", "add"}, "toy task");
    args.add_flag("--full", &full, "run the long version");
    args.add_positional("FILE", &file, "checkpoint to start from");
  }
  void parse(const std::vector<std::string>& argv) { args.parse(argv); }
};

// The UsageError message of parsing `argv`, or a test failure if it parses.
std::string error_of(const std::vector<std::string>& argv) {
  Seq2Seq s;
  try {
    s.parse(argv);
  } catch (const UsageError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no UsageError";
  return "";
}

TEST(ArgParser, DefaultsStayWhenFlagsAreAbsent) {
  Seq2Seq s;
  s.parse({});
  EXPECT_EQ(s.steps, 1500);
  EXPECT_EQ(s.heads, 4);
  EXPECT_DOUBLE_EQ(s.lr, 1e-3);
  EXPECT_EQ(s.scale, "inv_sqrt_dk");
  EXPECT_EQ(s.task, "reverse");
  EXPECT_FALSE(s.full);
  EXPECT_EQ(s.file, "");
  EXPECT_FALSE(s.args.seen("--steps"));
}

TEST(ArgParser, AcceptsSpaceAndEqualsForms) {
  Seq2Seq s;
  s.parse({"--steps", "10", "--heads=8", "--lr=0.5", "--scale", "none", "--task=sort", "--full",
           "model.ckpt"});
  EXPECT_EQ(s.steps, 10);
  EXPECT_EQ(s.heads, 8);
  EXPECT_DOUBLE_EQ(s.lr, 0.5);
  EXPECT_EQ(s.scale, "none");
  EXPECT_EQ(s.task, "sort");
  EXPECT_TRUE(s.full);
  EXPECT_EQ(s.file, "model.ckpt");
  EXPECT_TRUE(s.args.seen("--steps"));
  EXPECT_FALSE(s.args.seen("--offset"));
}

TEST(ArgParser, LastOccurrenceWinsAndValuesMayLookNegative) {
  Seq2Seq s;
  s.parse({"--steps=5", "--steps", "7", "--offset", "-3", "--lr", "+2e-4", "--scale="});
  EXPECT_EQ(s.steps, 7);
  EXPECT_EQ(s.offset, -3);
  EXPECT_DOUBLE_EQ(s.lr, 2e-4);
  EXPECT_EQ(s.scale, "");
}

TEST(ArgParser, IntegersAreStrict) {
  EXPECT_EQ(error_of({"--steps", "12abc"}), R"(--steps: expected an integer, got "12abc")");
  EXPECT_EQ(error_of({"--steps="}), R"(--steps: expected an integer, got "")");
  EXPECT_EQ(error_of({"--steps", "1.5"}), R"(--steps: expected an integer, got "1.5")");
  EXPECT_EQ(error_of({"--steps", "1e3"}), R"(--steps: expected an integer, got "1e3")");
  EXPECT_EQ(error_of({"--steps", " 12"}), R"(--steps: expected an integer, got " 12")");
  EXPECT_EQ(error_of({"--steps", "0x10"}), R"(--steps: expected an integer, got "0x10")");
  EXPECT_EQ(error_of({"--offset", "+-5"}), R"(--offset: expected an integer, got "+-5")");
  EXPECT_EQ(error_of({"--steps", "99999999999999999999"}),
            R"(--steps: integer out of range, got "99999999999999999999")");
  EXPECT_EQ(error_of({"--heads", "3000000000"}),
            R"(--heads: integer out of range, got "3000000000")");
}

TEST(ArgParser, FloatsAreStrictAndFinite) {
  EXPECT_EQ(error_of({"--lr", "abc"}), R"(--lr: expected a number, got "abc")");
  EXPECT_EQ(error_of({"--lr", "1e-3x"}), R"(--lr: expected a number, got "1e-3x")");
  EXPECT_EQ(error_of({"--lr", ""}), R"(--lr: expected a number, got "")");
  EXPECT_EQ(error_of({"--lr", "1e999"}), R"(--lr: number out of range, got "1e999")");
  EXPECT_EQ(error_of({"--lr", "nan"}), R"(--lr: expected a finite number, got "nan")");
  EXPECT_EQ(error_of({"--lr", "inf"}), R"(--lr: expected a finite number, got "inf")");
}

TEST(ArgParser, RangesAreInclusiveExceptAbove) {
  EXPECT_EQ(error_of({"--steps", "0"}), "--steps: must be >= 1, got 0");
  EXPECT_EQ(error_of({"--heads", "65"}), "--heads: must be <= 64, got 65");
  EXPECT_EQ(error_of({"--lr", "0"}), "--lr: must be > 0, got 0");
  EXPECT_EQ(error_of({"--lr", "-1e-3"}), "--lr: must be > 0, got -1e-3");
  Seq2Seq s;
  s.parse({"--steps", "1", "--heads", "64", "--lr", "1e-300"});
  EXPECT_EQ(s.steps, 1);
  EXPECT_EQ(s.heads, 64);
}

TEST(ArgParser, ChoicesAndFlags) {
  EXPECT_EQ(error_of({"--task", "revers"}),
            R"(--task: invalid choice "revers" (choose from copy, reverse, sort, add))");
  EXPECT_EQ(error_of({"--full=maybe"}), R"(--full: expected true or false, got "maybe")");
  Seq2Seq s;
  s.full = true;
  s.parse({"--full=false"});
  EXPECT_FALSE(s.full);
  // A flag takes no separate value, so the next word is a positional.
  Seq2Seq t;
  t.parse({"--full", "false"});
  EXPECT_TRUE(t.full);
  EXPECT_EQ(t.file, "false");
}

TEST(ArgParser, UnknownOptionsAndMissingValues) {
  EXPECT_EQ(error_of({"--stpes", "5"}), "unknown option --stpes (did you mean --steps?)");
  EXPECT_EQ(error_of({"--bogus=3"}), "unknown option --bogus (see --help)");
  EXPECT_EQ(error_of({"-x"}), "unknown option -x (see --help)");
  EXPECT_EQ(error_of({"--FILE", "a"}), "unknown option --FILE (see --help)");
  EXPECT_EQ(error_of({"--steps"}), "--steps: missing value");
  EXPECT_EQ(error_of({"--steps", "--lr", "1"}), "--steps: missing value");
}

TEST(ArgParser, CustomChecksMayThrowAnything) {
  int heads = 4;
  std::string name = "x";
  ArgParser args("prog", "");
  args.add("--heads", &heads, "heads").check([](int h) {
    if ((h & (h - 1)) != 0) throw UsageError("must be a power of two");
  });
  args.add("--name", &name, "name").check([](const std::string& n) {
    if (n.empty()) throw std::invalid_argument("must not be empty");
  });
  args.parse(std::vector<std::string>{"--heads", "8", "--name", "y"});
  EXPECT_EQ(heads, 8);
  EXPECT_EQ(name, "y");
  try {
    args.parse(std::vector<std::string>{"--heads", "6"});
    ADD_FAILURE() << "no UsageError";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "--heads: must be a power of two");
  }
  EXPECT_EQ(heads, 8) << "a rejected value must not be stored";
  EXPECT_THROW(args.parse(std::vector<std::string>{"--name="}), UsageError);
}

TEST(ArgParser, Positionals) {
  EXPECT_EQ(error_of({"a", "b"}), R"(unexpected argument "b")");
  Seq2Seq s;
  s.parse({"--", "-weird-name"});
  EXPECT_EQ(s.file, "-weird-name");

  std::string in;
  std::vector<std::string> more;
  ArgParser args("inspect_checkpoint", "Print a checkpoint.");
  args.add_positional("FILE", &in, "checkpoint").required();
  args.add_positional("MORE", &more, "further checkpoints");
  try {
    args.parse(std::vector<std::string>{});
    ADD_FAILURE() << "no UsageError";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "missing argument FILE");
  }
  args.parse(std::vector<std::string>{"a.ckpt", "b.ckpt", "-", "c.ckpt"});
  EXPECT_EQ(in, "a.ckpt");
  EXPECT_EQ(more, (std::vector<std::string>{"b.ckpt", "-", "c.ckpt"}));
  EXPECT_NE(args.help().find("usage: inspect_checkpoint [options] FILE [MORE...]"),
            std::string::npos);
}

TEST(ArgParser, HelpListsEveryOptionWithItsDefault) {
  Seq2Seq s;
  std::string help = s.args.help();
  for (const char* part :
       {"usage: seq2seq [options] [FILE]", "Train an encoder-decoder transformer on a toy task.",
        "--steps INT", "training steps (default: 1500; >= 1)", "--heads INT",
        "(default: 4; >= 1; <= 64)", "--lr NUM", "(default: 0.001; > 0)", "--scale STR",
        "default: inv_sqrt_dk", "--task CHOICE",
        "one of: copy, reverse, sort, add; default: reverse", "--full ", "run the long version\n",
        "FILE", "checkpoint to start from", "-h, --help"})
    EXPECT_NE(help.find(part), std::string::npos) << "missing \"" << part << "\" in\n" << help;
}

// A default another option decides is described in words; the value
// itself is unchanged.
TEST(ArgParser, HelpShowsADefaultTextGivenForIt) {
  Seq2Seq s;
  s.args.set_default_text("--steps", "copy 300, add 2000");
  EXPECT_NE(s.args.help().find("training steps (default: copy 300, add 2000; >= 1)"),
            std::string::npos)
      << s.args.help();
  s.args.parse(std::vector<std::string>{});
  EXPECT_EQ(s.steps, 1500);
  EXPECT_THROW(s.args.set_default_text("--stpes", "x"), std::logic_error);
}

TEST(ArgParser, HelpWinsOverOtherMistakesButNotAfterDoubleDash) {
  for (const auto& argv : std::vector<std::vector<std::string>>{
           {"--help"}, {"-h"}, {"--stpes", "x", "--help"}, {"--steps", "oops", "-h"}}) {
    Seq2Seq s;
    try {
      s.parse(argv);
      ADD_FAILURE() << "no HelpRequested";
    } catch (const HelpRequested& h) {
      EXPECT_EQ(h.text(), s.args.help());
    }
  }
  Seq2Seq s;
  s.parse({"--", "--help"});
  EXPECT_EQ(s.file, "--help");
}

// --version, like --help, wins over other mistakes and exits 0 through
// run_cli; it names gradflow's version and what runs the matrix products.
TEST(ArgParser, VersionSaysWhatRunsTheProducts) {
  Seq2Seq s;
  try {
    s.parse({"--stpes", "x", "--version"});
    ADD_FAILURE() << "no HelpRequested";
  } catch (const HelpRequested& h) {
    EXPECT_EQ(h.text(), s.args.version());
  }
  const std::string v = s.args.version();
  EXPECT_EQ(v.rfind("seq2seq (gradflow 0.1.0)\n", 0), 0u) << v;
  for (const char* field : {"openblas=", " blas_core=", " cpu=", " kernels=", " gemm="})
    EXPECT_NE(v.find(field), std::string::npos) << field << " in " << v;
  EXPECT_NE(s.args.help().find("--version"), std::string::npos);
}

TEST(ArgParser, RegistrationMistakesAreLogicErrors) {
  int x = 0;
  ArgParser args("prog", "");
  args.add("--x", &x, "x");
  EXPECT_THROW(args.add("--x", &x, "again"), std::logic_error);
  EXPECT_THROW(args.add("-y", &x, "one dash"), std::logic_error);
  EXPECT_THROW(args.add("--y=1", &x, "equals"), std::logic_error);
  EXPECT_THROW(args.add("--help", &x, "reserved"), std::logic_error);
  EXPECT_THROW(args.add("--version", &x, "reserved"), std::logic_error);
  EXPECT_THROW(args.seen("--nope"), std::logic_error);
}

// argv as run_cli receives it, with writable strings.
struct Argv {
  std::vector<std::string> words;
  std::vector<char*> ptrs;
  explicit Argv(std::vector<std::string> w) : words(std::move(w)) {
    for (auto& s : words) ptrs.push_back(s.data());
    ptrs.push_back(nullptr);
  }
  int argc() const { return static_cast<int>(words.size()); }
  char** argv() { return ptrs.data(); }
};

int training_main(int argc, char** argv) {
  int64_t steps = 10;
  ArgParser args("seq2seq", "Train.");
  args.add("--steps", &steps, "training steps").min(1);
  args.parse(argc, argv);
  return steps == 10 ? 0 : 3;
}

struct CliResult {
  int code;
  std::string out, err;
};
CliResult run(std::vector<std::string> words, const std::function<int(int, char**)>& body) {
  Argv a(std::move(words));
  std::ostringstream out, err;
  int code = run_cli(a.argc(), a.argv(), body, out, err);
  return {code, out.str(), err.str()};
}

TEST(RunCli, PassesTheBodysExitCodeThrough) {
  EXPECT_EQ(run({"seq2seq"}, training_main).code, 0);
  CliResult r = run({"seq2seq", "--steps", "11"}, training_main);
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.out + r.err, "");
}

TEST(RunCli, HelpGoesToOutAndReturnsZero) {
  CliResult r = run({"./build/seq2seq", "--help"}, training_main);
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out.rfind("usage: seq2seq [options]\n", 0), 0u) << r.out;
  EXPECT_EQ(r.err, "");
}

TEST(RunCli, EveryErrorIsOneLineWithExitCodeTwo) {
  CliResult r = run({"/opt/bin/seq2seq", "--steps", "12abc"}, training_main);
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_EQ(r.err, "seq2seq: error: --steps: expected an integer, got \"12abc\"\n");
  EXPECT_EQ(r.out, "");

  auto throws = [](auto make) {
    return [make](int, char**) -> int {
      make();
      return 0;
    };
  };
  r = run({"charlm"}, throws([] { fail("load: cannot open data.txt"); }));
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_EQ(r.err, "charlm: error: load: cannot open data.txt\n");
  // A message that names the program already is not prefixed twice.
  r = run({"/x/scaling_study"},
          throws([] { fail("scaling_study: depth failed: std::bad_alloc"); }));
  EXPECT_EQ(r.err, "scaling_study: error: depth failed: std::bad_alloc\n");
  r = run({"charlm"}, throws([] { fail("charlmx: not the program's name"); }));
  EXPECT_EQ(r.err, "charlm: error: charlmx: not the program's name\n");
  r = run({"charlm"}, throws([] { throw std::runtime_error("first\nsecond\n"); }));
  EXPECT_EQ(r.err, "charlm: error: first second\n");
  r = run({"charlm"}, throws([] { throw 42; }));
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_EQ(r.err, "charlm: error: unknown exception\n");
  r = run({}, throws([] { throw std::logic_error(""); }));
  EXPECT_EQ(r.err, "gradflow: error: unknown error\n");
}

}  // namespace
}  // namespace gradflow::cli
