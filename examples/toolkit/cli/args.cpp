#include "examples/toolkit/cli/args.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <system_error>

#include "tensor/kernels/blas_info.h"

namespace gradflow::cli {
namespace {

template <class... Parts>
[[noreturn]] void usage_error(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  throw UsageError(out.str());
}

std::string quoted(std::string_view text) { return "\"" + std::string(text) + "\""; }

// from_chars rejects a leading '+', but "+5" is an ordinary way to write a
// number; "+-5" must still fail, hence the look at the next character.
std::string_view skip_plus(std::string_view text) {
  if (text.size() > 1 && text[0] == '+' &&
      (std::isdigit(static_cast<unsigned char>(text[1])) || text[1] == '.'))
    text.remove_prefix(1);
  return text;
}

template <class Int>
void parse_int(std::string_view name, std::string_view text, Int* out) {
  std::string_view digits = skip_plus(text);
  const char* end = digits.data() + digits.size();
  Int v{};
  auto [ptr, ec] = std::from_chars(digits.data(), end, v);
  // Garbage first: "99999999999999999999abc" is not a number at all.
  if (ec == std::errc::invalid_argument || ptr != end)
    usage_error(name, ": expected an integer, got ", quoted(text));
  if (ec == std::errc::result_out_of_range)
    usage_error(name, ": integer out of range, got ", quoted(text));
  *out = v;
}

// Edit distance, for "did you mean --steps?" on a typo.
size_t distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string one_line(std::string_view message) {
  std::string out(message);
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out.empty() ? "unknown error" : out;
}

std::string program_name(int argc, char** argv) {
  if (argc < 1 || argv == nullptr || argv[0] == nullptr || argv[0][0] == '\0') return "gradflow";
  std::string_view path = argv[0];
  size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

}  // namespace

namespace detail {

OptionBase::OptionBase(std::string name, std::string help, Kind kind, std::string metavar,
                       std::string default_text)
    : metavar_(std::move(metavar)),
      name_(std::move(name)),
      help_(std::move(help)),
      kind_(kind),
      default_text_(std::move(default_text)) {}

void parse_value(std::string_view name, std::string_view text, int64_t* out) {
  parse_int(name, text, out);
}
void parse_value(std::string_view name, std::string_view text, int* out) {
  parse_int(name, text, out);
}

void parse_value(std::string_view name, std::string_view text, double* out) {
  std::string_view digits = skip_plus(text);
  const char* end = digits.data() + digits.size();
  double v = 0;
  auto [ptr, ec] = std::from_chars(digits.data(), end, v);
  if (ec == std::errc::invalid_argument || ptr != end)
    usage_error(name, ": expected a number, got ", quoted(text));
  if (ec == std::errc::result_out_of_range)
    usage_error(name, ": number out of range, got ", quoted(text));
  // NaN would pass every range check by comparing false; infinity is never
  // a meaningful learning rate or size either.
  if (!std::isfinite(v)) usage_error(name, ": expected a finite number, got ", quoted(text));
  *out = v;
}

void parse_value(std::string_view name, std::string_view text, bool* out) {
  if (text == "true" || text == "1") {
    *out = true;
  } else if (text == "false" || text == "0") {
    *out = false;
  } else {
    usage_error(name, ": expected true or false, got ", quoted(text));
  }
}

void parse_value(std::string_view, std::string_view text, std::string* out) { *out = text; }

std::string format_value(int64_t v) { return std::to_string(v); }
std::string format_value(int v) { return std::to_string(v); }
std::string format_value(double v) {
  char buf[64];
  auto [ptr, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc{} ? std::string(buf, ptr) : std::to_string(v);
}
std::string format_value(bool v) { return v ? "true" : "false"; }
std::string format_value(const std::string& v) {
  return v.empty() || v.find(' ') != std::string::npos ? quoted(v) : v;
}

std::string join_choices(const std::vector<std::string>& choices) {
  std::string out;
  for (const auto& c : choices) out += (out.empty() ? "" : ", ") + c;
  return out;
}

void check_choice(std::string_view name, const std::string& value,
                  const std::vector<std::string>& choices) {
  if (std::find(choices.begin(), choices.end(), value) == choices.end())
    usage_error(name, ": invalid choice ", quoted(value), " (choose from ", join_choices(choices),
                ")");
}

void fail_range(std::string_view name, std::string_view op, const std::string& bound,
                std::string_view got) {
  usage_error(name, ": must be ", op, " ", bound, ", got ", got);
}

void rethrow_check(std::string_view name) {
  try {
    throw;
  } catch (const std::exception& e) {
    usage_error(name, ": ", e.what());
  } catch (...) {
    usage_error(name, ": invalid value");
  }
}

}  // namespace detail

using detail::Kind;

ArgParser::ArgParser(std::string program, std::string description)
    : program_(std::move(program)), description_(std::move(description)) {}

template <class T>
Option<T>& ArgParser::emplace(std::string name, T* target, std::string help, Kind kind,
                              std::string metavar) {
  bool positional = kind == Kind::kPositional || kind == Kind::kPositionalList;
  bool well_formed =
      positional ? !name.empty() && name[0] != '-'
                 : name.size() > 2 && name.starts_with("--") && name.find('=') == std::string::npos;
  if (!well_formed || name.find(' ') != std::string::npos)
    throw std::logic_error("ArgParser: malformed option name \"" + name + "\"");
  if (name == "--help" || name == "--version" || find(name) != nullptr)
    throw std::logic_error("ArgParser: option " + name + " registered twice");
  for (const auto& o : options_)
    if (positional && o->kind() == Kind::kPositionalList)
      throw std::logic_error("ArgParser: positional " + name + " follows list " + o->name());
  if (target == nullptr) throw std::logic_error("ArgParser: null target for " + name);

  // Captured now, before parse() overwrites the target, so --help shows the
  // real defaults. A false flag or an empty positional has nothing to show.
  std::string default_text;
  if constexpr (std::is_same_v<T, bool>) {
    if (*target) default_text = "true";
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!positional || !target->empty()) default_text = detail::format_value(*target);
  } else if constexpr (!std::is_same_v<T, std::vector<std::string>>) {
    default_text = detail::format_value(*target);
  }
  auto option = std::make_unique<Option<T>>(std::move(name), target, std::move(help), kind,
                                            std::move(metavar), std::move(default_text));
  Option<T>& ref = *option;
  options_.push_back(std::move(option));
  return ref;
}

Option<int64_t>& ArgParser::add(std::string name, int64_t* target, std::string help) {
  return emplace(std::move(name), target, std::move(help), Kind::kValue, "INT");
}
Option<int>& ArgParser::add(std::string name, int* target, std::string help) {
  return emplace(std::move(name), target, std::move(help), Kind::kValue, "INT");
}
Option<double>& ArgParser::add(std::string name, double* target, std::string help) {
  return emplace(std::move(name), target, std::move(help), Kind::kValue, "NUM");
}
Option<std::string>& ArgParser::add(std::string name, std::string* target, std::string help) {
  return emplace(std::move(name), target, std::move(help), Kind::kValue, "STR");
}
Option<std::string>& ArgParser::add_choice(std::string name, std::string* target,
                                           std::vector<std::string> choices, std::string help) {
  if (choices.empty()) throw std::logic_error("ArgParser: no choices for " + name);
  return add(std::move(name), target, std::move(help)).choices(std::move(choices));
}
Option<bool>& ArgParser::add_flag(std::string name, bool* target, std::string help) {
  return emplace(std::move(name), target, std::move(help), Kind::kFlag, "");
}
Option<std::string>& ArgParser::add_positional(std::string name, std::string* target,
                                               std::string help) {
  std::string metavar = name;
  return emplace(std::move(name), target, std::move(help), Kind::kPositional, std::move(metavar));
}
Option<std::vector<std::string>>& ArgParser::add_positional(std::string name,
                                                            std::vector<std::string>* target,
                                                            std::string help) {
  std::string metavar = name;
  return emplace(std::move(name), target, std::move(help), Kind::kPositionalList,
                 std::move(metavar));
}

detail::OptionBase* ArgParser::find(std::string_view name) const {
  for (const auto& o : options_)
    if (o->name() == name) return o.get();
  return nullptr;
}

bool ArgParser::seen(std::string_view name) const {
  const detail::OptionBase* o = find(name);
  if (o == nullptr)
    throw std::logic_error("ArgParser: seen() of unknown option " + std::string(name));
  return o->seen();
}

void ArgParser::set_default_text(std::string_view name, std::string text) {
  detail::OptionBase* o = find(name);
  if (o == nullptr)
    throw std::logic_error("ArgParser: set_default_text() of unknown option " + std::string(name));
  o->set_default_text(std::move(text));
}

void ArgParser::parse(int argc, const char* const* argv) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  parse(args);
}

void ArgParser::parse(const std::vector<std::string>& args) {
  // Help first, so `prog --stpes 5 --help` still shows the help.
  for (const auto& a : args) {
    if (a == "--") break;
    if (a == "--help" || a == "-h") throw HelpRequested(help());
    if (a == "--version") throw HelpRequested(version());
  }
  std::vector<detail::OptionBase*> positionals;
  for (const auto& o : options_)
    if (o->kind() == Kind::kPositional || o->kind() == Kind::kPositionalList)
      positionals.push_back(o.get());

  size_t next_positional = 0;
  bool options_done = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (!options_done && arg == "--") {
      options_done = true;
    } else if (options_done || arg == "-" || !arg.starts_with("-")) {
      if (next_positional == positionals.size()) usage_error("unexpected argument ", quoted(arg));
      detail::OptionBase* p = positionals[next_positional];
      p->set(arg);
      p->mark_seen();
      if (p->kind() == Kind::kPositional) ++next_positional;
    } else {
      size_t eq = arg.find('=');
      std::string_view name = std::string_view(arg).substr(0, eq);
      detail::OptionBase* o = arg.starts_with("--") ? find(name) : nullptr;
      if (o == nullptr || o->kind() == Kind::kPositional || o->kind() == Kind::kPositionalList) {
        std::string guess;
        size_t best = 3;  // farther than two edits is not a typo
        std::vector<std::string> names = {"--help", "--version"};
        for (const auto& c : options_)
          if (c->name().starts_with("--")) names.push_back(c->name());
        for (const auto& n : names) {
          size_t d = distance(name, n);
          if (d < best) {
            best = d;
            guess = n;
          }
        }
        if (!guess.empty()) usage_error("unknown option ", name, " (did you mean ", guess, "?)");
        usage_error("unknown option ", name, " (see --help)");
      }
      if (eq != std::string::npos) {
        o->set(std::string_view(arg).substr(eq + 1));
      } else if (o->kind() == Kind::kFlag) {
        o->set("true");
      } else if (i + 1 < args.size() && !args[i + 1].starts_with("--")) {
        // A following "--x" is taken as a forgotten value rather than
        // swallowed; "-1" still reads as a (negative) value.
        o->set(args[++i]);
      } else {
        usage_error(name, ": missing value");
      }
      o->mark_seen();
    }
  }
  for (const auto& o : options_) {
    if (!o->is_required() || o->seen()) continue;
    if (o->kind() == Kind::kPositional || o->kind() == Kind::kPositionalList)
      usage_error("missing argument ", o->name());
    usage_error("missing required option ", o->name());
  }
}

