// Command-line parsing for the example programs, so each behaves like a
// well-mannered Unix tool: `--help`, defaults that run with no arguments,
// `--name value` and `--name=value`, strict numbers, and a one-line error
// with exit code 2 for anything malformed.
//
//   int run(int argc, char** argv) {
//     cli::ArgParser args("seq2seq", "Train an encoder-decoder transformer on a toy task.");
//     int64_t steps = 1500;
//     args.add("--steps", &steps, "training steps").min(1);
//     double lr = 1e-3;
//     args.add("--lr", &lr, "peak learning rate").above(0);
//     std::string task = "reverse";
//     args.add_choice("--task", &task, {"copy", "reverse", "sort", "add"}, "toy task");
//     bool full = false;
//     args.add_flag("--full", &full, "run the long version");
//     args.parse(argc, argv);
//     ...
//   }
//   int main(int argc, char** argv) { return gradflow::cli::run_cli(argc, argv, run); }
//
// A target keeps its value unless its option appears, so the variable's
// initial value is the default, and that is what --help shows.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "tensor/error.h"

namespace gradflow::cli {

// A bad command line or bad input file: reported as one line, exit code 2.
class UsageError : public Error {
 public:
  using Error::Error;
};

// Thrown by ArgParser::parse on --help or -h; run_cli prints text() to
// stdout and returns 0. Deliberately not a std::exception, so a program's own
// `catch (const std::exception&)` cannot mistake it for a failure.
class HelpRequested {
 public:
  explicit HelpRequested(std::string text) : text_(std::move(text)) {}
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

// A path or value as messages show it, in double quotes: "runs/my run".
std::string quote(std::string_view text);
// A path or value as a shell reads it back, for text a user copies into a
// command: as it is when it holds only letters, digits and _./:=,+@%-,
// else in single quotes ('\'' for a quote): runs/x, 'runs/my run'.
std::string shell_word(std::string_view text);

// Throws UsageError unless `path` names a regular file (after symlinks):
//   "x.txt" does not exist | is a directory | is a FIFO, not a regular file
// A FIFO with no writer would block the open forever, a device (/dev/zero)
// never ends. Checked with stat, which neither opens nor blocks.
void require_regular_file(const std::string& path);

// Throws UsageError unless files can be made in `folder` or, while it does
// not exist, in the nearest folder above it that does (where it would be
// made; nothing is made): one that is a file, or that the system will not
// write (permissions, a read-only filesystem). Tried by making and removing a
// file, as access() says yes to root on a read-only mount.
void require_writable_folder(const std::string& folder);

inline constexpr int kExitUsage = 2;
// Standard output could not be written (coreutils' "write error").
inline constexpr int kExitWriteError = 1;

namespace detail {

enum class Kind { kValue, kFlag, kPositional, kPositionalList };

// The untyped part of an option: what the parser and the help text need.
class OptionBase {
 public:
  OptionBase(std::string name, std::string help, Kind kind, std::string metavar,
             std::string default_text);
  virtual ~OptionBase() = default;
  OptionBase(const OptionBase&) = delete;
  OptionBase& operator=(const OptionBase&) = delete;

  // Parses, validates and stores one value; throws UsageError naming the option.
  virtual void set(std::string_view text) = 0;
  // "default: 1500; >= 1", or "" when there is nothing to add to the help.
  virtual std::string notes() const = 0;

  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  Kind kind() const { return kind_; }
  const std::string& metavar() const { return metavar_; }
  const std::string& default_text() const { return default_text_; }
  void set_default_text(std::string text) { default_text_ = std::move(text); }
  bool is_required() const { return required_; }
  bool seen() const { return seen_; }
  void mark_seen() { seen_ = true; }

 protected:
  std::string metavar_;
  bool required_ = false;