std::string ArgParser::usage_line() const {
  std::string line = "usage: " + program_ + " [options]";
  for (const auto& o : options_) {
    std::string m = o->metavar() + (o->kind() == Kind::kPositionalList ? "..." : "");
    if (o->kind() == Kind::kPositional || o->kind() == Kind::kPositionalList)
      line += " " + (o->is_required() ? m : "[" + m + "]");
  }
  return line;
}

std::string ArgParser::version() const {
  std::string products;
  try {
    products =
        blas_summary() + "\n" + (generic_core_note().empty() ? "" : generic_core_note() + "\n");
  } catch (const std::exception& e) {  // a bad GRADFLOW_GEMM: said, as the version still is
    products = std::string("matrix products: ") + e.what() + "\n";
  }
  return program_ + " (gradflow " GRADFLOW_VERSION ")\n" + products;
}

std::string ArgParser::help() const {
  struct Row {
    std::string left, right;
  };
  std::vector<Row> arguments, options;
  for (const auto& o : options_) {
    bool positional = o->kind() == Kind::kPositional || o->kind() == Kind::kPositionalList;
    std::string left =
        positional || o->metavar().empty() ? o->name() : o->name() + " " + o->metavar();
    std::string notes = o->notes();
    std::string right = o->help() + (notes.empty() ? "" : " (" + notes + ")");
    (positional ? arguments : options).push_back({left, right});
  }
  options.push_back({"-h, --help", "show this help and exit"});
  options.push_back({"--version", "show gradflow's version and what runs the matrix products"});

  // Align the help column, but let an unusually long name push only its own
  // help onto the next line instead of pushing every row to the right.
  constexpr size_t kMaxLeft = 26;
  size_t width = 0;
  for (const auto* rows : {&arguments, &options})
    for (const auto& r : *rows)
      if (r.left.size() <= kMaxLeft) width = std::max(width, r.left.size());
  std::string out = usage_line() + "\n\n";
  if (!description_.empty()) out += description_ + "\n\n";
  auto section = [&](const char* title, const std::vector<Row>& rows) {
    if (rows.empty()) return;
    out += std::string(title) + ":\n";
    for (const auto& r : rows) {
      out += "  " + r.left;
      if (r.left.size() > width)
        out += "\n  " + std::string(width, ' ');
      else
        out += std::string(width - r.left.size(), ' ');
      out += "  " + r.right + "\n";
    }
  };
  section("arguments", arguments);
  if (!arguments.empty()) out += "\n";
  section("options", options);
  return out;
}