 private:
  std::string name_, help_;
  Kind kind_;
  std::string default_text_;
  bool seen_ = false;
};

// Strict parsers: the whole text must be consumed; they throw UsageError
// ("--steps: expected an integer, got \"12abc\"").
void parse_value(std::string_view name, std::string_view text, int64_t* out);
void parse_value(std::string_view name, std::string_view text, int* out);
void parse_value(std::string_view name, std::string_view text, double* out);
void parse_value(std::string_view name, std::string_view text, bool* out);
void parse_value(std::string_view name, std::string_view text, std::string* out);

std::string format_value(int64_t v);
std::string format_value(int v);
std::string format_value(double v);  // shortest text that reads back exactly
std::string format_value(bool v);
std::string format_value(const std::string& v);

void check_choice(std::string_view name, const std::string& value,
                  const std::vector<std::string>& choices);
[[noreturn]] void fail_range(std::string_view name, std::string_view op, const std::string& bound,
                             std::string_view got);
// Re-throws the current exception of a user check as a UsageError naming the option.
[[noreturn]] void rethrow_check(std::string_view name);
std::string join_choices(const std::vector<std::string>& choices);

// A positional list collects strings; every other target holds one value.
template <class T>
struct Element {
  using type = T;
};
template <>
struct Element<std::vector<std::string>> {
  using type = std::string;
};

}  // namespace detail

// One registered option; the builder methods refine it after registration:
//   args.add("--lr", &lr, "peak learning rate").above(0).max(1);
template <class T>
class Option final : public detail::OptionBase {
 public:
  using Value = typename detail::Element<T>::type;
  static constexpr bool kNumeric = std::is_arithmetic_v<Value> && !std::is_same_v<Value, bool>;

  Option(std::string name, T* target, std::string help, detail::Kind kind, std::string metavar,
         std::string default_text)
      : OptionBase(std::move(name), std::move(help), kind, std::move(metavar),
                   std::move(default_text)),
        target_(target) {}

  // Inclusive bounds; above() is the strict lower bound (`--lr` > 0).
  Option& min(Value lo) requires kNumeric {
    lo_ = lo;
    lo_strict_ = false;
    return *this;
  }
  Option& above(Value lo) requires kNumeric {
    lo_ = lo;
    lo_strict_ = true;
    return *this;
  }
  Option& max(Value hi) requires kNumeric {
    hi_ = hi;
    return *this;
  }
  // Runs after parsing and range checks. Throw UsageError (or any
  // std::exception) with just the problem; the option name is prefixed.
  Option& check(std::function<void(const Value&)> fn) {
    check_ = std::move(fn);
    return *this;
  }
  // Maps the value once it has passed every check, before it is stored: a
  // path made absolute, say, so the value kept is what the run used.
  Option& normalize(std::function<Value(const Value&)> fn) {
    normalize_ = std::move(fn);
    return *this;
  }
  Option& required() {
    required_ = true;
    return *this;
  }
  Option& metavar(std::string m) {
    metavar_ = std::move(m);
    return *this;
  }
  Option& choices(std::vector<std::string> c) requires std::is_same_v<Value, std::string> {
    choices_ = std::move(c);
    metavar_ = "CHOICE";
    return *this;
  }

  void set(std::string_view text) override {
    Value v{};
    detail::parse_value(name(), text, &v);
    if constexpr (kNumeric) {
      if (lo_ && (lo_strict_ ? !(v > *lo_) : !(v >= *lo_)))
        detail::fail_range(name(), lo_strict_ ? ">" : ">=", detail::format_value(*lo_), text);
      if (hi_ && !(v <= *hi_)) detail::fail_range(name(), "<=", detail::format_value(*hi_), text);
    }
    if constexpr (std::is_same_v<Value, std::string>) {
      if (!choices_.empty()) detail::check_choice(name(), v, choices_);
    }
    if (check_) {
      try {
        check_(v);
      } catch (...) {
        detail::rethrow_check(name());
      }
    }
    if (normalize_) v = normalize_(v);
    if constexpr (std::is_same_v<T, Value>) {
      *target_ = std::move(v);
    } else {
      target_->push_back(std::move(v));
    }
  }