int run_cli(int argc, char** argv, const std::function<int(int, char**)>& body) {
  reopen_closed_standard_streams();
  return run_cli(argc, argv, body, std::cout, std::cerr);
}

int run_cli(int argc, char** argv, const std::function<int(int, char**)>& body, std::ostream& out,
            std::ostream& err) {
  auto report = [&](std::string_view message) {
    out.flush();  // keep whatever the program printed before the error
    // A message that already names the program ("scaling_study: depth
    // failed: ...", thrown deep inside) is not prefixed with it twice.
    const std::string name = program_name(argc, argv), own = name + ": ";
    if (message.substr(0, own.size()) == own) message.remove_prefix(own.size());
    err << name << ": error: " << one_line(message) << '\n';
    err.flush();
    return kExitUsage;
  };
  // Like coreutils: output that could not be written (a full disk,
  // /dev/full, a closed pipe's reader) is exit 1 and "write error", never a
  // silent 0. A program that already failed keeps its own code.
  auto checked = [&](int code) {
    errno = 0;
    out.flush();
    bool written = out.good();
    // printf's output sits in C's stdout, whose buffer only now meets the device.
    if (&out == &std::cout) written = std::fflush(stdout) == 0 && !std::ferror(stdout) && written;
    if (written || code != 0) return code;
    const int error = errno;
    err << program_name(argc, argv) << ": error: write error on standard output"
        << (error != 0 ? ": " + std::system_category().message(error) : std::string()) << '\n';
    err.flush();
    return kExitWriteError;
  };
  try {
    return checked(body(argc, argv));
  } catch (const HelpRequested& h) {
    out << h.text();
    return checked(0);
  } catch (const std::exception& e) {
    return report(e.what());
  } catch (...) {
    return report("unknown exception");
  }
}

}  // namespace gradflow::cli