  std::string notes() const override {
    std::string out;
    auto add = [&out](const std::string& s) { out += (out.empty() ? "" : "; ") + s; };
    if (!choices_.empty()) add("one of: " + detail::join_choices(choices_));
    if (!default_text().empty()) add("default: " + default_text());
    if (lo_) add((lo_strict_ ? "> " : ">= ") + detail::format_value(*lo_));
    if (hi_) add("<= " + detail::format_value(*hi_));
    if (is_required()) add("required");
    return out;
  }

 private:
  T* target_;
  std::optional<Value> lo_, hi_;
  bool lo_strict_ = false;
  std::vector<std::string> choices_;
  std::function<void(const Value&)> check_;
  std::function<Value(const Value&)> normalize_;
};

class ArgParser {
 public:
  ArgParser(std::string program, std::string description);
  ArgParser(const ArgParser&) = delete;
  ArgParser& operator=(const ArgParser&) = delete;

  // Names start with "--". Registration mistakes (duplicate or malformed
  // names) are programming errors and throw std::logic_error.
  Option<int64_t>& add(std::string name, int64_t* target, std::string help);
  Option<int>& add(std::string name, int* target, std::string help);
  Option<double>& add(std::string name, double* target, std::string help);
  Option<std::string>& add(std::string name, std::string* target, std::string help);
  Option<std::string>& add_choice(std::string name, std::string* target,
                                  std::vector<std::string> choices, std::string help);
  // `--full` sets true; `--full=false` (only with '=') sets false.
  Option<bool>& add_flag(std::string name, bool* target, std::string help);
  // Positionals fill in registration order and are optional unless
  // .required(); a list takes all the rest, so it must come last.
  Option<std::string>& add_positional(std::string name, std::string* target, std::string help);
  Option<std::vector<std::string>>& add_positional(std::string name,
                                                   std::vector<std::string>* target,
                                                   std::string help);

  // Skips argv[0]. Throws HelpRequested for --help/-h (or --version, with
  // version()) anywhere before "--" (even beside other mistakes), UsageError
  // for anything malformed.
  void parse(int argc, const char* const* argv);
  // The arguments without the program name (handy in tests).
  void parse(const std::vector<std::string>& args);

  std::string help() const;
  // What --version prints: the program, gradflow's version, and what runs the
  // matrix products (tensor/kernels/blas_info.h), so a figure says what made it.
  std::string version() const;
  // Whether the option appeared on the command line, e.g. to let --full
  // change --steps only when --steps was not given.
  bool seen(std::string_view name) const;
  // What --help shows as the option's default, for one that another option
  // sets ("200 for copy, ..., 3000 for addition": seq2seq's --steps, by --task).
  // Throws std::logic_error for an unknown name.
  void set_default_text(std::string_view name, std::string text);

 private:
  template <class T>
  Option<T>& emplace(std::string name, T* target, std::string help, detail::Kind kind,
                     std::string metavar);
  detail::OptionBase* find(std::string_view name) const;
  std::string usage_line() const;

  std::string program_, description_;
  std::vector<std::unique_ptr<detail::OptionBase>> options_;  // in registration order
};

// Calls body(argc, argv) and returns its exit code, except: HelpRequested
// prints the help to `out` and returns 0; any exception prints exactly one
// line "PROGRAM: error: MESSAGE" to `err` and returns kExitUsage. PROGRAM is
// the file name of argv[0]. A body that returns 0 but whose output could not
// be written (`out` failed; for the first form also C's stdout, as on
// /dev/full) gets "PROGRAM: error: write error on standard output" and
// kExitWriteError. The first form also reopens on /dev/null any of the
// descriptors 0, 1, 2 that were closed at start (`prog >&-`), before
// anything can open a file into their place.
void reopen_closed_standard_streams();
int run_cli(int argc, char** argv, const std::function<int(int, char**)>& body);
int run_cli(int argc, char** argv, const std::function<int(int, char**)>& body, std::ostream& out,
            std::ostream& err);

}  // namespace gradflow::cli
